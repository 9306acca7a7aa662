"""`agent mcp ...`: manage MCP servers the way `claude mcp` does.

    agent mcp add [-s local|user|project] [-t stdio|http] [-e KEY=VALUE]... [-H "Name: value"]... NAME -- COMMAND [ARGS...]
    agent mcp add -t http NAME URL
    agent mcp add-json [-s SCOPE] NAME JSON
    agent mcp list                      every configured server, health-checked concurrently
    agent mcp get NAME                  one server's details and health
    agent mcp remove [-s SCOPE] NAME

Scopes and files (Claude Code's): `local` (the default: this project, this user) and `user` (every project)
live in `<AGENT_HOME>/mcp.json` (`projects["<path>"].mcpServers` and `mcpServers`), `project` in the
project's `.mcp.json` (meant to be committed). Files are rewritten atomically; other keys are kept.
Exit codes: 0 done, 1 failed (not found, already there, unreadable file), 2 bad usage.
"""

import asyncio
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from services.private_fs import ensure_private_dir

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SCOPE_LABEL = {
    "local": "Local config (private to you in this project)",
    "project": "Project config (shared via .mcp.json)",
    "user": "User config (available in all your projects)",
    "config": "MCP_CONFIG file",
}


class UsageError(Exception):
    pass


class CliError(Exception):
    pass


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


# --- files ---------------------------------------------------------------------------------------


def scope_file(scope: str, cwd: Path) -> Path:
    from services.mcp.config import PROJECT_CONFIG, user_config_path

    return cwd / PROJECT_CONFIG if scope == "project" else user_config_path()


def _load(path: Path) -> dict[str, Any]:
    from services.mcp.config import read_json

    data, problem = read_json(path)
    if problem:
        raise CliError(f"{path}: {problem}; fix or remove it first")
    if not isinstance(data, dict):
        raise CliError(f"{path}: must be a JSON object; fix or remove it first")
    return data


def _table(data: dict[str, Any], scope: str, cwd: Path, create: bool) -> dict[str, Any] | None:
    """The `mcpServers` object of a scope inside its file's data (made when `create`). A key that is there
    with the wrong type is an error, never silently replaced (it would lose what the user wrote)."""
    from services.mcp.config import project_key

    def child(holder: dict[str, Any], key: str, where: str) -> dict[str, Any] | None:
        value = holder.get(key)
        if value is None:
            if not create:
                return None
            value = holder[key] = {}
        if not isinstance(value, dict):
            raise CliError(f"{scope_file(scope, cwd)}: {where} must be an object; fix it first")
        return value

    holder: dict[str, Any] | None = data
    if scope == "local":
        projects = child(data, "projects", '"projects"')
        holder = child(projects, project_key(cwd), f'"projects" / "{project_key(cwd)}"') if projects is not None else None
    return child(holder, "mcpServers", '"mcpServers"') if holder is not None else None


def _save(path: Path, data: dict[str, Any], private: bool) -> None:
    if private:
        ensure_private_dir(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        os.chmod(tmp, 0o600 if private else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_server(scope: str, cwd: Path, name: str, entry: dict[str, Any]) -> Path:
    path = scope_file(scope, cwd)
    data = _load(path)
    table = _table(data, scope, cwd, create=True)
    assert table is not None
    if name in table:
        raise CliError(f"MCP server {name} already exists in {scope} config")
    table[name] = entry
    _save(path, data, private=scope != "project")
    return path


def scopes_of(name: str, cwd: Path) -> list[str]:
    found = []
    for scope in ("local", "project", "user"):
        path = scope_file(scope, cwd)
        try:
            table = _table(_load(path), scope, cwd, create=False)
        except CliError:
            continue
        if table is not None and name in table:
            found.append(scope)
    return found


# --- checks --------------------------------------------------------------------------------------


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise UsageError(f"invalid server name {name!r}: use letters, digits, '-' and '_' (at most 64)")


def _check_scope(scope: str) -> None:
    if scope not in ("local", "user", "project"):
        raise UsageError(f"invalid scope {scope!r}: use local, user or project")


def build_entry(opts: dict[str, Any], target: list[str]) -> dict[str, Any]:
    transport = opts["transport"] or "stdio"
    if transport == "sse":
        raise UsageError("the sse transport is not supported; use http (streamable HTTP)")
    if transport not in ("stdio", "http"):
        raise UsageError(f"invalid transport {transport!r}: use stdio or http")
    if not target:
        raise UsageError("missing the command (stdio) or the URL (http)")
    if transport == "http":
        if len(target) != 1 or not re.match(r"^https?://", target[0]):
            raise UsageError("an http server takes one http:// or https:// URL")
        if opts["env"]:
            raise UsageError("-e sets a stdio server's environment; an http server takes -H headers")
        headers = {}
        for h in opts["header"]:
            key, colon, value = h.partition(":")
            if not colon or not key.strip():
                raise UsageError(f'invalid header {h!r}: use "Name: value"')
            headers[key.strip()] = value.strip()
        entry: dict[str, Any] = {"type": "http", "url": target[0]}
        if headers:
            entry["headers"] = headers
        return entry
    if opts["header"]:
        raise UsageError("-H sets an http server's headers; a stdio server takes -e KEY=VALUE")
    env = {}
    for e in opts["env"]:
        key, eq, value = e.partition("=")
        if not eq or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise UsageError(f"invalid environment variable {e!r}: use KEY=VALUE")
        env[key] = value
    entry = {"type": "stdio", "command": target[0], "args": target[1:]}
    if env:
        entry["env"] = env
    return entry


# --- commands ------------------------------------------------------------------------------------


ScopeOpt = Annotated[str, typer.Option("-s", "--scope", metavar="SCOPE",
                                        help="local (you, this project), user (every project) or project (.mcp.json)")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="the server's name")]

app = typer.Typer(help="Configure and manage MCP servers (Claude Code's `claude mcp`).", no_args_is_help=True,
                  add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


def _run(action: Callable[[Path], int]) -> int:
    """One line and Claude Code's exit codes for what the command itself finds wrong."""
    try:
        return action(Path.cwd().resolve())
    except UsageError as exc:
        _err(f"error: {exc}")
        return 2
    except CliError as exc:
        _err(f"error: {exc}")
        return 1
    except OSError as exc:
        _err(f"error: {exc.filename or ''}: {exc.strerror or exc}")
        return 1


# The server's own flags may follow its command without `--`: unknown options are kept as words.
@app.command("add", context_settings={"ignore_unknown_options": True},
             help="Add a server: NAME -- COMMAND [ARGS...] (stdio), or NAME URL (-t http).")
def add_command(
    name: Annotated[str | None, typer.Argument(metavar="NAME", help="the server's name")] = None,
    target: Annotated[list[str] | None, typer.Argument(metavar="COMMAND [ARGS...] | URL")] = None,
    scope: ScopeOpt = "local",
    transport: Annotated[str | None, typer.Option("-t", "--transport", help="stdio or http")] = None,
    env: Annotated[list[str] | None, typer.Option("-e", "--env", help="KEY=VALUE for a stdio server")] = None,
    header: Annotated[list[str] | None, typer.Option("-H", "--header", help='"Name: value" for http')] = None,
) -> int:
    opts = {"scope": scope, "transport": transport, "env": env or [], "header": header or []}
    return _run(lambda cwd: _add(name, target or [], opts, cwd))


def _add(name: str | None, target: list[str], opts: dict[str, Any], cwd: Path) -> int:
    if not name:
        raise UsageError("missing the server name")
    if name.startswith("-"):
        raise UsageError(f"unknown option {name} (the server's own flags go after --)")
    _check_name(name)
    _check_scope(opts["scope"])
    if opts["transport"] is None and len(target) == 1 and re.match(r"^https?://", target[0]):
        opts["transport"] = "http"  # a bare URL means HTTP, as the examples read
    entry = build_entry(opts, target)
    path = write_server(opts["scope"], cwd, name, entry)
    what = f"URL: {entry['url']}" if entry["type"] == "http" else f"command: {' '.join([entry['command'], *entry['args']])}"
    _out(f"Added {entry['type']} MCP server {name} with {what} to {opts['scope']} config")
    _out(f"File modified: {path}")
    return 0


@app.command("add-json", help="Add a server from its JSON entry.")
def add_json_command(name: NameArg, raw: Annotated[str, typer.Argument(metavar="JSON")],
                     scope: ScopeOpt = "local") -> int:
    return _run(lambda cwd: _add_json(name, raw, scope, cwd))


def _add_json(name: str, raw: str, scope: str, cwd: Path) -> int:
    from services.mcp.config import parse_server

    _check_name(name)
    _check_scope(scope)
    try:
        entry = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    try:
        parse_server(name, entry, "<argument>", {})
    except ValueError as exc:
        raise UsageError(f"invalid server entry: {exc}") from None
    path = write_server(scope, cwd, name, entry)
    _out(f"Added {entry.get('type', 'stdio')} MCP server {name} to {scope} config")
    _out(f"File modified: {path}")
    return 0


@app.command("remove", help="Remove a server (say -s SCOPE when it is in several).")
def remove_command(name: NameArg, scope: Annotated[str | None, typer.Option(
        "-s", "--scope", metavar="SCOPE", help="local, user or project")] = None) -> int:
    return _run(lambda cwd: _remove(name, scope, cwd))


def _remove(name: str, given: str | None, cwd: Path) -> int:
    found = scopes_of(name, cwd)
    if given is not None:
        _check_scope(given)
        if given not in found:
            raise CliError(f"No MCP server named {name} in {given} config")
        scope = given
    elif not found:
        raise CliError(f"No MCP server found with name: {name}")
    elif len(found) > 1:
        choices = "\n".join(f"  agent mcp remove {name} -s {s}" for s in found)
        raise CliError(f"MCP server {name} exists in several scopes ({', '.join(found)}); say which:\n{choices}")
    else:
        scope = found[0]
    path = scope_file(scope, cwd)
    data = _load(path)
    table = _table(data, scope, cwd, create=False)
    assert table is not None
    del table[name]
    _save(path, data, private=scope != "project")
    _out(f"Removed MCP server {name} from {scope} config")
    _out(f"File modified: {path}")
    return 0


def _where(cfg: Any) -> str:
    if cfg.transport == "http":
        return f"{cfg.url} (HTTP)"
    return " ".join([cfg.command, *cfg.args])


UNTRUSTED = "⏸ Not started: this folder is not trusted (agent trust)"


def _trusted(cwd: Path) -> bool:
    from services.config import agent_home
    from services.trust import config_changes

    return config_changes(cwd, agent_home()) == []


async def _health(configs: dict[str, Any], cwd: Path) -> dict[str, tuple[str, str]]:
    """Each server started and stopped, concurrently. A project server of an untrusted folder is not
    started (that would run the folder's code): it is listed as such."""
    from services.config import project_dir
    from services.mcp.manager import McpManager

    held = {} if _trusted(cwd) else {n: c for n, c in configs.items() if c.scope == "project"}
    manager = McpManager({n: c for n, c in configs.items() if n not in held}, cwd,
                         log_dir=project_dir(cwd) / "mcp-logs")
    try:
        await manager.start()
    finally:
        await manager.close()
    out = {name: (UNTRUSTED, "") for name in held}
    for name, s in manager.servers.items():
        ok = s.ever_connected
        out[name] = ("✓ Connected" if ok else "✗ Failed to connect", "" if ok else s.error)
    return out


@app.command("list", help="Every configured server, health-checked concurrently.")
def list_command() -> int:
    return _run(_list)


def _list(cwd: Path) -> int:
    from services.mcp.config import load_config

    configs, warnings = load_config(cwd)
    for w in warnings:
        _err(f"warning: {w}")
    if not configs:
        _out("No MCP servers configured. Use `agent mcp add` to add a server.")
        return 0
    _out("Checking MCP server health...\n")
    health = asyncio.run(_health(configs, cwd))
    for name, cfg in configs.items():
        status, error = health[name]
        _out(f"{name}: {_where(cfg)} - {status}" + (f" ({error})" if error else ""))
    return 0


@app.command("get", help="One server's details and health.")
def get_command(name: NameArg) -> int:
    return _run(lambda cwd: _get(name, cwd))


def _get(name: str, cwd: Path) -> int:
    from services.mcp.config import load_config

    configs, _ = load_config(cwd)
    cfg = configs.get(name)
    if cfg is None:
        raise CliError(f"No MCP server found with name: {name}")
    status, error = asyncio.run(_health({name: cfg}, cwd))[name]
    _out(f"{name}:")
    _out(f"  Scope: {SCOPE_LABEL.get(cfg.scope, cfg.scope)}")
    _out(f"  Status: {status}" + (f" ({error})" if error else ""))
    _out(f"  Type: {cfg.transport}")
    if cfg.transport == "http":
        _out(f"  URL: {cfg.url}")
        if cfg.headers:
            _out("  Headers:")
            for k in cfg.headers:
                _out(f"    {k}: (set)")
    else:
        _out(f"  Command: {cfg.command}")
        _out(f"  Args: {' '.join(cfg.args)}")
        if cfg.env:
            _out("  Environment:")
            for k in cfg.env:
                _out(f"    {k}=(set)")
    scope = f" -s {cfg.scope}" if cfg.scope in ("local", "project", "user") else ""
    _out(f'\nTo remove this server, run: agent mcp remove "{name}"{scope}')
    return 0


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="mcp")
