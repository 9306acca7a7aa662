"""A tool offered by an MCP server, as `mcp__<server>__<tool>`.

The server's JSON Schema is passed through whole; `readOnlyHint` makes the tool read-only (and so
concurrency-safe and allowed without asking); results map onto tool_result content blocks (text, images;
resource links and embedded resources as text). Like the built-ins, results are compactable and spill
past `max_result_chars`.
"""

from __future__ import annotations

import json
from typing import Any

from services.messages import image_block, text_block
from tools.base import DEFAULT_MAX_RESULT_CHARS, Tool, ToolContext, ToolOutput

IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class McpTool(Tool):
    max_result_chars = DEFAULT_MAX_RESULT_CHARS

    def __init__(self, manager: Any, server: str, tool: Any):
        from services.mcp.manager import public_tool_name

        self.manager = manager
        self.server = server
        self.tool_name = tool.name
        self.name = public_tool_name(server, tool.name)
        self.description = (tool.description or f"MCP tool {tool.name} from server {server}").strip()
        schema = tool.inputSchema if isinstance(tool.inputSchema, dict) else {}
        self.input_schema = schema or {"type": "object", "properties": {}}
        annotations = getattr(tool, "annotations", None)
        self.read_only = bool(getattr(annotations, "readOnlyHint", False)) if annotations else False

    def describe(self, input: dict[str, Any]) -> str:
        args = json.dumps(input, ensure_ascii=False)
        return f"{self.name} {args if len(args) <= 80 else args[:79] + '…'}"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from services.mcp.manager import McpError

        try:
            result = await self.manager.call_tool(self.server, self.tool_name, input)
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        blocks = result_blocks(result)
        return ToolOutput(blocks, is_error=bool(getattr(result, "isError", False)), summary=_summary(blocks))


def result_blocks(result: Any) -> list[dict[str, Any]]:
    """An MCP CallToolResult as tool_result content blocks."""
    blocks: list[dict[str, Any]] = []
    for c in getattr(result, "content", None) or []:
        kind = getattr(c, "type", "")
        if kind == "text":
            blocks.append(text_block(c.text))
        elif kind == "image":
            if c.mimeType in IMAGE_TYPES:
                blocks.append(image_block(c.mimeType, c.data))
            else:
                blocks.append(text_block(f"[image: {c.mimeType}, not shown]"))
        elif kind == "audio":
            blocks.append(text_block(f"[audio: {c.mimeType}, not shown]"))
        elif kind == "resource_link":
            label = f"{c.name}: " if getattr(c, "name", None) else ""
            mime = f" ({c.mimeType})" if getattr(c, "mimeType", None) else ""
            blocks.append(text_block(f"[resource link: {label}{c.uri}{mime}]"))
        elif kind == "resource":
            res = c.resource
            text = getattr(res, "text", None)
            blocks.append(text_block(text if isinstance(text, str) else f"[resource: {res.uri}, binary, not shown]"))
    if not blocks:
        structured = getattr(result, "structuredContent", None)
        if structured is not None:
            blocks.append(text_block(json.dumps(structured, ensure_ascii=False)))
        else:
            blocks.append(text_block("(no output)"))
    return blocks


def _summary(blocks: list[dict[str, Any]]) -> str:
    chars = sum(len(b.get("text", "")) for b in blocks)
    images = sum(1 for b in blocks if b.get("type") == "image")
    return f"{chars} chars" + (f", {images} image(s)" if images else "")


def mcp_tools(manager: Any) -> list[Tool]:
    """Tool objects for the engine from a connected `McpManager`: one per MCP tool (first of a name wins),
    plus the resource tools when any server has resources. The manager only lists; tools are built here."""
    from tools.mcp_resources import resource_tools

    out: list[Tool] = []
    seen: set[str] = set()
    for s in manager.connected():
        for t in s.tools:
            tool = McpTool(manager, s.name, t)
            if tool.name not in seen:
                seen.add(tool.name)
                out.append(tool)
    if manager.has_resources():
        out.extend(resource_tools(manager))
    return out
