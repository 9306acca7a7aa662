"""A server that asks the client: roots, elicitation, sampling; logs; has instructions."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import Context, FastMCP  # noqa: E402
from mcp.types import SamplingMessage, TextContent  # noqa: E402
from pydantic import BaseModel  # noqa: E402

mcp = FastMCP("asks", instructions="Call `where` before touching files.")


@mcp.tool()
async def where(ctx: Context) -> str:
    """The client's roots."""
    result = await ctx.session.list_roots()
    await ctx.info("listed roots")
    return "\n".join(str(r.uri) for r in result.roots)


class Person(BaseModel):
    name: str
    age: int = 30


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user for a name (elicitation)."""
    result = await ctx.elicit("Who are you?", Person)
    if result.action == "accept":
        return f"hello {result.data.name} ({result.data.age})"
    return f"no answer: {result.action}"


@mcp.tool()
async def summarise(text: str, ctx: Context) -> str:
    """Asks the client's model to summarise (sampling)."""
    try:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarise: {text}"))], max_tokens=50
        )
    except Exception as exc:  # noqa: BLE001
        return f"sampling refused: {exc}"
    return f"summary: {result.content.text}"


if __name__ == "__main__":
    run(mcp)
