"""The API's own web tools (server tools), offered when the endpoint is known to run them.

Anthropic's API runs `web_search` and `web_fetch` itself: the model's `server_tool_use` and the
`web_search_tool_result` / `web_fetch_tool_result` blocks come back in the reply, and nothing runs
here. A gateway or another provider may not support them, so they are off unless the
`serverTools` setting (settings.json, a list of names) or `AGENT_SERVER_TOOLS` (comma-separated)
names them; then the client-side tool of the same job (WebSearch / WebFetch) is not offered beside it.
Otherwise the client-side tools stay the fallback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.config import ConfigError, getenv

SETTING = "serverTools"
ENV = "AGENT_SERVER_TOOLS"
# name -> (tool spec, beta header it needs or None, the client-side tool it replaces)
SERVER_TOOLS: dict[str, tuple[dict[str, Any], str | None, str]] = {
    "web_search": ({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}, None, "WebSearch"),
    "web_fetch": ({"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 5}, "web-fetch-2025-09-10",
                  "WebFetch"),
}


def enabled_server_tools(settings_paths: list[Path]) -> list[str]:
    """The server tools the user says the endpoint supports (env wins over settings files)."""
    raw = getenv(ENV)
    names: list[str] = []
    source = f"environment variable {ENV}"
    if raw and raw.strip():
        names = [n.strip() for n in raw.split(",") if n.strip()]
    else:
        for path in settings_paths:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and SETTING in data:
                value = data[SETTING]
                if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                    raise ConfigError(f"{path}: field {SETTING!r} must be a list of names")
                names, source = list(value), f"{path}: field {SETTING!r}"
    unknown = [n for n in names if n not in SERVER_TOOLS]
    if unknown:
        raise ConfigError(f"{source}: unknown server tool {unknown[0]!r} (known: {', '.join(SERVER_TOOLS)})")
    return names


def server_tool_specs(names: list[str]) -> list[dict[str, Any]]:
    return [dict(SERVER_TOOLS[n][0]) for n in names]


def replaced_client_tools(names: list[str]) -> set[str]:
    return {SERVER_TOOLS[n][2] for n in names}


def betas_for(tools: list[dict[str, Any]]) -> list[str]:
    """Beta headers the tools in a request's tool list need (server tools, deferred tools)."""
    out = []
    if any(t.get("defer_loading") for t in tools):  # deferred tools and tool_reference results (ToolSearch)
        out.append("advanced-tool-use-2025-11-20")
    for spec, beta, _ in SERVER_TOOLS.values():
        if beta and any(t.get("type") == spec["type"] for t in tools):
            out.append(beta)
    return out
