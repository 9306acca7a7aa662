"""Calculator test server: add, multiply, a failing tool, an image tool and odd names."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import FastMCP, Image  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

mcp = FastMCP("calculator")

# A 1x1 transparent PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return f"{a + b:g}"


@mcp.tool()
def multiply(a: float, b: float) -> str:
    """Multiply two numbers."""
    return f"{a * b:g}"


@mcp.tool()
def divide(a: float, b: float) -> str:
    """Divide a by b; dividing by zero is an error."""
    if b == 0:
        raise ValueError("division by zero")
    return f"{a / b:g}"


@mcp.tool(name="stats.mean value")
def mean(values: list[float]) -> str:
    """Mean of a list (a tool whose name needs normalising)."""
    return f"{sum(values) / len(values):g}"


@mcp.tool()
def pixel() -> list:
    """Text plus a tiny image."""
    return ["see below", Image(data=PIXEL, format="png")]


@mcp.tool()
def env_value(name: str) -> str:
    """The server's value of an environment variable."""
    return os.environ.get(name, "<unset>")


if __name__ == "__main__":
    run(mcp)
