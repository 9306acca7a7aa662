"""Echo: returns its message. Trivial on purpose: it makes the loop testable with no side effects."""

from __future__ import annotations

from typing import Any

from tools.base import Tool, ToolContext, ToolOutput


class EchoTool(Tool):
    name = "Echo"
    description = (
        "Echo a message back verbatim. Useful only for testing the agent loop; it has no side effects."
    )
    input_schema = {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The text to echo back."}},
        "required": ["message"],
        "additionalProperties": False,
    }
    max_result_chars = 50_000

    read_only = True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(input["message"], summary=f"{len(input['message'])} chars")
