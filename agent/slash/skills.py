"""`/<skill-id> [args]` and custom commands (`/<name> [args]`) in the REPL, on the shared router.

Without args the skill is loaded into the conversation (a turn made of the injected skill alone);
with args a turn runs with the skill injected before the user's text. Built-in names always win.
"""

from __future__ import annotations

from typing import Any

from agent.slash.custom import CommandError, expand_command
from agent.slash.router import CommandContext, CommandResult, CommandRouter
from services.messages import user_message
from services.skills import RESERVED_COMMANDS, Skill, format_skill_injection
from services.skills.commands import CustomCommand


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


def command_help(cmd: CustomCommand) -> str:
    """The line /help and completion show: description, argument hint and where the file is."""
    text = cmd.description or cmd.name
    if cmd.argument_hint:
        text += f" {cmd.argument_hint}"
    return f"{text} ({cmd.source})"


def register_custom_commands(router: CommandRouter, engine: Any, trusted: bool) -> list[str]:
    """Each custom command whose name no built-in holds, on the shared router; returns the names."""
    added = []
    for cmd in engine.custom_commands:
        if router.get(cmd.name) is not None:
            continue

        async def handler(ctx: CommandContext, args: str, _cmd: CustomCommand = cmd) -> CommandResult | None:
            try:
                exp = await expand_command(ctx.engine, _cmd, args, trusted)
            except CommandError as exc:
                ctx.say(str(exc), "red")
                return None
            header, body = exp.blocks
            return CommandResult(run_turn=(header["text"], exp.inject), blocks=[body], model=_cmd.model)

        router.register(cmd.name, handler, command_help(cmd))
        added.append(cmd.name)
    return added
