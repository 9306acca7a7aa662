"""`agent doctor`: is this machine ready? Key and endpoint, ripgrep, the sandbox, settings files, MCP servers.

One line per check (`ok`, `warn` or `fail`), then a summary; exit 1 when any check failed. Nothing is
printed that could leak a secret: the key is shown as "set" with its source, never its value.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from agent import __version__
from services.config import getenv

if TYPE_CHECKING:
    import typer


def _line(status: str, what: str, detail: str) -> None:
    sys.stdout.write(f"{status:<4}  {what}: {detail}\n")


def check_credentials() -> tuple[str, str]:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if getenv(name):
            return "ok", f"{name} is set"
    return "fail", "no ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN (set one, or use --mock)"


def check_endpoint(timeout: float = 5.0) -> tuple[str, str]:
    """The API endpoint answers HTTP at all (any status: 401/404 still prove it is there)."""
    base = getenv("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    url = base.rstrip("/") + "/v1/models"
    req = urllib.request.Request(url, headers={"anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's own endpoint
            return "ok", f"{base} answered HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return "ok", f"{base} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return "fail", f"{base} is not reachable ({reason})"


def check_ripgrep() -> tuple[str, str]:
    from tools.ripgrep import find_rg

    path = find_rg()
    return ("ok", path) if path else ("fail", "ripgrep (rg) not found: Grep and Glob cannot run")


def check_sandbox() -> tuple[str, str]:
    """Whether bubblewrap runs here (a warning, not a failure: Bash then asks before every command)."""
    import os

    from tools.sandbox import UNAVAILABLE_FIX, probe

    found = probe(os.environ.get("PATH"))
    if found.ok:
        return "ok", f"bubblewrap works ({found.path}): Bash runs in the sandbox"
    return "warn", f"{found.reason}; Bash commands will ask before they run. Fix: {UNAVAILABLE_FIX}"


def settings_files(cwd: Path, home: Path) -> list[Path]:
    from services.settings_files import scoped_files

    return [p for _, p in scoped_files(cwd, home)] + [cwd / ".agents" / "hooks.json", cwd / ".mcp.json"]


def check_settings(path: Path) -> tuple[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return "fail", f"cannot be read ({exc.strerror})"
    except UnicodeDecodeError:
        return "fail", "not UTF-8"
    except json.JSONDecodeError as exc:
        return "fail", f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); it is ignored"
    if not isinstance(data, dict):
        return "fail", "not a JSON object; it is ignored"
    return "ok", "in use (" + (", ".join(sorted(data)) or "empty") + ")"


async def check_mcp(cwd: Path) -> list[tuple[str, str, str]]:
    from agent.loop.factory import start_mcp

    warnings: list[str] = []
    manager = await start_mcp(cwd, warn=warnings.append)
    rows = [("warn", "MCP config", w) for w in warnings]
    if manager is None:
        return rows
    try:
        await manager.wait_ready()  # servers start in the background; doctor wants the outcome
        for name, state, tools in manager.status():
            ok = state == "connected"
            rows.append(("ok" if ok else "fail", f"MCP server {name}", f"{state}, {tools} tools" if ok else state))
    finally:
        await manager.close()
    return rows


HELP = "Check the API key and endpoint, ripgrep, the Bash sandbox, settings files and MCP servers."


def doctor_command() -> int:
    from services.config import agent_home

    cwd, home = Path.cwd().resolve(), agent_home()
    failed = 0
    _line("ok", "agent", f"{__version__}, Python {sys.version.split()[0]}, home {home}")
    checks = [("API key", check_credentials()), ("API endpoint", check_endpoint()), ("ripgrep", check_ripgrep()),
              ("sandbox", check_sandbox())]
    for path in settings_files(cwd, home):
        if path.is_file():
            checks.append((str(path), check_settings(path)))
    for what, (status, detail) in checks:
        failed += status == "fail"
        _line(status, what, detail)
    for status, what, detail in asyncio.run(check_mcp(cwd)):
        failed += status == "fail"
        _line(status, what, detail)
    sys.stdout.write("all checks passed\n" if not failed else f"{failed} check(s) failed\n")
    return 0 if not failed else 1


def register(root: typer.Typer) -> None:
    root.command("doctor", help=HELP)(doctor_command)
