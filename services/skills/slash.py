"""How a skill enters the conversation: the injected text, the `/<skill-id>` parser and the catalog."""

from __future__ import annotations

from services.skills.discover import Skill

# Built-in commands a skill can never shadow.
RESERVED_COMMANDS = frozenset(
    {
        "help",
        "clear",
        "compact",
        "exit",
        "quit",
        "status",
        "memory",
        "init",
        "context",
        "cost",
        "model",
        "permissions",
        "resume",
        "mcp",
        "new",
        "reset",
        "usage",
    }
)

BASE_DIR_PREFIX = "Base directory for this skill: "


def format_skill_injection(skill: Skill, args: str | None = None) -> str:
    """The user-message text that loads a skill: where it lives, its body, and the arguments if any."""
    text = f"{BASE_DIR_PREFIX}{skill.directory}\n\n{skill.body}"
    if args and args.strip():
        text += f"\n\nArguments: {args.strip()}"
    return text


def parse_skill_slash(line: str, skills: list[Skill]) -> tuple[Skill, str | None] | None:
    """`/<skill-id> [args]` -> (skill, args or None); None for built-ins, MCP prompts and the rest."""
    stripped = line.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    name, _, args = stripped[1:].partition(" ")
    if "\n" in name:
        name, _, rest = name.partition("\n")
        args = rest + (" " + args if args else "")
    if not name or ":" in name or name in RESERVED_COMMANDS:
        return None
    for skill in skills:
        if skill.name == name:
            args = args.strip()
            return skill, (args or None)
    return None


def skill_catalog(skills: list[Skill]) -> str:
    """The `## Available Skills` section of the system prompt ("" without skills)."""
    if not skills:
        return ""
    lines = [
        "## Available Skills",
        "",
        "Skills are instructions for specific tasks. When a task matches one, load it with the Skill tool "
        '(`Skill({"skill": "<id>"})`) before you start, then follow what it says. The user can also load '
        "one with `/<id>`.",
        "",
    ]
    for s in skills:
        line = f"- {s.name}"
        if s.display_name != s.name:
            line += f" ({s.display_name})"
        if s.description:
            line += f" — {s.description}"
        lines.append(line)
    return "\n".join(lines)
