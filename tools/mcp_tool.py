"""A tool offered by an MCP server, under a public name the API accepts (`services/mcp/names.py`).

The server's JSON Schema is passed through whole; `readOnlyHint` makes the tool read-only (and so
concurrency-safe and allowed without asking); results map onto tool_result content blocks (text; images
fitted to the Read tool's limits; audio and other binary content saved to the session's spill directory
with a pointer). Like the built-ins, results are compactable and spill past `max_result_chars`.

`sync_mcp_tools` keeps a tool list in step with the servers between model calls: the tools of a server
that became ready (or changed its list) are appended at the end, so the part of the list the prompt cache
already holds stays the same; the tools of a server that went away are removed.
"""

from __future__ import annotations

import json
from typing import Any

from tools.base import DEFAULT_MAX_RESULT_CHARS, Tool, ToolContext, ToolOutput

MAX_DESCRIPTION = 2048


class McpTool(Tool):
    max_result_chars = DEFAULT_MAX_RESULT_CHARS
    # May go to the model by name only, behind ToolSearch (tools/tool_search.py), unless always loaded.
    deferrable = True

    def __init__(self, manager: Any, server: str, tool: Any, public_name: str | None = None,
                 server_always_load: bool = False):
        self.manager = manager
        self.server = server
        self.tool_name = tool.name
        if public_name is None:
            from services.mcp.names import public_tool_name

            public_name = public_tool_name(server, tool.name)
        self.name = public_name
        description = (tool.description or f"MCP tool {tool.name} from server {server}").strip()
        if len(description) > MAX_DESCRIPTION:  # a server's essay must not crowd the context
            description = description[:MAX_DESCRIPTION] + "… [truncated]"
        self.description = description
        schema = tool.inputSchema if isinstance(tool.inputSchema, dict) else {}
        # The API takes only object schemas; anything else would fail every request, so it is replaced.
        self.input_schema = schema if schema.get("type") == "object" else {"type": "object", "properties": {}}
        annotations = getattr(tool, "annotations", None)
        self.read_only = bool(getattr(annotations, "readOnlyHint", False)) if annotations else False
        meta = getattr(tool, "meta", None)
        # The server's `alwaysLoad` config, or the tool's own `_meta["anthropic/alwaysLoad"]` (Claude Code's).
        self.always_load = server_always_load or (isinstance(meta, dict) and meta.get("anthropic/alwaysLoad") is True)
        self._spec = json.dumps([self.description, self.input_schema, self.read_only, self.always_load],
                                sort_keys=True, default=str)

    def describe(self, input: dict[str, Any]) -> str:
        args = json.dumps(input, ensure_ascii=False)
        return f"{self.name} {args if len(args) <= 80 else args[:79] + '…'}"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from services.mcp.content import Sink
        from services.mcp.manager import McpError

        progress_sink = getattr(self.manager, "handlers", None)
        last: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            text = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            text += f" {message}" if message else ""
            last[:] = [text]
            report = getattr(progress_sink, "progress", None)
            if report is not None:
                report(ctx.tool_use_id, text)

        try:
            result = await self.manager.call_tool(self.server, self.tool_name, input, progress=on_progress)
        except McpError as exc:
            return ToolOutput(str(exc), is_error=True)
        spill = (ctx.session_dir / "tool-results") if ctx.session_dir else None
        blocks = result_blocks(result, Sink(spill, f"mcp-{ctx.tool_use_id or self.name}"))
        summary = _summary(blocks) + (f", progress {last[0]}" if last else "")
        return ToolOutput(blocks, is_error=bool(getattr(result, "isError", False)), summary=summary)


def result_blocks(result: Any, sink: Any = None) -> list[dict[str, Any]]:  # plain dicts: ToolOutput content
    """An MCP CallToolResult as tool_result content blocks."""
    from services.mcp.content import Sink, content_blocks
    from services.messages import text_block

    blocks = content_blocks(getattr(result, "content", None) or [], sink or Sink(None, "mcp"))
    if not blocks:
        structured = getattr(result, "structuredContent", None)
        if structured is not None:
            blocks.append(text_block(json.dumps(structured, ensure_ascii=False)))
        else:
            blocks.append(text_block("(no output)"))
    return [dict(b) for b in blocks]


def _summary(blocks: list[dict[str, Any]]) -> str:
    chars = sum(len(b.get("text", "")) for b in blocks)
    images = sum(1 for b in blocks if b.get("type") == "image")
    return f"{chars} chars" + (f", {images} image(s)" if images else "")


def mcp_tools(manager: Any) -> list[Tool]:
    """Tool objects for the engine from a `McpManager`: one per tool of each connected server (in the
    order of the servers' names, then the tools' names), plus the resource tools when any server has
    resources. The manager only lists; tools are built here."""
    from tools.mcp_resources import resource_tools

    names = manager.public_names()
    out: list[Tool] = []
    for s in sorted(manager.connected(), key=lambda s: s.name):
        for t in sorted(s.tools, key=lambda t: names[(s.name, t.name)]):
            always = getattr(getattr(s, "config", None), "always_load", None) is True
            out.append(McpTool(manager, s.name, t, names[(s.name, t.name)], server_always_load=always))
    if manager.has_resources():
        out.extend(resource_tools(manager))
    return out


def sync_mcp_tools(tools: list[Tool], manager: Any, blocked: set[str] | frozenset[str] = frozenset()) -> bool:
    """Bring `tools` (in place) in step with the servers: gone or changed MCP tools removed, new ones
    appended at the end in a fixed order. Returns whether anything changed."""
    from tools.mcp_resources import ListMcpResourcesTool, ReadMcpResourceTool

    wanted = [t for t in mcp_tools(manager) if t.name not in blocked]
    by_name = {t.name: t for t in wanted}
    changed = False
    for i in range(len(tools) - 1, -1, -1):
        t = tools[i]
        if isinstance(t, McpTool):
            new = by_name.get(t.name)
            if new is None or not isinstance(new, McpTool) or new._spec != t._spec or new.tool_name != t.tool_name:
                del tools[i]
                changed = True
        elif isinstance(t, ListMcpResourcesTool | ReadMcpResourceTool) and t.name not in by_name:
            del tools[i]
            changed = True
    present = {t.name for t in tools}
    for t in wanted:
        if t.name not in present:
            tools.append(t)
            changed = True
    return changed
