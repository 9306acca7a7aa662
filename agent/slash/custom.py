"""Custom slash commands (`.claude/commands/**/*.md`) in every front end: discovery roots, the expansion
of one command into the user's message (arguments, `` !`cmd` `` output, `@file` contents) and the REPL's
registration on the shared router.

The message has Claude Code 2.1.332's shape (recorded): a `<command-message>` header block, then the
expanded body; each `@file` the body names is attached before it as a Read call and its result.
`` !`cmd` `` runs only in a trusted folder, through the permission gate with the command's
`allowed-tools` added to the allow rules and nobody to ask: anything the rules do not allow fails the
command (no model call), with Claude Code's words.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.hooks import DEFAULT_DENY_REASON
from services.messages import Message, text_block, user_message
from services.skills.commands import (
    CustomCommand,
    bang_commands,
    command_header,
    discover_commands,
    substitute_arguments,
)
from services.skills.safe_read import ScopedReader
from tools.base import SessionState, ToolContext

MENTION_RE = re.compile(r"(?:^|(?<=\s))@([^\s`'\"]+)", re.M)
MAX_ATTACHED_LINES = 2000


class CommandError(Exception):
    """A command that cannot run (a refused or failing `` !`cmd` ``); the text is the whole message."""


@dataclass
class Expansion:
    command: CustomCommand
    blocks: list[Any]  # the user's message: header, expanded body
    inject: list[Message] = field(default_factory=list)  # attached files, before it


def claude_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def command_roots(cwd: Path, home: Path) -> list[tuple[Path, str]]:
    """Project over user: `.claude/commands`, `.agents/commands`, `~/.claude/commands`, `<home>/commands`."""
    return [(cwd / ".claude" / "commands", "project"), (cwd / ".agents" / "commands", "project"),
            (claude_dir() / "commands", "user"), (home / "commands", "user")]


def load_custom_commands(cwd: Path, home: Path) -> tuple[list[CustomCommand], list[str]]:
    """The commands and the notices of files skipped (links out of their folder)."""
    reader = ScopedReader([cwd, claude_dir(), home])
    return discover_commands(command_roots(cwd, home), reader), reader.notices


async def _run_bang(engine: Any, cmd: CustomCommand, pattern: str, command: str) -> str:
    from tools.bash import BashTool

    bash = next((t for t in engine.tools if t.name == "Bash"), None) or BashTool()
    gate = dataclasses.replace(engine.gate, ask=None, headless=False, rules_file=None, denials=[],
                               allowed_tools=[*engine.gate.allowed_tools, *cmd.allowed_tools],
                               session_rules=list(engine.gate.session_rules))
    ctx = ToolContext(session=SessionState(cwd=Path(engine.config.cwd)), project_root=Path(engine.config.cwd),
                      session_id=engine.session_id, session_dir=engine.session_dir, tool_use_id="command-shell")
    blocked, hook = await _shell_hooks(engine, cmd, command)
    if blocked is not None:
        return blocked
    verdict = await gate.authorize(bash, {"command": command}, ctx, hook)
    if not verdict.allowed:
        raise CommandError(f'Shell command permission check failed for pattern "{pattern}": {verdict.message}')
    out = await bash.call(verdict.updated_input or {"command": command}, ctx)
    text = out.content if isinstance(out.content, str) else json.dumps(out.content)
    if out.is_error:
        raise CommandError(f'Shell command failed for pattern "{pattern}": {text.strip()}')
    return text.rstrip("\n")


async def _shell_hooks(engine: Any, cmd: CustomCommand, command: str) -> tuple[str | None, tuple[str, str] | None]:
    """Claude Code's PreSkillShellCommand: (the text that stands for a line a hook blocked, or None; a hook's
    "allow" for the gate). A blocked line is not run and the command goes on, as in 2.1.332; a rewrite
    or a question (nobody can answer one here) blocks it too."""
    decision = await engine.hooks.pre_skill_shell_command({
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": f"command-shell-{uuid.uuid4()}",
        "command_name": cmd.name, "command_source": SOURCES.get(cmd.source, cmd.source), "invoked_by": "user"})
    if decision is None:
        return None, None
    why = "" if decision.reason == DEFAULT_DENY_REASON else decision.reason  # Claude Code then says no reason
    if decision.action != "deny" and decision.updated_input is not None:
        why = "the hook changed the command, which isn't supported here"
    elif decision.action != "deny" and decision.permission != "ask":
        return None, ("allow", why) if decision.permission == "allow" else None
    return f"[not run: blocked by hook{': ' + why if why else ''}]", None


async def run_shell_lines(engine: Any, cmd: CustomCommand, body: str, trusted: bool) -> str:
    for pattern, command in bang_commands(body):
        if not trusted:
            raise CommandError(f"/{cmd.name} runs shell commands ({pattern}); they run only in a trusted folder. "
                               "Trust this folder first (`agent trust`).")
        output = await _run_bang(engine, cmd, pattern, command)
        body = body.replace(pattern, output, 1)
    return body


def _numbered(text: str) -> str:
    lines = text.split("\n")[:MAX_ATTACHED_LINES]
    return "\n".join(f"{i}\t{line}" for i, line in enumerate(lines, 1))


def attach_files(body: str, cwd: Path, read_dirs: list[Path]) -> list[Message]:
    """Claude Code's attachment of each `@file` the body names (inside the read scope), as a Read call."""
    reader = ScopedReader([cwd, *read_dirs])
    out: list[Message] = []
    for ref in dict.fromkeys(MENTION_RE.findall(body)):
        path = (cwd / Path(ref).expanduser()).absolute()
        if not path.is_file():
            continue  # not a file here (an MCP resource, an e-mail address): left as written
        text = reader.read(path)
        if text is None:
            continue
        call = json.dumps({"file_path": str(path)}, separators=(",", ":"))
        out.append(user_message(f"<system-reminder>\nCalled the Read tool with the following input: {call}\n"
                                "</system-reminder>", meta={"command_file": str(path)}))
        out.append(user_message(f"<system-reminder>\nResult of calling the Read tool:\n{_numbered(text)}\n"
                                "</system-reminder>", meta={"command_file": str(path)}))
    return out


SOURCES = {"project": "projectSettings", "user": "userSettings"}  # Claude Code's names for where a command lives


async def expand_command(engine: Any, cmd: CustomCommand, args: str, trusted: bool) -> Expansion:
    body = substitute_arguments(cmd.body, args)
    body = await run_shell_lines(engine, cmd, body, trusted)
    read_dirs = [Path(d) for d in getattr(engine.gate, "additional_dirs", [])]
    inject = attach_files(body, Path(engine.config.cwd), read_dirs)
    # For the prompt's hooks (Claude Code's UserPromptExpansion input, and the typed text UserPromptSubmit sees).
    engine.pending_expansion = {"expansion_type": "slash_command", "command_name": cmd.name, "command_args": args,
                                "command_source": SOURCES.get(cmd.source, cmd.source),
                                "prompt": f"/{cmd.name} {args}".rstrip(), "for_text": command_header(cmd.name, args)}
    return Expansion(cmd, [text_block(command_header(cmd.name, args)), text_block(body)], inject)


@contextmanager
def command_model(engine: Any, model: str) -> Iterator[None]:
    """The command's `model:` for its turn only."""
    if not model:
        yield
        return
    from services.config import agent_environ
    from services.models import resolve_model

    before = engine.config.model
    engine.config.model = resolve_model(model, agent_environ())
    try:
        yield
    finally:
        engine.config.model = before


async def custom_command_input(engine: Any, inv: Any, text: str, inject: list[Message] | None
                               ) -> tuple[str, list[Message] | None, list[dict[str, Any]] | None, str]:
    """A one-shot or SDK prompt: `/name args` of a custom command becomes (header text, attached files,
    [body block], model); any other prompt is returned as it is."""
    from services.skills.commands import parse_command_line

    found = parse_command_line(text, engine.custom_commands) if text.startswith("/") else None
    if found is None:
        return text, inject, None, ""
    cmd, args = found
    expansion = await expand_command(engine, cmd, args, trusted=bool(inv.app.trusted))
    header, body = expansion.blocks
    return header["text"], [*(inject or []), *expansion.inject], [body], cmd.model

