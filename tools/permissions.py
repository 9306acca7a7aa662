"""The permission gate: decides whether a tool call runs, asks the front end, or is denied.

Modes follow Claude Code: `default` (read-only tools run inside the working directories; others ask in
the REPL and are denied in one-shot runs unless allowed), `acceptEdits` (Write/Edit inside the working
directory run; Bash still asks), `plan` (read-only only; WebFetch/WebSearch ask), `bypassPermissions`
(everything runs). `ALLOW_WRITE=1` allows non-read-only tools in one-shot runs.

Rules (`--allowedTools`, `--disallowedTools`, settings `permissions.allow/ask/deny`):
  `Read`                 the whole tool
  `Bash(git status:*)`   the words of a simple command (also `Bash(git status *)`); a command line is
                         allowed only when every simple command in it is (tools/bash_parse.py)
  `Bash(npm test)`       exactly these words
  `Edit(src/**)`         a glob on the path, relative to the working directory (or absolute);
                         `Edit(...)` covers Write too, `Read(...)` covers every reading tool.
Deny beats ask beats allow. Always asked (denied when nothing can ask), whatever the rules or mode
short of bypass: writes outside the working directories (`..`, symlinks, Bash redirections),
writes to protected paths at any depth (agent and Claude Code config, `.mcp.json`, `.lsp.json`,
`.env*`, `.envrc`, `.gitattributes`, `.git/`, shell start-up files: services/loaded_config.py), reads outside the working directories and `--add-dir`s. Secrets
(`/proc/*/environ`, the agent home's credentials) are refused in every mode but bypass.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from services.hooks import hook_ask_denial
from services.loaded_config import runs_code
from tools.base import Tool, ToolContext
from tools.bash_checks import SECRET, Analysis, Scope, analyze, harmless_runs, places
from tools.bash_checks import reasons as bash_reasons
from tools.bash_rules import allowed_by_rules, always_rule_content, deny_matches, deny_may_match
from tools.protected_paths import config_file_reason, proc_reason, words_proc_reason

REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
Answer = Literal["once", "always", "deny"]

FILE_EDIT_TOOLS = ("Edit", "Write", "NotebookEdit")
# A rule on the key tool also covers these (Claude Code's grouping); `Read` covers every reading tool.
RULE_ALIASES = {"Edit": FILE_EDIT_TOOLS, "Read": ("Read", "Grep", "Glob", "LS", "NotebookRead")}
# Tools that send data out of the machine: in plan mode they ask (plan must not exfiltrate what it read).
NETWORK_TOOLS = ("WebFetch", "WebSearch")
# Writes here run code on the next start or change what the agent trusts: they always ask.
PROTECTED_DIRS = (".git",)  # and LOADED_DIRS, through runs_code
PROTECTED_NAMES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
                   ".zprofile", ".zshenv", ".zlogin", ".inputrc", ".envrc", ".gitconfig", ".npmrc", ".pypirc")
CREDENTIAL_FILES = (".credentials.json", "credentials.json", "credentials")
# Reasons that still let "always" be offered (the rule it stores answers them next time).
QUESTION_ONLY_REASONS = ("matches the ask rule", "fetches from", "writes a file that configures",
                         "writes git configuration")


@dataclass
class PermissionRequest:
    tool: Tool
    input: dict[str, Any]
    label: str
    reason: str = ""
    tool_use_id: str = ""
    # The whole command or target, escape sequences made visible, never truncated.
    display: str = ""
    # The exact rule an "always" answer stores (saved to the local settings file); None: not offered.
    always_rule: str | None = None
    cwd: str = ""  # the working directory of the call when it differs from the project root


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


# Tools whose permission question is where the user answers them: no hook answers it for the user.
ANSWERED_BY_USER = frozenset(("AskUserQuestion", "ExitPlanMode"))


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


# -- the gate -------------------------------------------------------------------------------------




# -- paths -----------------------------------------------------------------------------------------


def is_protected(real: str) -> bool:
    """A path whose change runs code on the next start or changes what the agent trusts: at any depth,
    what a later session loads and runs (services/loaded_config.py, the list the sandbox keeps read-only),
    anything in a `.git` directory, shell start-up files."""
    parts = Path(real).parts
    name = parts[-1] if parts else ""
    return any(p in PROTECTED_DIRS for p in parts[:-1]) or name in PROTECTED_DIRS or name in PROTECTED_NAMES \
        or runs_code(parts)


def _inside(real: str, dirs: list[str]) -> bool:
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in dirs)


def secret_reason(real: str, home: Path, recursive: bool) -> str | None:
    """Why reading `real` would expose a secret, or None. `recursive`: a search below it counts too."""
    if re.fullmatch(r"/proc/[^/]+/(task/[^/]+/)?environ", real):
        return "a process environment"
    if recursive and (real in ("/", "/proc") or re.fullmatch(r"/proc/[^/]+(/task(/[^/]+)?)?", real)):
        return "a search through process environments (/proc/*/environ)"
    homes = [os.path.realpath(home), os.path.realpath(Path.home() / ".claude")]
    for h in homes:
        if any(real == os.path.join(h, n) for n in CREDENTIAL_FILES):
            return "the agent's credentials"
        if recursive and _inside(h, [real]):
            return "a search through the agent's credentials"
    return None


def display_text(text: str) -> str:
    """The text with control characters and escape sequences made visible (kept whole, newlines kept)."""
    out = []
    for ch in text:
        if ch == "\n" or ch == "\t":
            out.append(ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        elif 0x80 <= ord(ch) < 0xA0 or ch in "\u200b\u200c\u200d\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _target(tool: Tool, input: dict[str, Any]) -> tuple[str, str] | None:
    try:
        return tool.permission_target(input)
    except Exception:
        return None


def _read_paths(tool: Tool, input: dict[str, Any]) -> list[str]:
    """The paths a read-only tool reads (its target, and an absolute / `..` Glob pattern)."""
    out = []
    target = _target(tool, input)
    if target and target[0] == "path":
        out.append(target[1])
    pattern = input.get("pattern")
    if tool.name == "Glob" and isinstance(pattern, str) and (pattern.startswith(("/", "~")) or ".." in pattern):
        base = re.split(r"[*?\[{]", pattern, maxsplit=1)[0]
        out.append(base.rsplit("/", 1)[0] or "/" if "/" in base else base)
    return out


# -- the gate ----------------------------------------------------------------------------------------


@dataclass
class PermissionGate:
    mode: Mode = "default"
    ask: AskHook | None = None
    # Rules added by "always" answers this session: (tool name, rule content or None). Also saved.
    session_rules: list[tuple[str, str | None]] = field(default_factory=list)
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    ask_tools: list[str] = field(default_factory=list)
    # Directories besides the project root the tools may read and write (`--add-dir`).
    additional_dirs: list[Path] = field(default_factory=list)
    # Where "always" answers are saved (the local settings file); None keeps them in the session.
    rules_file: Path | None = None
    home: Path | None = None
    notices: list[str] = field(default_factory=list)  # e.g. a rules file that could not be written
    # Told where an "always" rule was saved, or why it was not (the REPL prints it); None: notices only.
    notify: Callable[[str], None] | None = None
    # One-shot and SDK runs: with nobody to ask, a denial tells the model the permission was not granted.
    headless: bool = False
    # Every denial of the current task, as Claude Code reports them (`permission_denials`).
    denials: list[dict[str, Any]] = field(default_factory=list)
    # The session's sandbox (tools/sandbox.py): a Bash call it contains runs without asking (auto-allow);
    # a request to leave it always asks. None: no sandbox.
    sandbox: Any = None
    # Claude Code's PermissionRequest hooks: asked first whenever a question would be put (tool name, input)
    # -> a HookDecision "allow" (with updated_input) or "deny" (reason), or None to ask as usual.
    permission_hook: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown permission mode {self.mode!r}; expected one of {', '.join(MODES)}")

    def _allowed_by_env(self) -> bool:
        from services.config import getenv

        return getenv("ALLOW_WRITE") == "1"

    def _home(self) -> Path:
        if self.home is None:
            from services.config import agent_home

            self.home = agent_home()
        return self.home

    def _dirs(self, ctx: ToolContext) -> list[str]:
        return [real_path(ctx.project_root), *(real_path(d) for d in self.additional_dirs)]

    def _read_dirs(self, ctx: ToolContext) -> list[str]:
        # Spilled results live in the session directory under the agent home: the model reads them back.
        # Only this project's own directory: other projects' transcripts are not the model's to read.
        from services.config import project_slug

        session_dir = ctx.session_dir
        extra = [real_path(session_dir)] if session_dir else []
        own = real_path(self._home() / "projects" / project_slug(Path(ctx.project_root)))
        return [*self._dirs(ctx), *extra, own]

    # -- rules --
    def _rules(self, texts: list[str]) -> list[Rule]:
        return [Rule.parse(r) for r in texts]

    def _match(self, rules: list[Rule], tool: Tool, input: dict[str, Any], ctx: ToolContext,
               parsed: Analysis | None, *, any_part: bool) -> Rule | None:
        """The first rule that applies. `any_part`: deny/ask semantics (one simple command matching is
        enough, wrappers such as `sudo` looked behind); otherwise allow semantics (see _bash_allowed)."""
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
            elif kind == "command" and parsed is not None and any_part:
                if deny_matches(rule.content, parsed):
                    return rule
            elif kind != "command" and _plain_matches(rule.content, value):
                return rule
        return None

    def _bash_allowed(self, rules: list[Rule], parsed: Analysis, ctx: ToolContext) -> bool:
        """Every simple command allowed by some rule (a `cd` to a literal directory inside the working
        directories counts), nothing unprovable."""
        contents = [r.content for r in rules if r.covers("Bash") and r.content is not None]
        return allowed_by_rules(parsed, contents, harmless_runs(parsed, self._scope(ctx)))

    def _bash_reasons(self, parsed: Analysis, ctx: ToolContext) -> list[str]:
        """The line's path reasons, worked out once per call (the secret check and the write check share them)."""
        key = (id(parsed), str(ctx.session.cwd))
        memo = getattr(self, "_reasons_memo", None)
        if memo is None or memo[0] != key:
            memo = (key, bash_reasons(parsed, self._scope(ctx)))
            self._reasons_memo = memo
        return list(memo[1])

    def _scope(self, ctx: ToolContext) -> Scope:
        home = self._home()
        return Scope(Path(ctx.session.cwd), self._dirs(ctx), self._read_dirs(ctx), is_protected,
                     lambda real, recursive: secret_reason(real, home, recursive))

    # -- the checks that force a question --
    def _write_reasons(self, tool: Tool, input: dict[str, Any], ctx: ToolContext, parsed: Analysis | None) -> list[str]:
        reasons: list[str] = []
        paths: list[str] = []
        target = _target(tool, input)
        if target and target[0] == "path" and not tool.is_read_only(input):
            paths.append(target[1])
        if parsed is not None:
            reasons.extend(r for r in self._bash_reasons(parsed, ctx) if not r.startswith(SECRET))
        for p in paths:
            real = real_path(ctx.resolve(p))
            if not _inside(real, self._dirs(ctx)):
                reasons.append(f"writes outside the working directory ({real})")
            elif is_protected(real):
                reasons.append(f"writes a protected path ({real}): configuration that runs code or grants trust")
        return reasons

    def _read_reason(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> str | None:
        if not tool.is_read_only(input):
            return None
        for p in _read_paths(tool, input):
            real = real_path(ctx.resolve(p))
            if not _inside(real, self._read_dirs(ctx)):
                return f"reads outside the working directory ({real})"
        return None

    def _secret(self, tool: Tool, input: dict[str, Any], ctx: ToolContext, parsed: Analysis | None = None) -> str | None:
        if parsed is not None:
            found = [r[len(SECRET):] for r in self._bash_reasons(parsed, ctx) if r.startswith(SECRET)]
            return found[0] if found else None
        recursive = tool.name in ("Grep", "Glob", "LS")
        paths = _read_paths(tool, input) if tool.is_read_only(input) else []
        target = _target(tool, input)
        if target and target[0] == "path" and target[1] not in paths:
            paths.append(target[1])
        for p in paths:
            resolved = str(ctx.resolve(p))
            why = secret_reason(real_path(ctx.resolve(p)), self._home(), recursive) or proc_reason(resolved)
            if why:
                return why
        return None

    def _bash_proc(self, analysis: Analysis | None, command: str, ctx: ToolContext) -> tuple[str | None, str | None]:
        """(a refusal: a word names or globs to the agent's own /proc directory; a question: an unknown
        word or place on a line that mentions proc, such as `/proc/$PPID/environ`)."""
        if analysis is None:
            return None, None
        parsed = analysis.parsed
        where = places(analysis, self._scope(ctx))[0]  # every directory a `cd` in the line may lead to
        words = [w for c in parsed.commands for w in c.words if w is not None]
        # Words, write targets, and any path-looking token of the quote-stripped text (input redirections).
        plain = re.sub(r"[\"'\\]", "", command)
        tokens = re.findall(r"/proc/[^\s;&|<>()`]*", plain)
        writes = [w for w in parsed.writes if w is not None]
        refused = words_proc_reason([*words, *writes, *tokens], [p for p in where if p is not None])
        unknown = None in where or any(w is None for c in parsed.commands for w in c.words)
        asked = "a word whose value is unknown on a line that mentions /proc" if unknown and "proc" in plain else None
        return refused, asked

    def _fetch_allowed(self, allow_rules: list[Rule], tool: Tool, input: dict[str, Any], ctx: ToolContext) -> bool:
        """WebFetch runs without a question only for an allowed domain or a preapproved host (Claude Code)."""
        from tools.web_domains import is_preapproved

        url = input.get("url")
        if isinstance(url, str) and is_preapproved(url):
            return True
        return self._match(allow_rules, tool, input, ctx, None, any_part=False) is not None

    # -- the decision --
    async def authorize(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                        hook: tuple[str, str] | None = None) -> Verdict:
        """`hook`: a PreToolUse hook's ("allow" | "ask", reason): allow skips the question (deny rules,
        secrets and plan mode still refuse), ask asks even where a rule allows."""
        try:
            verdict = await self._authorize(tool, input, ctx, hook)
        except Exception as exc:  # noqa: BLE001 - a gate that cannot decide must not allow
            verdict = await self._fail_closed(tool, input, ctx, exc)
            if not verdict.allowed:
                self.denials.append({"tool_name": tool.name, "tool_use_id": ctx.tool_use_id, "tool_input": input})
            return verdict
        if not verdict.allowed:
            self.denials.append({"tool_name": tool.name, "tool_use_id": ctx.tool_use_id, "tool_input": input})
        elif tool.name == "Grep" and self.mode != "bypassPermissions":
            verdict.updated_input = self._grep_excluding_denied(verdict.updated_input or input)
        return verdict

    async def _fail_closed(self, tool: Tool, input: dict[str, Any], ctx: ToolContext, exc: Exception) -> Verdict:
        """An exception while deciding: ask (no "always"), or deny when nobody can be asked; traced."""
        from services.trace import trace

        trace("permissions.gate_error", tool=tool.name, error=f"{type(exc).__name__}: {exc}")
        if self.mode == "bypassPermissions":
            return Verdict(True)
        reason = f"the permission check failed ({type(exc).__name__}); asking instead"
        if self.ask is None:
            return Verdict(False, REJECT_MESSAGE)
        try:
            request = PermissionRequest(tool, input, tool.describe(input), reason, ctx.tool_use_id,
                                        display=display_text(json.dumps(input, ensure_ascii=False, default=str)))
            answer = await self.ask(request)
        except Exception:  # noqa: BLE001 - the question itself failed: deny
            return Verdict(False, REJECT_MESSAGE)
        if isinstance(answer, PermissionResult):
            return Verdict(answer.answer != "deny", answer.message if answer.answer == "deny" else "",
                           updated_input=answer.updated_input if answer.answer != "deny" else None)
        return Verdict(answer in ("once", "always"), "" if answer in ("once", "always") else REJECT_MESSAGE,
                       end_turn=answer == "deny")

    def _grep_excluding_denied(self, input: dict[str, Any]) -> dict[str, Any] | None:
        """A search of a directory must not read files a Read deny rule covers: those patterns are added
        to Grep's globs as exclusions (`Read(.env)` -> `!.env`, matched at any depth like .gitignore)."""
        patterns = [r.content for r in self._rules(self.disallowed_tools)
                    if r.tool in ("Read", "Grep") and r.content and not any(c.isspace() for c in r.content)]
        if not patterns:
            return None
        excludes = " ".join("!" + (p[2:] if p.startswith("./") else p) for p in patterns)
        globs = input.get("glob") if isinstance(input.get("glob"), str) else ""
        return {**input, "glob": f"{globs} {excludes}".strip()}

    def _rule_and_network_reasons(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                                  parsed: Analysis | None, allow_rules: list[Rule]) -> list[str]:
        """An ask rule that matches; a network tool in plan mode; WebFetch to a domain not allowed yet."""
        reasons: list[str] = []
        ask_rule = self._match(self._rules(self.ask_tools), tool, input, ctx, parsed, any_part=True)
        if ask_rule is not None:
            reasons.append(f"matches the ask rule {ask_rule}")
        allowed = self._match(allow_rules, tool, input, ctx, None, any_part=False) is not None
        if self.mode == "plan" and tool.name in NETWORK_TOOLS and not allowed:
            reasons.append("plan mode: sends data out of the machine")
        elif tool.name == "WebFetch" and not self._fetch_allowed(allow_rules, tool, input, ctx):
            target = _target(tool, input)
            reasons.append(f"fetches from {target[1][len('domain:'):] if target else 'a URL'}, a domain not allowed yet")
        return reasons

    @staticmethod
    def _config_file(target: tuple[str, str] | None, ctx: ToolContext) -> str | None:
        """acceptEdits asks for the files that configure agents or editors (tools/protected_paths.py)."""
        return config_file_reason(real_path(ctx.resolve(target[1]))) if target and target[0] == "path" else None

    def _allowed_without_question(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                                  parsed: Analysis | None, allow_rules: list[Rule], reasons: list[str]) -> bool:
        """Nothing forced a question: read-only, an allow rule, acceptEdits (not for configuration files,
        whose reason is appended to `reasons`), or ALLOW_WRITE."""
        if tool.is_read_only(input):
            return True
        if parsed is not None:
            whole = any(r.content is None and r.covers(tool.name) for r in allow_rules)
            if whole or self._bash_allowed(allow_rules, parsed, ctx):
                return True
        elif self._match(allow_rules, tool, input, ctx, None, any_part=False):
            return True
        if self.mode == "acceptEdits" and tool.name in FILE_EDIT_TOOLS:
            config = self._config_file(_target(tool, input), ctx)
            if config is None:
                return True
            reasons.append(config)
        return self._allowed_by_env()

    async def _authorize(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                         hook: tuple[str, str] | None = None) -> Verdict:
        target = _target(tool, input)
        parsed = analyze(target[1]) if target and target[0] == "command" and tool.name == "Bash" else None
        deny_rules = self._rules(self.disallowed_tools)
        if self._match(deny_rules, tool, input, ctx, parsed, any_part=True):
            return Verdict(False, REJECT_MESSAGE)
        proc_refused, proc_asked = self._bash_proc(parsed, target[1] if target else "", ctx)
        secret = self._secret(tool, input, ctx, parsed) or proc_refused
        if secret and self.mode != "bypassPermissions":
            return Verdict(False, f"Refused: {tool.name} would read {secret}. This is never allowed outside "
                                  "bypassPermissions mode.")
        unknown = self._unknown_under_deny(deny_rules, parsed)
        hook_asks = [f"a PreToolUse hook asks: {hook[1] or 'confirm this call'}"] if hook and hook[0] == "ask" else []
        if self.mode == "bypassPermissions":
            reasons = [unknown] if unknown is not None else hook_asks
            return Verdict(True) if not reasons else await self._question(tool, input, ctx, reasons, None, None, hook)
        read_only = tool.is_read_only(input)
        if self.mode == "plan" and not read_only:
            return Verdict(False, f"Plan mode: {tool.name} is not read-only and cannot run. " + REJECT_MESSAGE)
        sandboxed = self._sandbox_verdict(tool, input, ctx, parsed)
        if sandboxed is not None:
            return sandboxed
        allow_rules = self._rules(self.allowed_tools) + [Rule(n, t) for n, t in self.session_rules]
        reasons = self._write_reasons(tool, input, ctx, parsed)
        if tool.name == "Bash" and self.sandbox is not None and self.sandbox.asks_to_leave(input):
            reasons.append("runs outside the sandbox (dangerouslyDisableSandbox)")
        read_reason = self._read_reason(tool, input, ctx)
        if read_reason and not self._match(self._rules(self.allowed_tools), tool, input, ctx, None, any_part=False):
            reasons.append(read_reason)
        reasons.extend([proc_asked] if proc_asked else [])
        if unknown is not None:
            reasons.append(unknown)
        reasons.extend(self._rule_and_network_reasons(tool, input, ctx, parsed, allow_rules))
        if hook_asks:
            return await self._question(tool, input, ctx, [*reasons, *hook_asks], parsed, read_reason, hook)
        if hook and hook[0] == "allow":
            return Verdict(True)  # the hook answered the question the checks above would have asked
        if not reasons and self._allowed_without_question(tool, input, ctx, parsed, allow_rules, reasons):
            return Verdict(True)
        return await self._question(tool, input, ctx, reasons, parsed, read_reason)

    def _unknown_under_deny(self, deny_rules: list[Rule], parsed: Analysis | None) -> str | None:
        """A command with words only known when it runs may be a denied one (`$(echo rm) f`, `rm $X`
        under `Bash(rm -rf:*)`): the line asks."""
        if parsed is None:
            return None
        hidden = parsed.problems or parsed.runs_code
        if hidden and any(r.covers("Bash") and r.content is not None for r in deny_rules):
            return f"a deny rule is in force and the line may run commands its text does not show ({hidden[0]})"
        for rule in deny_rules:
            if rule.covers("Bash") and rule.content is not None and deny_may_match(rule.content, parsed):
                return f"may run a command the deny rule {rule} covers, once its unknown words are known"
        return None

    async def _question(self, tool: Tool, input: dict[str, Any], ctx: ToolContext, reasons: list[str],
                        parsed: Analysis | None, read_reason: str | None = None,
                        hook: tuple[str, str] | None = None) -> Verdict:
        hooked = await self._permission_hook(tool, input)
        if hooked is not None:
            return hooked
        if self.ask is None:
            if hook is not None and hook[0] == "ask":
                return Verdict(False, hook_ask_denial(tool.name, hook[1]))
            if read_reason and read_reason in reasons:
                return Verdict(False, f"Refused: {tool.name} {read_reason}. Only the working directory and "
                                      "directories added with --add-dir can be read in this mode; ask the user "
                                      "to re-run with --add-dir <dir> if this file is needed.")
            return Verdict(False, headless_denial(tool, input, ctx) if self.headless else REJECT_MESSAGE)
        always = None if reasons and any(not r.startswith(QUESTION_ONLY_REASONS) for r in reasons) \
            else self.always_rule_for(tool, input, ctx, parsed)
        request = PermissionRequest(
            tool, input, tool.describe(input), "; ".join(reasons), ctx.tool_use_id,
            display=self.display_for(tool, input), always_rule=always,
            cwd=str(ctx.session.cwd) if Path(ctx.session.cwd) != Path(ctx.project_root) else "",
        )
        answer = await self.ask(request)
        if isinstance(answer, PermissionResult):
            if answer.answer == "deny":
                return Verdict(False, answer.message or REJECT_MESSAGE, end_turn=answer.interrupt)
            return Verdict(True, updated_input=answer.updated_input)
        if answer == "always":
            if always is not None:
                self.remember(always)
            return Verdict(True)
        if answer == "once":
            return Verdict(True)
        return Verdict(False, REJECT_MESSAGE, end_turn=True)

    async def _permission_hook(self, tool: Tool, input: dict[str, Any]) -> Verdict | None:
        """A PermissionRequest hook's answer to the question about to be asked (never for the tools whose
        question is the user's own answer)."""
        if self.permission_hook is None or tool.name in ANSWERED_BY_USER:
            return None
        decision = await self.permission_hook(tool.name, input)
        if decision is None or decision.action not in ("allow", "deny"):
            return None
        if decision.action == "deny":
            return Verdict(False, decision.reason or REJECT_MESSAGE)
        return Verdict(True, updated_input=decision.updated_input)

    def _sandbox_verdict(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                         parsed: Analysis | None) -> Verdict | None:
        """autoAllowBashIfSandboxed: a Bash call that runs inside the sandbox needs no question (the kernel
        keeps it in the project), unless an ask rule names it. A sandbox that cannot run allows nothing."""
        sandbox = self.sandbox
        if tool.name != "Bash" or sandbox is None or not sandbox.auto_allow:
            return None
        command = input.get("command")
        if not isinstance(command, str) or not sandbox.runs_sandboxed(command, input):
            return None
        if self._match(self._rules(self.ask_tools), tool, input, ctx, parsed, any_part=True) is not None:
            return None
        return Verdict(True)

    # -- the question's data --
    @staticmethod
    def display_for(tool: Tool, input: dict[str, Any]) -> str:
        if tool.name == "WebFetch" and isinstance(input.get("url"), str):
            return display_text(input["url"])  # the whole URL: what would leave the machine
        target = _target(tool, input)
        if target is not None:
            return display_text(target[1])
        return display_text(json.dumps(input, ensure_ascii=False))

    def always_rule_for(self, tool: Tool, input: dict[str, Any], ctx: ToolContext,
                        parsed: Analysis | None = None) -> str | None:
        """The exact rule an "always" answer stores, or None when "always" must not be offered
        (a compound or unprovable command, a protected or outside path)."""
        target = _target(tool, input)
        if target is None:
            return tool.name
        kind, value = target
        if kind == "command":
            if tool.name != "Bash":
                return f"{tool.name}({value})"
            content = always_rule_content(value)
            return f"Bash({content})" if content is not None else None
        if kind != "path":
            return f"{tool.name}({value})"
        rel, real = _path_candidates(ctx.resolve(value), ctx.project_root)
        if rel is None or is_protected(real):
            return None
        return f"{tool.name}({glob_escape(rel)})"

    def remember(self, rule_text: str) -> None:
        """Keep an "always" rule for the session and save it to the local settings file."""
        rule = Rule.parse(rule_text)
        if (rule.tool, rule.content) not in self.session_rules:
            self.session_rules.append((rule.tool, rule.content))
        if self.rules_file is None:
            return
        from services.rule_store import add_rule

        try:
            add_rule(self.rules_file, rule_text)
            line = f"Saved {rule_text} to {self.rules_file}"
        except (OSError, ValueError) as exc:
            line = f"could not save {rule_text} to {self.rules_file}: {exc}; it holds for this session only"
            self.notices.append(line)
        if self.notify is not None:
            self.notify(line)

    def session_rule_for(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> tuple[str, str | None]:
        """Kept for callers of the old API: the (tool, content) of `always_rule_for`."""
        text = self.always_rule_for(tool, input, ctx)
        rule = Rule.parse(text) if text else Rule(tool.name, "")
        return (rule.tool, rule.content)


def _plain_matches(content: str, value: str) -> bool:
    """A rule on a non-path, non-Bash target (a URL, a query): `*` wildcards, else exact."""
    if "*" in content:
        regex = ".*".join(re.escape(p) for p in content.split("*"))
        return re.fullmatch(regex, value, re.S) is not None
    return content == value
