"""Write: create or overwrite a whole file, atomically, only over a file the model has read."""

from __future__ import annotations

import os
from typing import Any

from tools import read_state
from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error
from tools.fsutil import atomic_write, content_too_large

# Claude Code's words after a successful write: the model need not Read the file back.
STATE_CURRENT = "(file state is current in your context — no need to Read it back)"

DESCRIPTION = """Writes a file to the local filesystem, replacing its whole content (parent directories are created).

Usage:
- To overwrite an existing file, Read it first in this conversation; a file not read, or changed since, is refused.
- Prefer Edit for changing part of a file. Use Write for new files or complete rewrites; content is limited to 100 KB.
- Do not create documentation or README files unless asked to."""


class WriteTool(Tool):
    name = "Write"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to write (absolute, or relative to the working directory)."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["file_path", "content"],
        "additionalProperties": False,
    }
    max_result_chars = 10_000

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw, content = input["file_path"], input["content"]
        too_large = content_too_large(content, "content")
        if too_large:
            raise ToolError(tool_use_error(too_large))
        if not raw.strip():
            raise ToolError("file_path is empty. Pass the path of the file to write.")
        path = ctx.resolve(raw)
        exists = os.path.lexists(path)
        if exists:
            if os.path.isdir(path):
                raise ToolError(f"{path} is a directory. Pass the path of a file inside it.")
            if os.path.exists(path):
                refusal = read_state.require_fresh(ctx, path, "write")
                if refusal:
                    raise ToolError(tool_use_error(refusal))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, content.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            raise ToolError(f"Cannot write {path}: {exc.strerror or exc}. Check the path and permissions.") from None
        read_state.record(ctx, path, offset=None, limit=None, from_read=False)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        if exists:
            return ToolOutput(f"The file {path} has been updated successfully. {STATE_CURRENT}", summary=f"updated, {lines} lines")
        return ToolOutput(f"File created successfully at: {path} {STATE_CURRENT}", summary=f"created, {lines} lines")
