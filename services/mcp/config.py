"""MCP server configuration, in Claude Code's scopes (a later one replaces a server of the same name):

- user: `mcpServers` in `<AGENT_HOME>/mcp.json` (every project);
- project: `mcpServers` in the project's `.mcp.json` (shared through the repository);
- local: `projects["<project path>"].mcpServers` in `<AGENT_HOME>/mcp.json` (this project, this user);
- then each file in `MCP_CONFIG` (comma-separated; like `--mcp-config`).

Format: `{"mcpServers": {"<id>": {...}}}` where a server is either stdio
`{"command": str, "args"?: [str], "env"?: {str: str}}` or streamable HTTP
`{"type": "http", "url": str, "headers"?: {str: str}}`. `${VAR}` in any string value expands from the
user's own environment (an unset variable expands to ""; a `.env` or settings `env` value never does),
and never to one of the agent's secrets (`services/credentials.py`): those expand to "" with a warning.
The project's `.mcp.json` is read only in a trusted folder. A bad file or a bad server yields a warning
that names the file and the problem; only what is bad is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import agent_environ
from services.credentials import is_secret, secret_references

PROJECT_CONFIG = ".mcp.json"
USER_CONFIG = "mcp.json"  # in the agent home: user scope at the top, local scope under "projects"
SCOPES = ("local", "project", "user")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class ServerConfig:
    name: str
    transport: str  # "stdio" | "http" | "sdk" (a server inside the SDK host, reached by mcp_message)
    source: str  # the file it came from
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    scope: str = "project"  # user | project | local | config (MCP_CONFIG)
    always_load: bool | None = None  # Claude Code's `alwaysLoad`: true keeps the tools out of tool search


def expand_vars(value: str, environ: Mapping[str, str]) -> str:
    return _VAR.sub(lambda m: "" if is_secret(m.group(1)) else environ.get(m.group(1), ""), value)


def _secret_refs(raw: Any) -> list[str]:
    if isinstance(raw, str):
        return secret_references(raw)
    if isinstance(raw, dict):
        return [n for v in raw.values() for n in _secret_refs(v)]
    if isinstance(raw, list):
        return [n for v in raw for n in _secret_refs(v)]
    return []


def config_paths(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """The project's `.mcp.json` first, then the `MCP_CONFIG` entries (relative ones from cwd)."""
    paths = [cwd / PROJECT_CONFIG]
    for part in (environ.get("MCP_CONFIG") or "").split(","):
        part = part.strip()
        if part:
            p = Path(part).expanduser()
            paths.append(p if p.is_absolute() else cwd / p)
    return paths


def _str_map(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    return dict(value)


def parse_server(name: str, raw: Any, source: str, environ: Mapping[str, str]) -> ServerConfig:
    """One server entry, or ValueError with the problem."""
    if not isinstance(raw, dict):
        raise ValueError("must be an object")
    always = raw.get("alwaysLoad")
    if always is not None and not isinstance(always, bool):
        raise ValueError('"alwaysLoad" must be true or false')
    cfg = _parse_transport(name, raw, source, environ)
    cfg.always_load = always
    return cfg


def _parse_transport(name: str, raw: dict[str, Any], source: str, environ: Mapping[str, str]) -> ServerConfig:
    kind = raw.get("type", "stdio")
    if kind in ("http", "streamable-http", "streamable_http", "streamableHttp"):
        url = raw.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError('an http server needs a non-empty "url" string')
        headers = _str_map(raw.get("headers", {}))
        if headers is None:
            raise ValueError('"headers" must be an object of strings')
        return ServerConfig(
            name, "http", source,
            url=expand_vars(url, environ),
            headers={k: expand_vars(v, environ) for k, v in headers.items()},
        )
    if kind == "sdk":  # hosted inside the Agent SDK's process; reached through the control protocol
        return ServerConfig(name, "sdk", source)
    if kind != "stdio":
        raise ValueError(f'unsupported "type" {kind!r} (use "stdio" or "http")')
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError('needs a non-empty "command" string')
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError('"args" must be an array of strings')
    env = _str_map(raw.get("env", {}))
    if env is None:
        raise ValueError('"env" must be an object of strings')
    return ServerConfig(
        name, "stdio", source,
        command=expand_vars(command, environ),
        args=[expand_vars(a, environ) for a in args],
        env={k: expand_vars(v, environ) for k, v in env.items()},
    )


def read_json(path: Path) -> tuple[Any, str | None]:
    """(data, None), or (None, problem) for a file that cannot be read or parsed; a missing file is {}."""
    if not path.is_file():
        return {}, None
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read ({exc})"
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at line {exc.lineno})"


def parse_servers(table: Any, where: str, environ: Mapping[str, str], scope: str,
                  source: str) -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one `mcpServers` object; `where` names it in warnings (file and key)."""
    if not isinstance(table, dict):
        return {}, [f'MCP config {where}: "mcpServers" must be an object; skipped']
    servers: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for name, raw in table.items():
        if not name.strip():
            warnings.append(f"MCP config {where}: a server with an empty name; skipped")
            continue
        try:
            cfg = parse_server(name, raw, source, environ)
        except ValueError as exc:
            warnings.append(f'MCP config {where}: server "{name}" {exc}; skipped')
            continue
        cfg.scope = scope
        servers[name] = cfg
        refs = sorted(set(_secret_refs(raw)))
        if refs:
            warnings.append(f'MCP config {where}: server "{name}" refers to the agent\'s secret {", ".join(refs)}; '
                            "it expands to an empty string (list it in the passEnv user setting to allow it)")
    return servers, warnings


def load_data(data: Any, source: str, environ: Mapping[str, str],
              scope: str = "config") -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one parsed config object (`{"mcpServers": {...}}`, e.g. `--mcp-config`), named `source`
    in warnings."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        return {}, [f'MCP config {source}: needs an object with an "mcpServers" object; skipped']
    return parse_servers(data["mcpServers"], source, environ, scope, source)


def load_file(path: Path, environ: Mapping[str, str], scope: str = "project") -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one file (missing file: none) and warnings for what was skipped."""
    data, problem = read_json(path)
    if problem:
        return {}, [f"MCP config {path}: {problem}; skipped"]
    if not data:
        return {}, []
    return load_data(data, str(path), environ, scope)


def user_config_path(home: Path | None = None) -> Path:
    if home is None:
        from services.config import agent_home

        home = agent_home()
    return home / USER_CONFIG


def project_key(cwd: Path) -> str:
    return str(cwd.resolve())


def load_user_file(cwd: Path, environ: Mapping[str, str], home: Path | None = None,
                   ) -> tuple[dict[str, ServerConfig], dict[str, ServerConfig], list[str]]:
    """(user-scope servers, local-scope servers for `cwd`, warnings) from `<AGENT_HOME>/mcp.json`."""
    path = user_config_path(home)
    data, problem = read_json(path)
    if problem:
        return {}, {}, [f"MCP config {path}: {problem}; skipped"]
    if not data:
        return {}, {}, []
    if not isinstance(data, dict):
        return {}, {}, [f"MCP config {path}: must be a JSON object; skipped"]
    user: dict[str, ServerConfig] = {}
    local: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    if "mcpServers" in data:
        user, w = parse_servers(data["mcpServers"], f'{path} "mcpServers"', environ, "user", str(path))
        warnings += w
    project = (data.get("projects") or {}).get(project_key(cwd)) if isinstance(data.get("projects"), dict) else None
    if isinstance(project, dict) and "mcpServers" in project:
        where = f'{path} "projects" / "{project_key(cwd)}" / "mcpServers"'
        local, w = parse_servers(project["mcpServers"], where, environ, "local", str(path))
        warnings += w
    return user, local, warnings


def load_config(
    cwd: Path, environ: Mapping[str, str] | None = None, home: Path | None = None, *, trusted: bool = True,
    settings_servers: Mapping[str, tuple[str, Any]] | None = None,
) -> tuple[dict[str, ServerConfig], list[str]]:
    """All configured servers, settings < user < project < local < MCP_CONFIG files (a later entry replaces
    an earlier one of the same name), and warnings. `home` None: the agent home, unless `environ` is given
    without AGENT_HOME (tests pass a bare environment and mean no user file).

    `settings_servers` are `mcpServers` of the settings layer (already filtered by trust); an untrusted
    folder's `.mcp.json` is skipped (the caller's one notice line says so). Variables expand from the real
    environment only, never from a project's .env."""
    use_home = environ is None or "AGENT_HOME" in environ or home is not None
    environ = agent_environ() if environ is None else environ
    if home is None and "AGENT_HOME" in environ:
        home = Path(environ["AGENT_HOME"]).expanduser()
    servers: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for name, (source, raw) in (settings_servers or {}).items():
        try:
            cfg = parse_server(name, raw, source, environ)
        except ValueError as exc:
            warnings.append(f'settings {source}: field \'mcpServers.{name}\' {exc}; skipped')
            continue
        cfg.scope = "settings"
        servers[name] = cfg
    user: dict[str, ServerConfig] = {}
    local: dict[str, ServerConfig] = {}
    if use_home:
        user, local, user_warnings = load_user_file(cwd, environ, home)
        warnings.extend(user_warnings)
    servers.update(user)
    paths = config_paths(cwd, environ)
    found, warns = load_file(paths[0], environ, "project") if trusted else ({}, [])
    servers.update(found)
    warnings.extend(warns)
    servers.update(local)
    for path in paths[1:]:
        found, warns = load_file(path, environ, "config")
        servers.update(found)
        warnings.extend(warns)
    return servers, warnings
