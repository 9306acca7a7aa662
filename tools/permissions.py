"""The permission gate: decides whether a tool call runs, asks the front end, or is denied.

Modes follow Claude Code: `default` (read-only tools run; others ask in the REPL and are denied in
one-shot runs unless allowed), `acceptEdits` (Write/Edit inside the working directory run; Bash still
asks), `plan` (read-only only), `bypassPermissions` (everything runs). `ALLOW_WRITE=1` allows
non-read-only tools in one-shot runs (react-agent-mini's switch).

Rules (`--allowedTools`, `--disallowedTools`, settings `permissions.allow/ask/deny`):
  `Read`                 the whole tool
  `Bash(git status:*)`   a command prefix (every part of a compound command must match to allow)
  `Bash(npm test)`       that exact command
  `Edit(src/**)`         a glob on the path, relative to the working directory (or absolute);
                         `Edit(...)` covers Write too, `Read(...)` covers Grep and Glob.
Deny beats ask beats allow. Writes outside the working directory (through `..` or a symlink) are
never allowed by a rule, acceptEdits or ALLOW_WRITE: they always ask (denied when nothing can ask).
The front end supplies the async `ask` hook; one-shot runs have none, so nothing ever blocks.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from tools.base import Tool, ToolContext

REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
Answer = Literal["once", "always", "deny"]

FILE_EDIT_TOOLS = ("Edit", "Write", "NotebookEdit")
# A rule on the key tool also covers these (Claude Code's grouping).
RULE_ALIASES = {"Edit": ("Edit", "Write"), "Read": ("Read", "Grep", "Glob")}
# For "always allow" on Bash: commands whose second word is a sub-command.
_SUBCOMMAND_TOOLS = {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "pip", "pip3",
                     "uv", "poetry", "make", "python", "python3", "npx", "dotnet", "gradle", "mvn", "brew",
                     "apt", "apt-get", "gh", "terraform", "helm", "systemctl"}


@dataclass
class PermissionRequest:
    tool: Tool
    input: dict[str, Any]
    label: str
    reason: str = ""
    tool_use_id: str = ""


@dataclass
class PermissionResult:
    """A richer answer than `Answer`, from hosts that can give one (the SDK's can_use_tool): the input to
    run instead (`updated_input`), the denial text the model gets (`message`), or an interrupt."""

    answer: Answer
    updated_input: dict[str, Any] | None = None
    message: str = ""
    interrupt: bool = False


@dataclass
class Verdict:
    allowed: bool
    message: str = ""
    # A denial by the user in the REPL ends the turn; a policy denial in one-shot does not.
    end_turn: bool = False
    # The input to run with, when the host changed it (PermissionResult.updated_input).
    updated_input: dict[str, Any] | None = None


AskHook = Callable[[PermissionRequest], Awaitable[Answer | PermissionResult]]


def headless_denial(tool: Tool, input: dict[str, Any], ctx: ToolContext) -> str:
    """Claude Code's wording when nobody can be asked (`-p`): the permission was not granted."""
    target = None
    try:
        target = tool.permission_target(input)
    except Exception:
        pass
    if target is not None and target[0] == "path":
        verb = "read from" if tool.is_read_only(input) else "write to"
        return f"Claude requested permissions to {verb} {ctx.resolve(target[1])}, but you haven't granted it yet."
    if target is not None and target[0] == "command":
        return "This command requires approval"  # Claude Code 2.1's text for a generic Bash command
    return f"Claude requested permissions to use {tool.name}, but you haven't granted it yet."


@dataclass(frozen=True)
class Rule:
    tool: str
    content: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = text.strip()
        m = re.fullmatch(r"([^()\s]+)\((.*)\)", text, re.S)
        if m:
            content = m.group(2).strip()
            return cls(m.group(1), None if content in ("", "*") else content)
        return cls(text)

    def __str__(self) -> str:
        return f"{self.tool}({self.content})" if self.content is not None else self.tool

    def covers(self, tool_name: str) -> bool:
        return tool_name in RULE_ALIASES.get(self.tool, (self.tool,))


# -- matching helpers ---------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-ish: `**` spans directories, `*` and `?` stay within one, `{a,b}` alternatives."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{" and "}" in pattern[i:]:
            j = pattern.index("}", i)
            out.append("(?:" + "|".join(re.escape(a) for a in pattern[i + 1 : j].split(",")) + ")")
            i = j + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def glob_escape(path: str) -> str:
    return re.sub(r"([*?{}\[\]])", r"[\1]", path) if re.search(r"[*?{}\[\]]", path) else path


def _path_candidates(path: Path, root: Path) -> tuple[str | None, str]:
    """(path relative to the root in posix form, or None when outside; the absolute real path)."""
    real = real_path(path)
    try:
        rel = Path(real).relative_to(real_path(root)).as_posix()
    except ValueError:
        rel = None
    return rel, real


def real_path(path: Path) -> str:
    """The real path even when the file does not exist yet (its nearest existing ancestor resolved)."""
    return os.path.realpath(path)


def path_matches(pattern: str, path: Path, root: Path) -> bool:
    rel, real = _path_candidates(path, root)
    pat = os.path.expanduser(pattern)
    if pat.startswith("//"):
        pat = pat[1:]
    if os.path.isabs(pat):
        return bool(_glob_regex(pat).match(real)) or bool(_glob_regex(pat).match(os.path.abspath(path)))
    if rel is None:
        return False
    pat = pat[2:] if pat.startswith("./") else pat
    if pat.endswith("/"):
        pat += "**"
    return bool(_glob_regex(pat).match(rel))


def is_outside(path: Path, root: Path) -> bool:
    """True when `path` (after `..` and symlinks) leaves `root`."""
    return _path_candidates(path, root)[0] is None


_SPLIT_OPERATORS = re.compile(r"\s*(?:&&|\|\||;|\||&|\n)\s*")


def split_command(command: str) -> tuple[list[str], bool]:
    """The simple commands of a compound command line, and whether it is too complex to reason about
    (command substitution, backticks, subshells, redirection to a process)."""
    parts: list[str] = []
    buf: list[str] = []
    quote = ""
    complex_ = False
    i = 0
    while i < len(command):
        c = command[i]
        if quote:
            buf.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(command):
                buf.append(command[i + 1])
                i += 2
                continue
            if c == quote:
                quote = ""
            elif quote == '"' and (c == "`" or command.startswith("$(", i)):
                complex_ = True
            i += 1
            continue
        if c in "'\"":
            quote = c
            buf.append(c)
        elif c == "\\" and i + 1 < len(command):
            buf.append(command[i : i + 2])
            i += 2
            continue
        elif c == "`" or command.startswith("$(", i) or command.startswith("<(", i) or command.startswith(">(", i) or c in "()":
            complex_ = True
            buf.append(c)
        elif command.startswith(("&&", "||"), i):
            parts.append("".join(buf))
            buf = []
            i += 2
            continue
        elif c in ";|&\n":
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    if quote:
        complex_ = True
    parts.append("".join(buf))
    return [" ".join(p.split()) for p in parts if p.strip()], complex_


def command_matches(content: str, command: str) -> bool:
    """One simple command against a rule's content: `prefix:*`, an exact command, or a `*` wildcard."""
    if content.endswith(":*"):
        prefix = " ".join(content[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    if "*" in content:
        regex = ".*".join(re.escape(p) for p in " ".join(content.split()).split("*"))
        return re.fullmatch(regex, command, re.S) is not None
    return command == " ".join(content.split())


def bash_prefix_rule(command: str) -> str:
    """The session rule content "always allow" adds for a Bash command: its prefix, never all of Bash."""
    parts, complex_ = split_command(command)
    if len(parts) != 1 or complex_:
        return " ".join(command.split())  # only this exact command line
    try:
        words = shlex.split(parts[0])
    except ValueError:
        return parts[0]
    if not words:
        return parts[0]
    n = 2 if words[0] in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-") else 1
    return " ".join(shlex.quote(w) for w in words[:n]) + ":*"


# -- settings -------------------------------------------------------------------------------------


@dataclass
class PermissionSettings:
    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    default_mode: str | None = None


def load_settings(paths: list[Path]) -> PermissionSettings:
    """`permissions.{allow,ask,deny,defaultMode}` from JSON settings files (later files add to earlier)."""
    out = PermissionSettings()
    for p in paths:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        load_settings_data(data, into=out)
    return out


def load_settings_data(data: Any, into: PermissionSettings | None = None) -> PermissionSettings:
    """The `permissions` of one settings object, added to `into`."""
    out = into if into is not None else PermissionSettings()
    perms = data.get("permissions") if isinstance(data, dict) else None
    if not isinstance(perms, dict):
        return out
    for key in ("allow", "ask", "deny"):
        values = perms.get(key)
        if isinstance(values, list):
            getattr(out, key).extend(str(v) for v in values if isinstance(v, str))
    mode = perms.get("defaultMode")
    if isinstance(mode, str) and mode in MODES:
        out.default_mode = mode
    return out


# -- the gate -------------------------------------------------------------------------------------


@dataclass
class PermissionGate:
    mode: Mode = "default"
    ask: AskHook | None = None
    # Session rules added by "always allow": (tool name, path glob / Bash rule content, or None).
    session_rules: list[tuple[str, str | None]] = field(default_factory=list)
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    ask_tools: list[str] = field(default_factory=list)
    # One-shot and SDK runs: with nobody to ask, a denial tells the model the permission was not granted.
    headless: bool = False
    # Every denial of the current task, as Claude Code reports them (`permission_denials`).
    denials: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown permission mode {self.mode!r}; expected one of {', '.join(MODES)}")

    def _allowed_by_env(self) -> bool:
        return os.environ.get("ALLOW_WRITE") == "1"

    # A rule list matched against one call.
    def _match(self, rules: list[Rule], tool: Tool, input: dict[str, Any], ctx: ToolContext, *, all_parts: bool) -> Rule | None:
        target = _target(tool, input)
        for rule in rules:
            if not rule.covers(tool.name):
                continue
            if rule.content is None:
                return rule
            if target is None:
                continue
            kind, value = target
            if kind == "path":
                if path_matches(rule.content, ctx.resolve(value), ctx.project_root):
                    return rule
            else:
                parts, complex_ = split_command(value)
                whole = " ".join(value.split())
                if command_matches(rule.content, whole) and (not all_parts or (len(parts) <= 1 and not complex_)):
                    return rule
                if all_parts:
                    if not complex_ and parts and all(command_matches(rule.content, p) for p in parts):
                        return rule
                elif any(command_matches(rule.content, p) for p in parts):
                    return rule
        return None

    def _allow_match(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> bool:
        rules = [Rule.parse(r) for r in self.allowed_tools] + [Rule(n, t) for n, t in self.session_rules]
        target = _target(tool, input)
        if target and target[0] == "command" and not any(r.content is None and r.covers(tool.name) for r in rules):
            # Every part of a compound command must be allowed by some rule.
            parts, complex_ = split_command(target[1])
            whole = " ".join(target[1].split())
            cmd_rules = [r for r in rules if r.covers(tool.name) and r.content is not None]
            if any(command_matches(r.content or "", whole) for r in cmd_rules if not r.content.endswith(":*")):
                return True
            if complex_ or not parts:
                return False
            return all(any(command_matches(r.content or "", p) for r in cmd_rules) for p in parts)
        return self._match(rules, tool, input, ctx, all_parts=True) is not None

    def _outside_write(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> bool:
        target = _target(tool, input)
        if target is None or target[0] != "path" or tool.is_read_only(input):
            return False
        return is_outside(ctx.resolve(target[1]), ctx.project_root)

    async def authorize(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> Verdict:
        verdict = await self._authorize(tool, input, ctx)
        if not verdict.allowed:
            self.denials.append({"tool_name": tool.name, "tool_use_id": ctx.tool_use_id, "tool_input": input})
        return verdict

    async def _authorize(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> Verdict:
        deny = [Rule.parse(r) for r in self.disallowed_tools]
        if self._match(deny, tool, input, ctx, all_parts=False):
            return Verdict(False, REJECT_MESSAGE)
        if self.mode == "bypassPermissions":
            return Verdict(True)
        read_only = tool.is_read_only(input)
        if self.mode == "plan" and not read_only:
            return Verdict(False, f"Plan mode: {tool.name} is not read-only and cannot run. " + REJECT_MESSAGE)
        ask_rule = self._match([Rule.parse(r) for r in self.ask_tools], tool, input, ctx, all_parts=False)
        outside = self._outside_write(tool, input, ctx)
        reason = ""
        if outside:
            reason = "writes outside the working directory"
        elif ask_rule is not None:
            reason = f"matches the ask rule {ask_rule}"
        else:
            if read_only:
                return Verdict(True)
            if self._allow_match(tool, input, ctx):
                return Verdict(True)
            if self.mode == "acceptEdits" and tool.name in FILE_EDIT_TOOLS:
                return Verdict(True)
            if self._allowed_by_env():
                return Verdict(True)
        if self.ask is None:
            return Verdict(False, headless_denial(tool, input, ctx) if self.headless else REJECT_MESSAGE)
        answer = await self.ask(PermissionRequest(tool, input, tool.describe(input), reason, ctx.tool_use_id))
        if isinstance(answer, PermissionResult):
            if answer.answer == "deny":
                return Verdict(False, answer.message or REJECT_MESSAGE, end_turn=answer.interrupt)
            return Verdict(True, updated_input=answer.updated_input)
        if answer == "always":
            if not outside:
                rule = self.session_rule_for(tool, input, ctx)
                if rule not in self.session_rules:
                    self.session_rules.append(rule)
            return Verdict(True)
        if answer == "once":
            return Verdict(True)
        return Verdict(False, REJECT_MESSAGE, end_turn=True)

    def session_rule_for(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> tuple[str, str | None]:
        """What "always allow" remembers: this tool on this path, or this command prefix for Bash."""
        target = _target(tool, input)
        if target is None:
            return (tool.name, None)
        kind, value = target
        if kind == "command":
            return (tool.name, bash_prefix_rule(value))
        rel, real = _path_candidates(ctx.resolve(value), ctx.project_root)
        return (tool.name, glob_escape(rel if rel is not None else real))


def _target(tool: Tool, input: dict[str, Any]) -> tuple[str, str] | None:
    try:
        return tool.permission_target(input)
    except Exception:
        return None
