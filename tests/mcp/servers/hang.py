"""A server that never answers: `silent` ignores everything (even initialize); otherwise a tool that sleeps."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import record_pid, run  # noqa: E402

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "silent":
    record_pid()
    for _line in sys.stdin:  # read and never reply
        pass
    time.sleep(3600)
    sys.exit(0)

import anyio  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402

mcp = FastMCP("hang")


@mcp.tool()
async def wait() -> str:
    """Never returns."""
    await anyio.sleep(3600)
    return "done"


@mcp.tool()
def quick() -> str:
    """Returns at once."""
    return "quick"


if __name__ == "__main__":
    run(mcp)
