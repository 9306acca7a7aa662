"""A server that adds a tool (and tells the client) when `grow` is called."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import Context, FastMCP  # noqa: E402

mcp = FastMCP("changing")


def fresh() -> str:
    """A tool that did not exist at start."""
    return "fresh"


@mcp.tool()
async def grow(ctx: Context) -> str:
    """Adds the `fresh` tool and sends tools/list_changed."""
    mcp.add_tool(fresh)
    await ctx.session.send_tool_list_changed()
    return "grown"


@mcp.tool()
async def grow_prompt(ctx: Context) -> str:
    """Adds the `later` prompt and sends prompts/list_changed."""
    from mcp.server.fastmcp.prompts import Prompt

    mcp.add_prompt(Prompt.from_function(lambda: "a later prompt", name="later", description="Added later."))
    await ctx.session.send_prompt_list_changed()
    return "prompt added"


if __name__ == "__main__":
    run(mcp)
