"""A server whose `crash` tool kills the server process mid-call."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402

mcp = FastMCP("crash")


@mcp.tool()
def crash() -> str:
    """Exits the process before answering."""
    sys.stderr.write("crash server: exiting mid-call\n")
    sys.stderr.flush()
    os._exit(3)


@mcp.tool()
def ok() -> str:
    """Fine."""
    return "ok"


if __name__ == "__main__":
    run(mcp)
