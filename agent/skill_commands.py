"""`/<skill-id> [args]` in the REPL: registered on the shared router, one command per discovered skill.

Without args the skill is loaded into the conversation (a turn made of the injected skill alone);
with args a turn runs with the skill injected before the user's text. Built-in names always win.
"""

from __future__ import annotations

from agent.commands import CommandContext, CommandResult, CommandRouter
from services.messages import user_message
from services.skills import RESERVED_COMMANDS, Skill, format_skill_injection


def skill_turn(skill: Skill, args: str | None) -> CommandResult:
    # The arguments also ride in the injected skill (`Arguments: ...`), as react-agent-mini and Claude Code do:
    # the skill's instructions can then refer to them.
    injected = user_message(format_skill_injection(skill, args), meta={"skill": skill.name})
    text = args.strip() if args and args.strip() else ""
    return CommandResult(run_turn=(text, [injected]))


def register_skill_commands(router: CommandRouter, skills: list[Skill]) -> list[str]:
    """Register each skill whose id does not collide with a command; returns the names registered."""
    added = []
    for skill in skills:
        if skill.name in RESERVED_COMMANDS or router.get(skill.name) is not None:
            continue

        def handler(ctx: CommandContext, args: str, _skill: Skill = skill) -> CommandResult:
            ctx.say(f"Loading skill {_skill.name}…", "dim")
            return skill_turn(_skill, args)

        help_text = f"skill: {skill.description or skill.display_name} [args]"
        router.register(skill.name, handler, help_text)
        added.append(skill.name)
    return added
