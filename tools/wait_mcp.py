"""WaitForMcpServers: the model waits for MCP servers still connecting (Claude Code 2.1.332's tool; its
description recorded from the binary). Their tools join the tool list before the next model call."""

from __future__ import annotations

import json
from typing import Any

from tools.base import Tool, ToolContext, ToolOutput

NAME = "WaitForMcpServers"
DESCRIPTION = "\n".join([
    "Wait for MCP servers that are still connecting and whose tools are not",
    "yet in your tool list. Pass `servers` to wait for specific ones, or omit",
    "it to wait for all pending servers (once none is pending, a call without",
    "`servers` reports any server that failed to connect or is not configured).",
    "",
    "If the user's request needs tools from a still-connecting server, call this",
    "tool to wait for it. Once it connects, its tools will be added to your tool",
    "list and you can use them directly. Returns ready=true when servers are",
    "ready, ready=false if they failed to connect, need authentication, or are",
    "disabled.",
    "",
    "You do not need to ask the user for confirmation to use this tool.",
])


def start_bound(manager: Any) -> float:
    """The longest a server can take to settle: its connect timeout (MCP_TIMEOUT), plus a margin."""
    return max((float(s.connect_timeout) for s in manager.servers.values()), default=0.0) + 1.0


class WaitForMcpServersTool(Tool):
    name = NAME
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {"servers": {"type": "array", "items": {"type": "string"},
                                   "description": "Server names to wait for; omit to wait for every pending one"}},
        "additionalProperties": False,
    }
    read_only = True

    def __init__(self, manager: Any):
        self.manager = manager

    def describe(self, input: dict[str, Any]) -> str:
        names = input.get("servers")
        return f"Wait for MCP servers {', '.join(names)}" if isinstance(names, list) and names else "Wait for MCP servers"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        asked = input.get("servers")
        names = [n for n in asked if isinstance(n, str)] if isinstance(asked, list) else None
        servers = self.manager.servers
        unknown = [n for n in names or [] if n not in servers]
        targets = [n for n in names if n in servers] if names is not None else list(servers)
        await self.manager.wait_ready(targets, timeout=start_bound(self.manager))
        states = {n: servers[n].state for n in targets}
        report: dict[str, Any] = {
            "ready": bool(targets) and not unknown and all(s == "connected" for s in states.values()),
            "connected": [n for n, s in states.items() if s == "connected"],
            "failed": [{"server": n, "error": servers[n].error} for n, s in states.items() if s == "failed"],
            "pending": [n for n, s in states.items() if s == "pending"],
        }
        if unknown:
            report["unknown"] = unknown
        return ToolOutput(json.dumps(report), summary="ready" if report["ready"] else "not ready")
