"""The one settings layer: every settings file, in Claude Code's scopes and order, merged and checked.

Scopes, lowest first (a later scope's scalar wins; lists and maps add up):
  user     `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`), `$AGENT_HOME/settings.json`
  project  `.claude/settings.json`, `.agents/settings.json`
  local    `.claude/settings.local.json`, `.agents/settings.local.json`
  flags    `--settings FILE|JSON` (parsed by the CLI)

Fields read here: `permissions.{allow,ask,deny,defaultMode,additionalDirectories}`, `hooks`, `env`,
`model`, `mcpServers`, `statusLine`, `outputStyle`, `sandbox` (services/sandbox_settings.py), `secretEnv` (more variable names kept from children) and `passEnv` (secret
names a user lets through to children; user and flags scopes only). A malformed file or field is one
warning naming the file and the field, and only that part is ignored.

The project and local scopes live inside the repository, so an attacker who controls the repository
controls them. Until the folder is trusted they may only restrict: their deny and ask rules (and a
`plan` default mode) apply; allow rules, a permissive defaultMode, hooks, a status line command, env,
MCP servers, the model and directories are dropped and listed in `ignored` for the one notice line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.loop_guard import LoopGuardOptions, stricter
from services.loop_guard import parse_options as parse_loop_guard
from services.notify import CHANNELS as NOTIF_CHANNELS
from services.sandbox_settings import SandboxSettings, merge_sandbox
from services.settings_files import scoped_files

SCOPES = ("user", "project", "local", "flags")
UNTRUSTED_SCOPES = ("project", "local")
MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
RESTRICTIVE_MODES = ("default", "plan")


@dataclass
class SettingsFile:
    scope: str
    path: str  # a file path, or "--settings" for inline JSON
    data: dict[str, Any]


@dataclass
class MergedSettings:
    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    default_mode: str | None = None
    additional_dirs: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    mcp_servers: dict[str, tuple[str, Any]] = field(default_factory=dict)  # name -> (source file, raw)
    hooks: list[tuple[str, Any]] = field(default_factory=list)  # (source file, raw `hooks` table)
    status_line: dict[str, Any] | None = None  # Claude Code's `statusLine`: {type: command, command, padding}
    output_style: str | None = None  # Claude Code's `outputStyle` (a style's name)
    output_style_source: str = ""  # the file that set it, for a warning naming it
    max_budget_usd: float | None = None  # `maxBudgetUsd`: the session's spending cap (the flag wins)
    loop_guard: LoopGuardOptions = field(default_factory=LoopGuardOptions)  # `loopGuard`: repeats told, stopped
    notif_channel: str | None = None  # Claude Code's `preferredNotifChannel` (services/notify.py)
    secret_env: list[str] = field(default_factory=list)
    pass_env: list[str] = field(default_factory=list)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # Claude Code's `sandbox` block
    files: list[SettingsFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # what an untrusted folder asked for and did not get


def read_json_object(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    """A JSON object from a file; None when missing; a warning (and None) when unreadable or malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"settings {path}: cannot be read ({exc.__class__.__name__}); ignored")
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"settings {path}: invalid JSON ({exc.msg} at line {exc.lineno}); ignored")
        return None
    if not isinstance(data, dict):
        warnings.append(f"settings {path}: the top level must be a JSON object; ignored")
        return None
    return data


def _strings(value: Any, where: str, warnings: list[str]) -> list[str]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    warnings.append(f"{where}: must be a list of strings; ignored")
    return []


@dataclass
class _FileMerge:
    """One file being merged into `out`: where its fields land and what an untrusted scope may not set."""

    out: MergedSettings
    file: SettingsFile
    restricted: bool

    @property
    def src(self) -> str:
        return self.file.path

    def where(self, name: str) -> str:
        return f"settings {self.src}: field {name!r}"

    def warn(self, name: str, problem: str) -> None:
        self.out.warnings.append(f"{self.where(name)}: {problem}; ignored")

    def strings(self, value: Any, name: str) -> list[str]:
        return _strings(value, self.where(name), self.out.warnings)


def _merge_rules(m: _FileMerge, perms: dict[str, Any]) -> None:
    for key in ("allow", "ask", "deny"):
        if key not in perms:
            continue
        rules = m.strings(perms[key], f"permissions.{key}")
        if key == "allow" and m.restricted and rules:
            m.out.ignored.append(f"{len(rules)} allow rule{'s' * (len(rules) != 1)}")
            continue
        getattr(m.out, key).extend(rules)


def _merge_default_mode(m: _FileMerge, mode: Any) -> None:
    if not isinstance(mode, str) or mode not in MODES:
        m.warn("permissions.defaultMode", f"must be one of {', '.join(MODES)}")
    elif m.restricted and mode not in RESTRICTIVE_MODES:
        m.out.ignored.append(f"defaultMode {mode}")
    else:
        m.out.default_mode = mode


def _merge_permissions(m: _FileMerge, perms: Any) -> None:
    if not isinstance(perms, dict):
        m.warn("permissions", "must be an object")
        return
    _merge_rules(m, perms)
    if "defaultMode" in perms:
        _merge_default_mode(m, perms["defaultMode"])
    if "additionalDirectories" in perms:
        dirs = m.strings(perms["additionalDirectories"], "permissions.additionalDirectories")
        if m.restricted and dirs:
            m.out.ignored.append("additionalDirectories")
        else:
            m.out.additional_dirs.extend(dirs)


def _merge_hooks(m: _FileMerge, hooks: Any) -> None:
    if not isinstance(hooks, dict):
        m.warn("hooks", "must be an object")
    elif m.restricted:
        if hooks:
            m.out.ignored.append(f"hooks ({m.src})")
    else:
        m.out.hooks.append((m.src, hooks))


def _status_line_problem(line: Any) -> tuple[str, str] | None:
    """(field, problem) when `statusLine` is unusable, else None."""
    if not (isinstance(line, dict) and line.get("type", "command") == "command"
            and isinstance(line.get("command"), str) and line["command"].strip()):
        return "statusLine", 'must be {"type": "command", "command": "..."}'
    padding = line.get("padding", 0)
    if not isinstance(padding, int) or isinstance(padding, bool) or not 0 <= padding <= 20:
        return "statusLine.padding", "must be a number from 0 to 20"
    return None


def _merge_status_line(m: _FileMerge, line: Any) -> None:
    problem = _status_line_problem(line)
    if problem is not None:
        m.warn(*problem)
    elif m.restricted:
        m.out.ignored.append(f"statusLine command ({m.src})")  # a command from the repository: runs once trusted
    else:
        m.out.status_line = {"command": line["command"], "padding": line.get("padding", 0), "source": str(m.src)}


def _merge_output_style(m: _FileMerge, style: Any) -> None:
    if not isinstance(style, str) or not style.strip():
        m.warn("outputStyle", "must be a style's name")
    else:  # only words for the model, as the repository's CLAUDE.md: allowed before trust too
        m.out.output_style, m.out.output_style_source = style.strip(), str(m.src)


def _merge_env(m: _FileMerge, env: Any) -> None:
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        m.warn("env", "must be an object of strings")
    elif m.restricted:
        if env:
            m.out.ignored.append("env " + ",".join(sorted(env)))
    else:
        m.out.env.update(env)


def _merge_model(m: _FileMerge, model: Any) -> None:
    if not isinstance(model, str) or not model.strip():
        m.warn("model", "must be a non-empty string")
    elif m.restricted:
        m.out.ignored.append(f"model {model.strip()}")  # what you pay for is your choice
    else:
        m.out.model = model.strip()


def _merge_max_budget(m: _FileMerge, raw: Any) -> None:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw < float("inf"):
        m.warn("maxBudgetUsd", "must be a positive number of US dollars")
    elif m.restricted and m.out.max_budget_usd is not None and raw > m.out.max_budget_usd:
        m.out.ignored.append(f"maxBudgetUsd {raw}")  # an untrusted folder may lower the cap, never raise it
    else:
        m.out.max_budget_usd = float(raw)


def _merge_loop_guard(m: _FileMerge, raw: Any) -> None:
    options, problem = parse_loop_guard(raw)
    if options is None:
        m.warn("loopGuard", problem or "invalid")
    elif m.restricted and not stricter(m.out.loop_guard, options):
        m.out.ignored.append("loopGuard (an untrusted folder may only make it stricter)")
    else:
        m.out.loop_guard = options


def _merge_notif_channel(m: _FileMerge, raw: Any) -> None:
    if raw not in NOTIF_CHANNELS:
        m.warn("preferredNotifChannel", f"must be one of {', '.join(NOTIF_CHANNELS)}")
    else:
        m.out.notif_channel = raw


def _merge_mcp_servers(m: _FileMerge, servers: Any) -> None:
    if not isinstance(servers, dict):
        m.warn("mcpServers", "must be an object")
    elif m.restricted:
        if servers:
            m.out.ignored.append(f"MCP servers {', '.join(sorted(servers))}")
    else:
        for name, raw in servers.items():
            m.out.mcp_servers[name] = (m.src, raw)


def _merge_sandbox(m: _FileMerge, raw: Any) -> None:
    merge_sandbox(m.out.sandbox, raw, scope=m.file.scope, restricted=m.restricted, src=m.src,
                  warnings=m.out.warnings, ignored=m.out.ignored)


def _merge_secret_env(m: _FileMerge, raw: Any) -> None:
    m.out.secret_env.extend(m.strings(raw, "secretEnv"))


def _merge_pass_env(m: _FileMerge, raw: Any) -> None:
    names = m.strings(raw, "passEnv")
    # Letting a secret through is a user decision: a repository's files never get to make it.
    if m.file.scope in ("user", "flags"):
        m.out.pass_env.extend(names)
    elif names:
        m.out.ignored.append(f"passEnv ({m.src}: only user settings may pass secrets through)")


# Each top-level field a settings file may carry, in the order they are merged.
_FIELDS: tuple[tuple[str, Callable[[_FileMerge, Any], None]], ...] = (
    ("permissions", _merge_permissions),
    ("hooks", _merge_hooks),
    ("statusLine", _merge_status_line),
    ("outputStyle", _merge_output_style),
    ("env", _merge_env),
    ("model", _merge_model),
    ("maxBudgetUsd", _merge_max_budget),
    ("loopGuard", _merge_loop_guard),
    ("preferredNotifChannel", _merge_notif_channel),
    ("mcpServers", _merge_mcp_servers),
    ("sandbox", _merge_sandbox),
    ("secretEnv", _merge_secret_env),
    ("passEnv", _merge_pass_env),
)


def _merge_file(out: MergedSettings, f: SettingsFile, trusted: bool) -> None:
    m = _FileMerge(out, f, restricted=f.scope in UNTRUSTED_SCOPES and not trusted)
    for name, merge_field in _FIELDS:
        if name in f.data and not (name == "permissions" and f.data[name] is None):
            merge_field(m, f.data[name])


def merge(files: list[SettingsFile], trusted: bool, warnings: list[str] | None = None) -> MergedSettings:
    out = MergedSettings(files=list(files), warnings=list(warnings or []))
    for f in sorted(files, key=lambda f: SCOPES.index(f.scope)):
        _merge_file(out, f, trusted)
    return out


def load_settings(
    cwd: Path, home: Path, *, trusted: bool, extra: list[dict[str, Any]] | None = None,
    sources: list[str] | None = None,
) -> MergedSettings:
    """Every scope's settings for `cwd`, merged; the project and local scopes only restrict unless trusted.

    `extra`: flag-scope objects (`--settings`, parsed by the CLI); `sources`: Claude Code's
    `--setting-sources` (which of user/project/local to read; the flags scope always counts)."""
    warnings: list[str] = []
    files: list[SettingsFile] = []
    for scope, path in scoped_files(cwd, home):
        if sources is not None and scope not in sources:
            continue
        data = read_json_object(path, warnings)
        if data is not None:
            files.append(SettingsFile(scope, str(path), data))
    files.extend(SettingsFile("flags", "--settings", d) for d in extra or [] if isinstance(d, dict))
    return merge(files, trusted, warnings)


def save_local_rule(path: Path, rule: str) -> Path:
    """Append an allow rule to a local settings file (an "always" answer); returns the file.

    A malformed existing file is left alone (OSError/ValueError propagate to the caller, who says so).
    """
    from services.rule_store import add_rule

    add_rule(path, rule)
    return path
