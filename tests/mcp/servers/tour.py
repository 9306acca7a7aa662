"""Tour test server: a handbook resource, a big resource, a plan_trip prompt."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402

mcp = FastMCP("tour")


@mcp.resource("docs://handbook", name="handbook", mime_type="text/markdown")
def handbook() -> str:
    return "# Travel handbook\nBook trains, not planes, for trips under 500 km."


@mcp.resource("docs://big", name="big", mime_type="text/plain")
def big() -> str:
    return "x" * 150_000


@mcp.prompt()
def plan_trip(city: str, days: str = "") -> str:
    """Plan a trip to a city."""
    return f"City={city}; Days={days or '?'}. Plan the trip following docs://handbook."


@mcp.tool(annotations={"readOnlyHint": True})
def echo(message: str) -> str:
    """Echo the message."""
    return f"got:{message}"


if __name__ == "__main__":
    run(mcp)
