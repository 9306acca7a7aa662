"""Resource templates with completion, a tool that reports progress, prompts with roles and resources."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import Context, FastMCP  # noqa: E402
from mcp.server.fastmcp.prompts.base import AssistantMessage, UserMessage  # noqa: E402
from mcp.types import (  # noqa: E402
    Completion,
    EmbeddedResource,
    ResourceTemplateReference,
    TextResourceContents,
)

mcp = FastMCP("templates")
TOPICS = ["alpha", "alps", "beta"]


@mcp.resource("notes://{topic}", name="note", mime_type="text/plain")
def note(topic: str) -> str:
    return f"note about {topic}"


@mcp.resource("docs://intro", name="intro", mime_type="text/plain")
def intro() -> str:
    return "the intro document"


@mcp.completion()
async def complete(ref, argument, context):  # noqa: ANN001, ANN201
    if isinstance(ref, ResourceTemplateReference) and argument.name == "topic":
        return Completion(values=[t for t in TOPICS if t.startswith(argument.value)])
    return None


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress for each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"done {steps}"


@mcp.prompt()
def review(topic: str, tone: str = "plain") -> list:
    """A conversation with both roles, an embedded resource and a mention."""
    return [
        UserMessage(f"Review {topic} in a {tone} tone. See @templates:docs://intro"),
        AssistantMessage("I will start with the notes."),
        UserMessage(EmbeddedResource(type="resource", resource=TextResourceContents(
            uri=f"notes://{topic}", text=f"embedded note on {topic}", mimeType="text/plain"))),
    ]


if __name__ == "__main__":
    run(mcp)
