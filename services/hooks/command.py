"""Command hooks: shell commands run at PreToolUse, PostToolUse, PostToolUseFailure, Stop, SubagentStop,
UserPromptSubmit, SessionStart, SessionEnd, PreCompact and PostCompact (inputs recorded from Claude Code 2.1.332).

Configuration (all sources are merged, in this order; see `config_sources`):
- user: the `"hooks"` key of the user settings files, and `<agent home>/hooks.json`;
- project and local, only in a trusted folder: `<project>/.agents/hooks.json` (events at the top level or
  under `"hooks"`), and the `"hooks"` key of `.claude/settings*.json` and `.agents/settings*.json`.

An event maps to a list of entries. An entry is either flat, `{matcher, command, timeoutMs?,
denyOnFailure?}`, or Claude Code's nested form, `{matcher, hooks: [{type: "command", command,
timeout? (seconds)}]}`. `matcher` is `*`, empty or missing (every tool), an exact tool name, or a
regular expression such as `Edit|Write`; it is matched against the tool name for the tool events, the
trigger for PreCompact/PostCompact (`manual|auto`), the source for SessionStart and the reason for SessionEnd. Invalid entries are dropped; an unreadable or invalid file
contributes nothing. The files are parsed once and again only when one of them changes (mtime/size).

Each command runs under `/bin/sh -c` in its own process group, in the project directory, with the
JSON payload on stdin (`hook_event_name`, `session_id`, `cwd`, `transcript_path`, plus the event's
fields). A command that outlives its timeout (default 5000 ms) is killed with its whole group and
counts as exit code 124. `HOOKS=0` disables every hook.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import getenv
from services.credentials import child_env
from services.hooks import DEFAULT_DENY_REASON, HookDecision, Hooks
from services.hooks.file_watch import FileWatch, watch_paths_from, watched_paths
from services.hooks.session_env import ENV_FILE_EVENTS, clear_files, env_file
from services.private_fs import ensure_private_dir
from services.trace import trace

EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "UserPromptSubmit",
          "SessionStart", "SessionEnd", "PreCompact", "PostCompact", "Notification", "PostToolBatch", "SubagentStart",
          "StopFailure", "UserPromptExpansion", "PermissionRequest", "MessageDisplay", "InstructionsLoaded",
          "CwdChanged", "DirectoryAdded", "PreModelSwitch", "PostModelSwitch", "PreSkillShellCommand",
          "Elicitation", "ElicitationResult", "FileChanged", "ConfigChange", "Setup")
# Events that only look: their hooks are told, their output informs nobody (Hooks.observe).
OBSERVED_EVENTS = frozenset(("InstructionsLoaded", "CwdChanged", "DirectoryAdded"))
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PreSkillShellCommand")
# Events whose matcher applies to something (the tool name, the trigger, the source, the reason).
MATCHED_EVENTS = (*TOOL_EVENTS, "SessionStart", "SessionEnd", "PreCompact", "PostCompact", "Notification",
                  "SubagentStart", "StopFailure", "InstructionsLoaded", "DirectoryAdded",
                  "PreModelSwitch", "PostModelSwitch", "Elicitation", "ElicitationResult",
                  "FileChanged", "ConfigChange", "Setup")
# Every event Claude Code 2.1.332 knows (recorded from the binary): a name outside this list in a settings file
# is a typo worth one warning; a known one this agent does not run yet is accepted quietly.
CLAUDE_CODE_EVENTS = frozenset((
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
    "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart", "SubagentStop",
    "PreCompact", "PostCompact", "PreModelSwitch", "PostModelSwitch", "PermissionRequest", "PermissionDenied",
    "Setup", "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
    "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged", "DirectoryAdded",
    "MessageDisplay", "PreSkillShellCommand"))
# Events whose input carries the session's permission mode (as Claude Code 2.1.332 sends them).
MODE_EVENTS = frozenset(("PreSkillShellCommand", "UserPromptSubmit", "UserPromptExpansion", "PermissionRequest", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
                         "Stop", "SubagentStop"))
DEFAULT_HOOK_TIMEOUT_MS = 5000
TIMEOUT_EXIT_CODE = 124
MAX_CAPTURE_CHARS = 64 * 1024
MAX_REASON_CHARS = 8000


@dataclass(frozen=True)
class HookEntry:
    event: str
    command: str
    matcher: str = "*"
    timeout_ms: int = DEFAULT_HOOK_TIMEOUT_MS
    deny_on_failure: bool = False
    # Set for one run by CommandHooks.run_event: the project's directory variables, CLAUDE_ENV_FILE.
    run_env: tuple[tuple[str, str], ...] = ()


@dataclass
class HookOutcome:
    command: str
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration: float = 0.0


@dataclass
class StopResult:
    count: int = 0
    outcomes: list[HookOutcome] = field(default_factory=list)
    prevent_continuation: bool = False
    stop_reason: str | None = None
    blocking_feedback: str | None = None


HooksConfig = dict[str, list[HookEntry]]
Executor = Callable[[HookEntry, dict[str, Any], Path], Awaitable[HookOutcome]]


def hooks_disabled() -> bool:
    return getenv("HOOKS") == "0"


# -- configuration -------------------------------------------------------------------------------
def _timeout_ms(raw: dict[str, Any], default: int) -> int | None:
    """timeoutMs (milliseconds) or Claude Code's timeout (seconds); None when present but invalid."""
    if "timeoutMs" in raw:
        value = raw["timeoutMs"]
        scale = 1
    elif "timeout" in raw:
        value = raw["timeout"]
        scale = 1000
    else:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value * scale)


def _entries(event: str, raw: Any) -> list[HookEntry]:
    if not isinstance(raw, dict):
        return []
    matcher = raw.get("matcher", "*")
    if matcher is None:
        matcher = "*"
    if not isinstance(matcher, str):
        return []
    if event not in MATCHED_EVENTS:
        matcher = "*"
    deny = raw.get("denyOnFailure") is True
    default_timeout = _timeout_ms(raw, DEFAULT_HOOK_TIMEOUT_MS) or DEFAULT_HOOK_TIMEOUT_MS
    if isinstance(raw.get("hooks"), list):  # Claude Code's nested form
        out = []
        for inner in raw["hooks"]:
            if not isinstance(inner, dict) or inner.get("type", "command") != "command":
                continue
            command = inner.get("command")
            timeout = _timeout_ms(inner, default_timeout)
            if isinstance(command, str) and command.strip() and timeout is not None:
                out.append(
                    HookEntry(event, command, matcher, timeout, deny or inner.get("denyOnFailure") is True)
                )
        return out
    command = raw.get("command")
    timeout = _timeout_ms(raw, DEFAULT_HOOK_TIMEOUT_MS)
    if not isinstance(command, str) or not command.strip() or timeout is None:
        return []
    return [HookEntry(event, command, matcher, timeout, deny)]


def parse_hooks_config(data: Any, *, nested_only: bool = False) -> HooksConfig:
    """The entries of one parsed file: events at the top level, or under `"hooks"`."""
    config: HooksConfig = {}
    if not isinstance(data, dict):
        return config
    table = data.get("hooks") if isinstance(data.get("hooks"), dict) else (None if nested_only else data)
    if not isinstance(table, dict):
        return config
    for event in EVENTS:
        items = table.get(event)
        if not isinstance(items, list):
            continue
        entries = [e for item in items for e in _entries(event, item)]
        if entries:
            config[event] = entries
    return config


def unknown_events(data: Any, *, nested_only: bool = False) -> list[str]:
    """Event names in a parsed file that no Claude Code version has (typos: `PreToolUSe`)."""
    if not isinstance(data, dict):
        return []
    table = data.get("hooks") if isinstance(data.get("hooks"), dict) else (None if nested_only else data)
    if not isinstance(table, dict):
        return []
    return sorted(k for k in table if isinstance(k, str) and k not in CLAUDE_CODE_EVENTS
                  and isinstance(table[k], list))


def load_hooks_file(path: Path, *, nested_only: bool = False,
                    warn: Callable[[str], None] | None = None) -> HooksConfig | None:
    """A file's hooks; None when it is missing, unreadable or not valid JSON. Unknown event names are
    told to `warn`, once per load, naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    unknown = unknown_events(data, nested_only=nested_only)
    if unknown and warn is not None:
        warn(f"warning: {path}: unknown hook event{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
             "(ignored; see Claude Code's hook events)")
    return parse_hooks_config(data, nested_only=nested_only)


def config_sources(cwd: Path, home: Path | None, trusted: bool = True) -> list[tuple[Path, bool]]:
    """(path, nested_only) for every file hooks are read from, in merge order: the settings layer's
    files (their `hooks` key) plus the flat `hooks.json` files. The project's files count only when the
    folder is trusted (a cloned repository must not run code on start)."""
    from services.settings_files import local_files, project_files, user_files

    sources: list[tuple[Path, bool]] = []
    if home is not None:
        sources += [(p, True) for p in user_files(home)] + [(home / "hooks.json", False)]
    if trusted:
        sources += [(cwd / ".agents" / "hooks.json", False)]
        sources += [(p, True) for p in [*project_files(cwd), *local_files(cwd)]]
    return sources


def settings_source(path: Path, cwd: Path) -> str:
    """Claude Code's ConfigChange `source` for a hooks file."""
    from services.settings_files import local_files, project_files

    if path in local_files(cwd):
        return "local_settings"
    if path in project_files(cwd) or path == cwd / ".agents" / "hooks.json":
        return "project_settings"
    return "user_settings"


def match_hook(matcher: str, tool_name: str) -> bool:
    if matcher in ("", "*"):
        return True
    if matcher == tool_name:
        return True
    if re.fullmatch(r"[\w-]+", matcher):
        return False
    try:
        return re.fullmatch(matcher, tool_name) is not None
    except re.error:
        return False


# -- running one command ---------------------------------------------------------------------------
def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _decode(data: bytes | None) -> str:
    text = (data or b"").decode("utf-8", errors="replace")
    return text if len(text) <= MAX_CAPTURE_CHARS else text[:MAX_CAPTURE_CHARS] + "\n[hook output truncated]"


async def run_hook_command(entry: HookEntry, payload: dict[str, Any], cwd: Path) -> HookOutcome:
    """Run one hook command with `payload` as JSON on stdin; never raises for the command's failures."""
    started = time.monotonic()
    # Hooks never see the agent's credentials (services/credentials.py).
    env = child_env(extra={"AGENT_PROJECT_DIR": str(cwd)})
    env.setdefault("CLAUDE_PROJECT_DIR", str(cwd))
    env.update(dict(entry.run_env))
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            entry.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd) if cwd.is_dir() else None,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return HookOutcome(
            entry.command, 127, "", f"cannot start hook: {exc}", duration=time.monotonic() - started
        )
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(data), entry.timeout_ms / 1000)
    except TimeoutError:
        # The whole group: a hook's children (a `sleep`, a test runner) die with it.
        _kill_group(proc.pid)
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except TimeoutError:
            pass
        return HookOutcome(
            entry.command,
            TIMEOUT_EXIT_CODE,
            "",
            f"hook timed out after {entry.timeout_ms} ms and was killed",
            timed_out=True,
            duration=time.monotonic() - started,
        )
    except BaseException:
        _kill_group(proc.pid)
        raise
    code = proc.returncode if proc.returncode is not None else 0
    return HookOutcome(
        entry.command, code, _decode(stdout), _decode(stderr), duration=time.monotonic() - started
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """JSON objects printed on stdout, last line first (the whole output counts as one candidate too)."""
    found: list[dict[str, Any]] = []
    whole = stdout.strip()
    for line in reversed(whole.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                found.append(obj)
    if not found and whole.startswith("{"):
        try:
            obj = json.loads(whole)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            found.append(obj)
    return found


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS] + "…"


def _specific(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("hookSpecificOutput")
    return spec if isinstance(spec, dict) else {}


def _additional_context(obj: dict[str, Any]) -> str:
    value = _specific(obj).get("additionalContext", obj.get("additionalContext"))
    return value.strip() if isinstance(value, str) else ""


def _pre_permission(objs: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any] | None]:
    """A PreToolUse hook's "allow"/"ask" (and its reason) and updatedInput, from its JSON lines."""
    permission, reason, updated = "", "", None
    for obj in objs:
        spec = _specific(obj)
        value = spec.get("permissionDecision", obj.get("permissionDecision"))
        if obj.get("decision") == "approve":  # the older spelling of allow
            value = value or "allow"
        if value in ("allow", "ask") and permission != "ask":
            permission = str(value)
            reason = _str(spec.get("permissionDecisionReason") or obj.get("permissionDecisionReason") or "")
        new = spec.get("updatedInput")
        if isinstance(new, dict):
            updated = new
    return permission, reason, updated


def _pre_deny(obj: dict[str, Any]) -> str | None:
    """The deny reason when a PreToolUse JSON line denies, else None."""
    spec = _specific(obj)
    denies = (
        spec.get("permissionDecision") == "deny"
        or obj.get("permissionDecision") == "deny"
        or obj.get("decision") in ("deny", "block")
        or obj.get("behavior") == "deny"
    )
    if obj.get("continue") is False:
        return _str(obj.get("stopReason")) or DEFAULT_DENY_REASON
    if not denies:
        return None
    for value in (
        spec.get("permissionDecisionReason"),
        obj.get("permissionDecisionReason"),
        obj.get("reason"),
        obj.get("message"),
    ):
        if _str(value):
            return _str(value)
    return DEFAULT_DENY_REASON


def _switch_target(fields: dict[str, Any]) -> str:
    """A model switch's matcher target: the new model, less a `[1m]` suffix (as Claude Code matches it)."""
    target = re.sub(r"\[[12]m\]\s*$", "", str(fields.get("to_model") or ""), flags=re.I)
    return target if target.strip() else str(fields.get("to_model") or "")


def pre_tool_decision(objs: list[dict[str, Any]]) -> HookDecision | None:
    """A PreToolUse answer in Claude Code's control output (hook JSON, or an SDK hook callback's answer):
    a denial, or allow/ask with `updatedInput` and `additionalContext`; None when it says nothing."""
    reason = next((r for r in map(_pre_deny, objs) if r is not None), None)
    if reason is not None:
        return HookDecision("deny", reason)
    permission, why, updated = _pre_permission(objs)
    context = "\n".join(c for c in map(_additional_context, objs) if c)
    if permission or updated is not None or context:
        return HookDecision("allow", why, additional_context=context, permission=permission, updated_input=updated)
    return None


def merge_pre(first: HookDecision | None, second: HookDecision | None) -> HookDecision | None:
    """Two PreToolUse answers as one: a denial wins, then "ask" over "allow"; the later input replacement
    wins; the contexts are joined."""
    if first is None or second is None:
        return first or second
    if first.action == "deny" or second.action == "deny":
        return first if first.action == "deny" else second
    asker = first if first.permission == "ask" else second if second.permission == "ask" else None
    chosen = asker or (second if second.permission else first)
    context = "\n".join(c for c in (first.additional_context, second.additional_context) if c)
    return HookDecision("allow", chosen.reason, additional_context=context, permission=chosen.permission,
                        updated_input=second.updated_input if second.updated_input is not None else first.updated_input)


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _default_report(text: str) -> None:
    try:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- the Hooks implementation ---------------------------------------------------------------------
class CommandHooks(Hooks):
    def __init__(
        self,
        cwd: Path,
        home: Path | None = None,
        *,
        session_id: Callable[[], str] | str = "",
        transcript_path: Callable[[], str] | None = None,
        report: Callable[[str], None] | None = None,
        executor: Executor | None = None,
        trusted: bool = True,
        extra: list[Any] | None = None,
    ):
        self.cwd = cwd
        self.home = home
        self.trusted = trusted
        # `hooks` tables that come from no file (the --settings flag), after the files' entries.
        self.extra = list(extra or [])
        self._session_id = session_id
        self._transcript_path = transcript_path
        self._env_folder: Callable[[], Path] | None = None  # the session's session-env/ (CLAUDE_ENV_FILE)
        self._current_dir: Callable[[], Path] | None = None  # the session's working directory
        self._permission_mode: Callable[[], str] | None = None
        self.file_watch = FileWatch()  # what FileChanged hooks watch (services/hooks/file_watch.py)
        self.report = report or _default_report
        self.executor: Executor = executor or run_hook_command
        self._config: HooksConfig = {}
        self._config_key: tuple[object, ...] | None = None
        self._held_key: tuple[object, ...] | None = None  # a change waiting for the ConfigChange hooks
        self._refused_key: tuple[object, ...] | None = None  # a change they refused
        self.loads = 0  # how many times the files were parsed (tests, /status)
        self._warned: set[str] = set()

    def _warn_once(self, text: str) -> None:
        if text not in self._warned:  # a file parsed again after a change warns again only if the text differs
            self._warned.add(text)
            self.report(text)

    def bind(self, session_id: Callable[[], str], transcript_path: Callable[[], str] | None = None,
             permission_mode: Callable[[], str] | None = None, env_folder: Callable[[], Path] | None = None,
             current_dir: Callable[[], Path] | None = None) -> None:
        """Late binding to the engine, whose session id changes on /clear and /resume."""
        self._session_id = session_id
        if env_folder is not None:
            self._env_folder = env_folder
        if current_dir is not None:
            self._current_dir = current_dir
        if transcript_path is not None:
            self._transcript_path = transcript_path
        if permission_mode is not None:
            self._permission_mode = permission_mode

    # -- config --
    def _key(self) -> tuple[object, ...]:
        key: list[tuple[int, int, int] | None] = []
        for path, _ in config_sources(self.cwd, self.home, self.trusted):
            try:
                st = path.stat()
                key.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                key.append(None)
        return tuple(key)

    def config(self) -> HooksConfig:
        """The merged configuration; files are parsed again only when one of them changed. With ConfigChange
        hooks configured, a change made during the session waits for them (`_decide_config`) and one they
        refused is never applied."""
        key = self._key()
        if key != self._config_key and key not in (self._held_key, self._refused_key):
            if self._config_key is not None and self._config.get("ConfigChange"):
                self._held_key = key
            else:
                self._load(key)
        return self._config

    def _load(self, key: tuple[object, ...]) -> None:
        merged: HooksConfig = {}
        for (path, nested_only), stat in zip(config_sources(self.cwd, self.home, self.trusted), key, strict=True):
            if stat is None:
                continue
            loaded = load_hooks_file(path, nested_only=nested_only, warn=self._warn_once) or {}
            for event, entries in loaded.items():
                merged.setdefault(event, []).extend(entries)
        for table in self.extra:
            for event, entries in parse_hooks_config({"hooks": table}, nested_only=True).items():
                merged.setdefault(event, []).extend(entries)
        self._config, self._config_key = merged, key
        self.loads += 1
        trace("hooks.config", events=",".join(f"{k}:{len(v)}" for k, v in merged.items()) or "none")

    async def _decide_config(self) -> None:
        """Claude Code's ConfigChange for each settings file changed since the hooks were read: a hook that
        blocks (`decision: block`, exit 2) keeps the configuration as it was."""
        self.config()
        held, self._held_key = self._held_key, None
        if held is None or self._config_key is None:
            return
        sources = config_sources(self.cwd, self.home, self.trusted)
        changed = [path for (path, _), old, new in zip(sources, self._config_key, held, strict=False) if old != new]
        refusal = None
        for path in changed:
            source = settings_source(path, self.cwd)
            entries = [e for e in self._config.get("ConfigChange", []) if match_hook(e.matcher, source)]
            for out in await self.run_event(entries, self._payload("ConfigChange", source=source, file_path=str(path))):
                obj = self._control("ConfigChange", out)
                if obj.get("decision") == "block" or out.exit_code == 2:
                    refusal = refusal or _str(obj.get("reason")) or _clip(out.stderr) or DEFAULT_DENY_REASON
        if refusal is not None:
            self._refused_key = held
            self.report(f"[ConfigChange hook] the change to the settings was not applied: {refusal}")
        else:
            self._load(held)

    def entries(self, event: str, tool_name: str | None = None) -> list[HookEntry]:
        if hooks_disabled():
            return []
        entries = self.config().get(event, [])
        if tool_name is not None:
            entries = [e for e in entries if match_hook(e.matcher, tool_name)]
        return entries

    @property
    def session_id(self) -> str:
        sid = self._session_id
        return sid() if callable(sid) else sid

    def _payload(self, event: str, /, **fields: Any) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "hook_event_name": event,
            "session_id": self.session_id,
            "cwd": str(self.current_dir()),
        }
        if self._transcript_path is not None:
            payload["transcript_path"] = self._transcript_path()
        if self._permission_mode is not None and event in MODE_EVENTS:
            payload["permission_mode"] = self._permission_mode()
        payload.update(fields)
        return payload

    async def run_event(self, entries: list[HookEntry], payload: dict[str, Any]) -> list[HookOutcome]:
        """Run the entries concurrently; outcomes in configuration order."""
        if not entries:
            return []
        # A hook runs where the session is (a shell's `cd` moves it); the project's variables name the root.
        here = self.current_dir()
        project = (("CLAUDE_PROJECT_DIR", str(self.cwd)), ("AGENT_PROJECT_DIR", str(self.cwd)))
        files = self._env_files(str(payload.get("hook_event_name")), len(entries))
        entries = [dataclasses.replace(e, run_env=project + ((("CLAUDE_ENV_FILE", files[i]),) if files else ()))
                   for i, e in enumerate(entries)]
        return list(await asyncio.gather(*(self.executor(e, payload, here) for e in entries)))

    def current_dir(self) -> Path:
        return self._current_dir() if self._current_dir is not None else self.cwd

    def _env_files(self, event: str, count: int) -> list[str]:
        """Each hook's CLAUDE_ENV_FILE for the events that have one (none when the folder cannot be made)."""
        if self._env_folder is None or event not in ENV_FILE_EVENTS:
            return []
        folder = self._env_folder()
        try:
            ensure_private_dir(folder)
        except OSError as exc:  # no file to offer: the hooks still run
            trace("hooks.env_folder", error=type(exc).__name__)
            return []
        clear_files(folder, event)
        return [str(env_file(folder, event, i)) for i in range(count)]

    def _failed(self, label: str, outcome: HookOutcome) -> None:
        detail = _clip(outcome.stderr) or _clip(outcome.stdout)
        self.report(f"[hooks] {label} failed (exit {outcome.exit_code}){': ' + detail if detail else ''}")

    # -- events --
    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        return await self._pre_decision("PreToolUse", name, tool_name=name, tool_input=input, tool_use_id=tool_use_id)

    async def pre_skill_shell_command(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self._pre_decision("PreSkillShellCommand", str(fields.get("tool_name") or "Bash"), **fields)

    async def _pre_decision(self, event: str, name: str, **fields: Any) -> HookDecision | None:
        """PreToolUse's contract (PreSkillShellCommand and PreModelSwitch share it): deny (JSON or exit 2), or
        allow/ask, updatedInput and additionalContext, the hooks' answers folded by `merge_pre`; None when no
        hook had anything to say."""
        entries = self.entries(event, name)
        if not entries:
            return None
        outcomes = await self.run_event(entries, self._payload(event, **fields))
        decision: HookDecision | None = None
        for entry, out in zip(entries, outcomes, strict=True):
            answer = pre_tool_decision(json_lines(out.stdout)) if out.exit_code == 0 else \
                self._pre_failure(event, name, entry, out)
            decision = merge_pre(decision, answer)
        said = "allow" if decision is None else "deny" if decision.action == "deny" else decision.permission or "allow"
        trace("hooks.pre", tool=name, count=len(outcomes), decision=said,
              exit=",".join(str(o.exit_code) for o in outcomes))
        return decision

    def _pre_failure(self, event: str, name: str, entry: HookEntry, out: HookOutcome) -> HookDecision | None:
        """A hook that did not exit 0: a denial when its JSON says so, on exit 2 (Claude Code's words: the
        command, then its stderr) or with `denyOnFailure`; otherwise a failure reported, no decision."""
        reason = next((r for r in map(_pre_deny, json_lines(out.stdout)) if r is not None), None)
        if reason is None and out.exit_code == 2:
            said = out.stderr if out.stderr.strip() else out.stdout
            reason = f"[{entry.command}]: {said[:MAX_REASON_CHARS] if said.strip() else 'No stderr output'}"
        if reason is None and entry.deny_on_failure:
            reason = _clip(out.stderr) or f"{event} hook failed (exit {out.exit_code})"
        if reason is None:
            self._failed(f"{event} for {name}", out)
            return None
        return HookDecision("deny", reason)

    async def post_tool_use(
        self, name: str, input: dict[str, Any], tool_use_id: str, result: Any, is_error: bool,
        duration_ms: int | None = None,
    ) -> HookDecision | None:
        # tool_is_error: this agent's field from before PostToolUseFailure existed (always false now).
        fields = {"tool_name": name, "tool_input": input, "tool_use_id": tool_use_id, "tool_response": result,
                  "tool_is_error": is_error}
        if duration_ms is not None:
            fields["duration_ms"] = duration_ms
        return await self._after_tool("PostToolUse", name, fields)

    async def post_tool_use_failure(self, name: str, input: dict[str, Any], tool_use_id: str, error: str,
                                    is_interrupt: bool, duration_ms: int) -> HookDecision | None:
        fields = {"tool_name": name, "tool_input": input, "tool_use_id": tool_use_id, "error": error,
                  "is_interrupt": is_interrupt, "duration_ms": duration_ms}
        return await self._after_tool("PostToolUseFailure", name, fields)

    async def _after_tool(self, event: str, name: str, fields: dict[str, Any]) -> HookDecision | None:
        """PostToolUse/PostToolUseFailure: the call already ran; `decision: block` (its reason) and
        `additionalContext` go to the model after the result, with Claude Code's label."""
        entries = self.entries(event, name)
        if not entries:
            return None
        outcomes = await self.run_event(entries, self._payload(event, **fields))
        notes: list[str] = []
        for out in outcomes:
            obj = self._control(event, out)
            if obj.get("decision") == "block":
                notes.append(_clip(_str(obj.get("reason"))) or f"Blocked by {event} hook")
            elif out.exit_code == 2:
                notes.append(_clip(out.stderr) or f"{event} hook exited with code 2")
            elif out.exit_code != 0:
                self._failed(f"{event} for {name}", out)
            if _additional_context(obj):
                notes.append(_clip(_additional_context(obj)))
        trace("hooks.post" if event == "PostToolUse" else "hooks.post_failure", tool=name, count=len(outcomes),
              exit=",".join(str(o.exit_code) for o in outcomes))
        if not notes:
            return None
        return HookDecision("allow", additional_context=f"{event}:{name} hook additional context: " + "\n".join(notes))

    def _control(self, event: str, out: HookOutcome) -> dict[str, Any]:
        """The hook's JSON control output (its last JSON line); `systemMessage` is shown to the user."""
        objs = json_lines(out.stdout)
        obj = objs[0] if objs else {}
        if _str(obj.get("systemMessage")):
            self.report(f"[{event} hook] {_clip(_str(obj.get('systemMessage')))}")
        return obj

    async def _notify(self, event: str, target: str, /, **fields: Any) -> None:
        """An event whose output only informs (SessionEnd, PreCompact, PostCompact): failures are reported."""
        entries = self.entries(event, target)
        if not entries:
            return
        outcomes = await self.run_event(entries, self._payload(event, **fields))
        for out in outcomes:
            obj = self._control(event, out)
            if out.exit_code != 0:
                self._failed(event, out)
            elif event in ("CwdChanged", "FileChanged"):
                self.file_watch.add(watch_paths_from(obj))
        trace("hooks.notify", event=event, count=len(outcomes), exit=",".join(str(o.exit_code) for o in outcomes))

    async def pre_compact(self, trigger: str, custom_instructions: str | None) -> None:
        await self._notify("PreCompact", trigger, trigger=trigger, custom_instructions=custom_instructions)

    async def post_compact(self, trigger: str, compact_summary: str) -> None:
        await self._notify("PostCompact", trigger, trigger=trigger, compact_summary=compact_summary)

    async def session_end(self, reason: str) -> None:
        await self._notify("SessionEnd", reason, reason=reason)

    async def setup(self, trigger: str) -> None:
        # Its additionalContext is not sent in a -p run by 2.1.332 (recorded in setup.json): only run it.
        await self._notify("Setup", trigger, trigger=trigger)

    async def _context_only(self, event: str, target: str | None, **fields: Any) -> HookDecision | None:
        """An event whose output may only add context for the model (PostToolBatch, SubagentStart)."""
        entries = self.entries(event, target)
        if not entries:
            return None
        context: list[str] = []
        for out in await self.run_event(entries, self._payload(event, **fields)):
            obj = self._control(event, out)
            if out.exit_code != 0:
                self._failed(event, out)
            elif _additional_context(obj):
                context.append(_clip(_additional_context(obj)))
        trace("hooks.context", event=event, count=len(entries), context_chars=sum(map(len, context)))
        return HookDecision("allow", additional_context="\n\n".join(context))

    async def post_tool_batch(self, tool_calls: list[dict[str, Any]]) -> HookDecision | None:
        return await self._context_only("PostToolBatch", None, tool_calls=tool_calls)

    async def subagent_start(self, agent_id: str, agent_type: str) -> HookDecision | None:
        return await self._context_only("SubagentStart", agent_type, agent_id=agent_id, agent_type=agent_type)

    async def stop_failure(self, error: str, error_details: str, last_assistant_message: str) -> None:
        await self._notify("StopFailure", error, error=error, error_details=error_details,
                           last_assistant_message=last_assistant_message)

    def wants(self, event: str) -> bool:
        return bool(self.entries(event))

    async def pre_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self._pre_decision("PreModelSwitch", _switch_target(fields), **fields)

    async def elicitation(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return await self._elicitation_answer("Elicitation", fields)

    async def elicitation_result(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return await self._elicitation_answer("ElicitationResult", fields)

    async def _elicitation_answer(self, event: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        """`hookSpecificOutput.action` (accept, decline, cancel) with its `content`; exit code 2 declines."""
        entries = self.entries(event, str(fields.get("mcp_server_name") or ""))
        if not entries:
            return None
        for out in await self.run_event(entries, self._payload(event, **fields)):
            if out.exit_code == 2:
                return {"action": "decline"}
            if out.exit_code != 0:
                self._failed(event, out)
                continue
            for obj in json_lines(out.stdout):
                spec = _specific(obj)
                if spec.get("action") in ("accept", "decline", "cancel"):
                    content = spec.get("content")
                    accepted = spec["action"] == "accept" and isinstance(content, dict)
                    return {"action": spec["action"], **({"content": content} if accepted else {})}
        return None

    async def post_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self._context_only("PostModelSwitch", _switch_target(fields), **fields)

    async def observe(self, event: str, target: str, fields: dict[str, Any]) -> None:
        if event in OBSERVED_EVENTS:
            await self._notify(event, target, **fields)

    async def poll_files(self) -> None:
        if hooks_disabled():
            return
        await self._decide_config()
        matchers = [e.matcher for e in self.config().get("FileChanged", [])]
        if not matchers and not self.file_watch.extra:
            return
        paths = watched_paths(matchers, self.file_watch.extra, self.current_dir())
        for path, change in self.file_watch.changes(paths):
            await self._notify("FileChanged", Path(path).name, file_path=path, event=change)

    async def message_display(self, fields: dict[str, Any]) -> str | None:
        """Each hook may replace the shown text (`hookSpecificOutput.displayContent`); the last one that does
        wins, as in Claude Code. A failing hook leaves the original."""
        entries = self.entries("MessageDisplay")
        if not entries:
            return None
        shown: str | None = None
        for out in await self.run_event(entries, self._payload("MessageDisplay", **fields)):
            if out.exit_code != 0:
                self._failed("MessageDisplay", out)
                continue
            value = next((v for obj in json_lines(out.stdout)
                          if isinstance(v := _specific(obj).get("displayContent"), str)), None)
            shown = value if value is not None else shown
        return shown

    async def notification(self, message: str, notification_type: str) -> None:
        """Claude Code's Notification event; its matcher applies to the notification type."""
        await self._notify("Notification", notification_type, message=message, notification_type=notification_type)

    async def run_stop(self, stop_hook_active: bool, last_assistant_text: str = "", event: str = "Stop",
                       extra: dict[str, Any] | None = None) -> StopResult:
        """Stop, or SubagentStop (with the agent's fields in `extra`): same control output."""
        entries = self.entries(event)
        if not entries:
            return StopResult()
        payload = self._payload(
            event, stop_hook_active=stop_hook_active, last_assistant_message=last_assistant_text, **(extra or {})
        )
        outcomes = await self.run_event(entries, payload)
        result = StopResult(count=len(outcomes), outcomes=outcomes)
        feedback: list[str] = []
        for out in outcomes:
            obj = self._control(event, out)
            if obj.get("continue") is False:
                result.prevent_continuation = True
                if result.stop_reason is None and _str(obj.get("stopReason")):
                    result.stop_reason = _str(obj.get("stopReason"))
            elif obj.get("decision") == "block":
                feedback.append(_clip(_str(obj.get("reason"))) or f"Blocked by {event} hook")
            elif out.exit_code == 2:
                feedback.append(_clip(out.stderr) or _clip(out.stdout) or f"{event} hook blocked (exit 2)")
            elif out.exit_code != 0:
                self._failed(event, out)
        if feedback:
            result.blocking_feedback = "\n".join(feedback)
        return result

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        return await self._stop_decision("Stop", stop_hook_active, last_assistant_text, None)

    async def subagent_stop(self, last_assistant_text: str, stop_hook_active: bool,
                            agent: dict[str, Any]) -> HookDecision | None:
        return await self._stop_decision("SubagentStop", stop_hook_active, last_assistant_text, agent)

    async def _stop_decision(self, event: str, stop_hook_active: bool, last_assistant_text: str,
                             extra: dict[str, Any] | None) -> HookDecision | None:
        result = await self.run_stop(stop_hook_active, last_assistant_text, event, extra)
        if not result.count:
            return None
        decision: HookDecision | None = None
        if result.prevent_continuation:
            decision = HookDecision("stop", result.stop_reason or "")
        elif result.blocking_feedback:
            decision = HookDecision("block", result.blocking_feedback)
        trace("hooks.stop" if event == "Stop" else "hooks.subagent_stop", count=result.count, decision=decision.action if decision else "allow")
        return decision

    async def _context_event(
        self, event: str, **fields: Any
    ) -> tuple[list[HookOutcome], str | None, list[str]]:
        """Run a prompt/session event: (outcomes, deny reason or None, additional context parts)."""
        entries = self.entries(event, fields.get("source") if event == "SessionStart" else None)
        if not entries:
            return [], None, []
        outcomes = await self.run_event(entries, self._payload(event, **fields))
        deny: str | None = None
        context: list[str] = []
        for out in outcomes:
            obj = self._control(event, out)
            if event == "SessionStart" and out.exit_code == 0:
                self.file_watch.add(watch_paths_from(obj))
            reason: str | None = None
            if obj.get("continue") is False:
                reason = _str(obj.get("stopReason")) or f"stopped by {event} hook"
            elif obj.get("decision") == "block":
                reason = _str(obj.get("reason")) or f"blocked by {event} hook"
            elif out.exit_code == 2:
                reason = _clip(out.stderr) or _clip(out.stdout) or f"blocked by {event} hook (exit 2)"
            elif out.exit_code != 0:
                self._failed(event, out)
            elif obj:
                if _additional_context(obj):
                    context.append(_clip(_additional_context(obj)))
            elif out.stdout.strip():
                context.append(_clip(out.stdout))
            if reason is not None and deny is None:
                deny = reason
        return outcomes, deny, context

    async def user_prompt_submit(self, prompt: str) -> HookDecision | None:
        outcomes, deny, context = await self._context_event("UserPromptSubmit", prompt=prompt)
        if not outcomes:
            return None
        decision = (
            HookDecision("deny", deny)
            if deny is not None
            else HookDecision("allow", additional_context="\n\n".join(context))
        )
        trace(
            "hooks.prompt",
            count=len(outcomes),
            decision=decision.action,
            context_chars=len(decision.additional_context),
        )
        return decision

    async def permission_request(self, name: str, input: dict[str, Any]) -> HookDecision | None:
        """Claude Code's PermissionRequest: `hookSpecificOutput.decision` {behavior allow|deny, updatedInput,
        message}; the first hook that decides wins."""
        entries = self.entries("PermissionRequest", name)
        if not entries:
            return None
        payload = self._payload("PermissionRequest", tool_name=name, tool_input=input)
        for out in await self.run_event(entries, payload):
            obj = self._control("PermissionRequest", out)
            if out.exit_code != 0:
                self._failed(f"PermissionRequest for {name}", out)
                continue
            decision = _specific(obj).get("decision")
            if not isinstance(decision, dict):
                continue
            behavior = decision.get("behavior")
            if behavior == "allow":
                new = decision.get("updatedInput")
                return HookDecision("allow", updated_input=new if isinstance(new, dict) else None)
            if behavior == "deny":
                return HookDecision("deny", _str(decision.get("message")) or "denied by a PermissionRequest hook")
        return None

    async def user_prompt_expansion(self, fields: dict[str, Any]) -> HookDecision | None:
        outcomes, deny, context = await self._context_event("UserPromptExpansion", **fields)
        if not outcomes:
            return None
        if deny is not None:
            return HookDecision("deny", deny)
        return HookDecision("allow", additional_context="\n\n".join(context))

    async def session_start(self, source: str) -> HookDecision | None:
        outcomes, _deny, context = await self._context_event("SessionStart", source=source)
        if not outcomes:
            return None
        trace("hooks.session_start", source=source, count=len(outcomes), context_chars=sum(map(len, context)))
        return HookDecision("allow", additional_context="\n\n".join(context))
