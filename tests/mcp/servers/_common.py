"""Shared start-up for the test MCP servers: `python <server>.py [stdio | http PORT]`."""

from __future__ import annotations

import os
import sys


def record_pid() -> None:
    path = os.environ.get("MCP_TEST_PID_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")


def run(mcp) -> None:  # noqa: ANN001
    record_pid()
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = int(sys.argv[2])
        mcp.settings.log_level = "WARNING"
        mcp.run("streamable-http")
    else:
        mcp.run("stdio")
