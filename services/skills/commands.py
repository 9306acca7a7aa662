"""Custom slash commands: Claude Code's `.claude/commands/**/*.md` files.

A file's path under its root names the command (`frontend/lint.md` -> `/frontend:lint`); the project's
command wins over the user's of the same name. The front matter gives `description`, `argument-hint`,
`model` and `allowed-tools`; the body is the prompt, with `$ARGUMENTS`, `$ARGUMENTS[N]` and `$N`
(0-based, as Claude Code 2.1.332 numbers them) replaced. Without any placeholder the arguments are appended
as `ARGUMENTS: ...`. Lines' `` !`cmd` `` are run by the front end (through the permission gate).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from services.skills.discover import parse_frontmatter
from services.skills.safe_read import ScopedReader

ARG_RE = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)(?!\w)")
BANG_RE = re.compile(r"(?:^|(?<=\s))!`([^`]+)`", re.M)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class CustomCommand:
    name: str  # `frontend:lint` for `frontend/lint.md`
    description: str
    argument_hint: str
    model: str
    allowed_tools: tuple[str, ...]
    body: str
    path: Path
    source: str  # "project" | "user"


def split_tools(value: str) -> tuple[str, ...]:
    """`Bash(git add:*), Read` or `[Bash(x), Read]` -> the rules; commas inside parentheses kept."""
    value = value.strip().strip("[]")
    out, depth, cur = [], 0, ""
    for ch in value:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return tuple(t.strip().strip("'\"") for t in out if t.strip().strip("'\""))


def command_name(root: Path, path: Path) -> str | None:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if not parts or not all(_NAME_RE.match(p) for p in parts):
        return None
    return ":".join(parts)


def load_command(root: Path, path: Path, source: str, reader: ScopedReader) -> CustomCommand | None:
    name = command_name(root, path)
    text = reader.read(path) if name else None
    if name is None or text is None:
        return None
    fields, body = parse_frontmatter(text)
    first_line = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    description = " ".join(fields.get("description", "").split()) or first_line[:100]
    return CustomCommand(name, description, fields.get("argument-hint", "").strip(), fields.get("model", "").strip(),
                         split_tools(fields.get("allowed-tools", "")), body, path, source)


def discover_commands(roots: list[tuple[Path, str]], reader: ScopedReader) -> list[CustomCommand]:
    """Every command under `roots` ((folder, source), first wins on a name), sorted by name."""
    found: dict[str, CustomCommand] = {}
    for root, source in roots:
        for path in reader.walk_markdown(root):
            cmd = load_command(root, path, source, reader)
            if cmd is not None and cmd.name not in found:
                found[cmd.name] = cmd
    return sorted(found.values(), key=lambda c: c.name)


def split_args(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:  # an unbalanced quote: words as typed
        return args.split()


def substitute_arguments(body: str, args: str) -> str:
    """`$ARGUMENTS` -> args, `$ARGUMENTS[N]` / `$N` -> the N-th word (0-based; a missing one stays as
    written); with no placeholder at all, non-empty args are appended as `ARGUMENTS: ...`."""
    words = split_args(args)
    used = False

    def repl(m: re.Match[str]) -> str:
        nonlocal used
        used = True
        index = m.group(1) or m.group(2)
        if index is None:
            return args
        i = int(index)
        return words[i] if i < len(words) else m.group(0)

    out = ARG_RE.sub(repl, body)
    if not used and args.strip():
        out += f"\n\nARGUMENTS: {args}"
    return out


def bang_commands(body: str) -> list[tuple[str, str]]:
    """The `` !`cmd` `` of a body: (the whole pattern, the command)."""
    return [(m.group(0), m.group(1)) for m in BANG_RE.finditer(body)]


def command_header(name: str, args: str) -> str:
    """The first text block Claude Code sends for a custom command (recorded from 2.1.332)."""
    return (f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
            f"<command-args>{args}</command-args>\n")


def parse_command_line(line: str, commands: list[CustomCommand]) -> tuple[CustomCommand, str] | None:
    """`/name args` -> (command, args) when `name` is a custom command."""
    stripped = line.strip()
    if not stripped.startswith("/"):
        return None
    name, _, args = stripped[1:].partition(" ")
    if "\n" in name:
        name, _, rest = name.partition("\n")
        args = rest + (" " + args if args else "")
    for cmd in commands:
        if cmd.name == name:
            return cmd, args.strip()
    return None
