"""Awkward tool names, a 6 MB PNG, audio and an embedded binary resource."""

from __future__ import annotations

import base64
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.types import AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, TextContent  # noqa: E402

mcp = FastMCP("awkward")
LONG = "a_very_long_tool_name_" + "x" * 90


def _tool(name: str, reply: str) -> None:
    def fn() -> str:
        return reply

    fn.__doc__ = f"Answers {reply!r}."
    mcp.add_tool(fn, name=name)


for name in ["get/file", "ns:tool", "café", "a.b", "a b", LONG, LONG + "2"]:
    _tool(name, f"called {name}")


@mcp.tool(description="y" * 10_000)
def essay() -> str:
    return "short"


def big_png() -> bytes:
    """A noisy PNG just over 6 MB (noise does not compress)."""
    from PIL import Image

    side = 1450
    img = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    out = io.BytesIO()
    img.save(out, "PNG", compress_level=1)
    return out.getvalue()


@mcp.tool()
def huge_image() -> list:
    """A 6 MB PNG."""
    data = big_png()
    return [TextContent(type="text", text=f"png of {len(data)} bytes"),
            ImageContent(type="image", data=base64.b64encode(data).decode(), mimeType="image/png")]


@mcp.tool()
def sound() -> list:
    """A short WAV and an embedded binary resource."""
    wav = b"RIFF" + b"\0" * 40 + b"data"
    blob = bytes(range(256))
    return [AudioContent(type="audio", data=base64.b64encode(wav).decode(), mimeType="audio/wav"),
            EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///blob.bin", blob=base64.b64encode(blob).decode(), mimeType="application/octet-stream"))]


# A tool whose input schema is not an object (invalid for the Messages API).
mcp._tool_manager._tools["scalar"] = mcp._tool_manager._tools["essay"].model_copy(
    update={"name": "scalar", "parameters": {"type": "string"}})


if __name__ == "__main__":
    run(mcp)
