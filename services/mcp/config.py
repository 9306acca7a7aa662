"""MCP server configuration: `.mcp.json` in the project, then each file in `MCP_CONFIG` (later wins).

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
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.credentials import is_secret, secret_references

PROJECT_CONFIG = ".mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class ServerConfig:
    name: str
    transport: str  # "stdio" | "http"
    source: str  # the file it came from
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)


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


def load_file(path: Path, environ: Mapping[str, str]) -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one file (missing file: none) and warnings for what was skipped."""
    if not path.is_file():
        return {}, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [f"MCP config {path}: cannot read ({exc}); skipped"]
    except json.JSONDecodeError as exc:
        return {}, [f"MCP config {path}: invalid JSON ({exc.msg} at line {exc.lineno}); skipped"]
    return load_data(data, str(path), environ)


def load_data(data: Any, source: str, environ: Mapping[str, str]) -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of one parsed config object (`{"mcpServers": {...}}`), named `source` in warnings."""
    path = source
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        return {}, [f'MCP config {path}: needs an object with an "mcpServers" object; skipped']
    servers: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for name, raw in data["mcpServers"].items():
        if not name.strip():
            warnings.append(f"MCP config {path}: a server with an empty name; skipped")
            continue
        try:
            servers[name] = parse_server(name, raw, str(path), environ)
        except ValueError as exc:
            warnings.append(f'MCP config {path}: server "{name}" {exc}; skipped')
            continue
        refs = sorted(set(_secret_refs(raw)))
        if refs:
            warnings.append(f'MCP config {path}: server "{name}" refers to the agent\'s secret {", ".join(refs)}; '
                            "it expands to an empty string (list it in the passEnv user setting to allow it)")
    return servers, warnings


def load_config(
    cwd: Path, environ: Mapping[str, str] | None = None, *, trusted: bool = True,
    settings_servers: Mapping[str, tuple[str, Any]] | None = None,
) -> tuple[dict[str, ServerConfig], list[str]]:
    """All configured servers (a later file's entry replaces an earlier one of the same id) and warnings.

    `settings_servers` are `mcpServers` of the settings layer (already filtered by trust), read first;
    an untrusted folder's `.mcp.json` is skipped (the caller's one notice line says so)."""
    # Variables expand from the real environment only: never from a project's .env.
    environ = os.environ if environ is None else environ
    servers: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for name, (source, raw) in (settings_servers or {}).items():
        try:
            servers[name] = parse_server(name, raw, source, environ)
        except ValueError as exc:
            warnings.append(f'settings {source}: field \'mcpServers.{name}\' {exc}; skipped')
    for path in config_paths(cwd, environ):
        if not trusted and path == cwd / PROJECT_CONFIG:
            continue
        found, warns = load_file(path, environ)
        servers.update(found)
        warnings.extend(warns)
    return servers, warnings
