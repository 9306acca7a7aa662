"""The one settings layer: every settings file, in Claude Code's scopes and order, merged and checked.

Scopes, lowest first (a later scope's scalar wins; lists and maps add up):
  user     `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`), `$AGENT_HOME/settings.json`
  project  `.claude/settings.json`, `.agents/settings.json`
  local    `.claude/settings.local.json`, `.agents/settings.local.json`
  flags    `--settings FILE|JSON` (parsed by the CLI)

Fields read here: `permissions.{allow,ask,deny,defaultMode,additionalDirectories}`, `hooks`, `env`,
`model`, `mcpServers`, `statusLine`, `sandbox` (services/sandbox_settings.py), `secretEnv` (more variable names kept from children) and `passEnv` (secret
names a user lets through to children; user and flags scopes only). A malformed file or field is one
warning naming the file and the field, and only that part is ignored.

The project and local scopes live inside the repository, so an attacker who controls the repository
controls them. Until the folder is trusted they may only restrict: their deny and ask rules (and a
`plan` default mode) apply; allow rules, a permissive defaultMode, hooks, a status line command, env,
MCP servers, the model and directories are dropped and listed in `ignored` for the one notice line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.sandbox_settings import SandboxSettings, merge_sandbox

SCOPES = ("user", "project", "local", "flags")
UNTRUSTED_SCOPES = ("project", "local")
MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
RESTRICTIVE_MODES = ("default", "plan")
LOCAL_SETTINGS = Path(".agents") / "settings.local.json"


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
    secret_env: list[str] = field(default_factory=list)
    pass_env: list[str] = field(default_factory=list)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  # Claude Code's `sandbox` block
    files: list[SettingsFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # what an untrusted folder asked for and did not get


def user_files(home: Path) -> list[Path]:
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return [claude / "settings.json", home / "settings.json"]


def project_files(cwd: Path) -> list[Path]:
    return [cwd / ".claude" / "settings.json", cwd / ".agents" / "settings.json"]


def local_files(cwd: Path) -> list[Path]:
    return [cwd / ".claude" / "settings.local.json", cwd / LOCAL_SETTINGS]


def scoped_files(cwd: Path, home: Path) -> list[tuple[str, Path]]:
    return (
        [("user", p) for p in user_files(home)]
        + [("project", p) for p in project_files(cwd)]
        + [("local", p) for p in local_files(cwd)]
    )


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


def _merge_file(out: MergedSettings, f: SettingsFile, trusted: bool) -> None:
    data, src = f.data, f.path
    restricted = f.scope in UNTRUSTED_SCOPES and not trusted
    w = out.warnings

    def where(name: str) -> str:
        return f"settings {src}: field {name!r}"

    perms = data.get("permissions")
    if perms is not None and not isinstance(perms, dict):
        w.append(f"{where('permissions')}: must be an object; ignored")
        perms = None
    for key in ("allow", "ask", "deny"):
        if perms is None or key not in perms:
            continue
        rules = _strings(perms[key], where(f"permissions.{key}"), w)
        if key == "allow" and restricted and rules:
            out.ignored.append(f"{len(rules)} allow rule{'s' * (len(rules) != 1)}")
            continue
        getattr(out, key).extend(rules)
    if perms is not None and "defaultMode" in perms:
        mode = perms["defaultMode"]
        if not isinstance(mode, str) or mode not in MODES:
            w.append(f"{where('permissions.defaultMode')}: must be one of {', '.join(MODES)}; ignored")
        elif restricted and mode not in RESTRICTIVE_MODES:
            out.ignored.append(f"defaultMode {mode}")
        else:
            out.default_mode = mode
    if perms is not None and "additionalDirectories" in perms:
        dirs = _strings(perms["additionalDirectories"], where("permissions.additionalDirectories"), w)
        if restricted and dirs:
            out.ignored.append("additionalDirectories")
        else:
            out.additional_dirs.extend(dirs)
    if "hooks" in data:
        if not isinstance(data["hooks"], dict):
            w.append(f"{where('hooks')}: must be an object; ignored")
        elif restricted:
            if data["hooks"]:
                out.ignored.append(f"hooks ({src})")
        else:
            out.hooks.append((src, data["hooks"]))
    if "statusLine" in data:
        line = data["statusLine"]
        if not (isinstance(line, dict) and line.get("type", "command") == "command"
                and isinstance(line.get("command"), str) and line["command"].strip()):
            w.append(f"{where('statusLine')}: must be {{\"type\": \"command\", \"command\": \"...\"}}; ignored")
        elif "padding" in line and (not isinstance(line["padding"], int) or isinstance(line["padding"], bool)
                                    or not 0 <= line["padding"] <= 20):
            w.append(f"{where('statusLine.padding')}: must be a number from 0 to 20; ignored")
        elif restricted:
            out.ignored.append(f"statusLine command ({src})")  # a command from the repository: runs once trusted
        else:
            out.status_line = {"command": line["command"], "padding": line.get("padding", 0), "source": str(src)}
    if "env" in data:
        env = data["env"]
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            w.append(f"{where('env')}: must be an object of strings; ignored")
        elif restricted:
            if env:
                out.ignored.append("env " + ",".join(sorted(env)))
        else:
            out.env.update(env)
    if "model" in data:
        if not isinstance(data["model"], str) or not data["model"].strip():
            w.append(f"{where('model')}: must be a non-empty string; ignored")
        elif restricted:
            out.ignored.append(f"model {data['model'].strip()}")  # what you pay for is your choice
        else:
            out.model = data["model"].strip()
    if "mcpServers" in data:
        servers = data["mcpServers"]
        if not isinstance(servers, dict):
            w.append(f"{where('mcpServers')}: must be an object; ignored")
        elif restricted:
            if servers:
                out.ignored.append(f"MCP servers {', '.join(sorted(servers))}")
        else:
            for name, raw in servers.items():
                out.mcp_servers[name] = (src, raw)
    if "sandbox" in data:
        merge_sandbox(out.sandbox, data["sandbox"], scope=f.scope, restricted=restricted, src=src,
                      warnings=w, ignored=out.ignored)
    if "secretEnv" in data:
        out.secret_env.extend(_strings(data["secretEnv"], where("secretEnv"), w))
    if "passEnv" in data:
        names = _strings(data["passEnv"], where("passEnv"), w)
        # Letting a secret through is a user decision: a repository's files never get to make it.
        if f.scope in ("user", "flags"):
            out.pass_env.extend(names)
        elif names:
            out.ignored.append(f"passEnv ({src}: only user settings may pass secrets through)")


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
