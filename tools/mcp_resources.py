"""ListMcpResources / ReadMcpResource: offered when any connected MCP server has resources."""

from __future__ import annotations

from typing import Any

from tools.base import DEFAULT_MAX_RESULT_CHARS, Tool, ToolContext, ToolOutput


class ListMcpResourcesTool(Tool):
    name = "ListMcpResources"
    description = (
        "List the resources (documents, data) offered by the connected MCP servers. Each line gives the "
        "server, the URI, the name and the MIME type. Pass `server` to list one server only. Read one with "
        "ReadMcpResource."
    )
    input_schema = {
        "type": "object",
        "properties": {"server": {"type": "string", "description": "Only this MCP server (optional)."}},
        "additionalProperties": False,
    }

    def __init__(self, manager: Any):
        self.manager = manager

    read_only = True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from services.mcp.manager import McpError

        try:
            resources = await self.manager.list_resources(input.get("server") or None)
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        if not resources:
            return ToolOutput("No MCP resources.", summary="0 resources")
        lines = []
        for r in resources:
            extra = f" ({r.mime_type})" if r.mime_type else ""
            desc = f" — {r.description}" if r.description else ""
            lines.append(f"{r.server}: {r.uri} {r.name}{extra}{desc}")
        return ToolOutput("\n".join(lines), summary=f"{len(resources)} resources")


class ReadMcpResourceTool(Tool):
    name = "ReadMcpResource"
    description = (
        "Read one resource from an MCP server by its URI (see ListMcpResources). Returns the resource's text; "
        "images come back as images, other binary contents are saved to a file whose path is given."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "The MCP server's name."},
            "uri": {"type": "string", "description": "The resource URI, e.g. docs://handbook."},
        },
        "required": ["server", "uri"],
        "additionalProperties": False,
    }
    max_result_chars = DEFAULT_MAX_RESULT_CHARS

    def __init__(self, manager: Any):
        self.manager = manager

    read_only = True

    def describe(self, input: dict[str, Any]) -> str:
        return f"{self.name} {input.get('server', '')}:{input.get('uri', '')}"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from services.mcp.content import read_resource_blocks
        from services.mcp.manager import McpError

        spill = (ctx.session_dir / "tool-results") if ctx.session_dir else None
        try:
            blocks = await read_resource_blocks(self.manager, input["server"], input["uri"], spill,
                                                stem=f"resource-{ctx.tool_use_id or input['server']}")
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if len(texts) == len(blocks):
            text = "\n".join(texts)
            return ToolOutput(text, summary=f"{len(text)} chars")
        return ToolOutput([dict(b) for b in blocks], summary=f"{len(blocks)} parts")


def resource_tools(manager: Any) -> list[Tool]:
    return [ListMcpResourcesTool(manager), ReadMcpResourceTool(manager)]
