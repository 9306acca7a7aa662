"""A server with many tools, for tool search: `MANY_TOOLS` tools (default 30) named `<verb>_<noun>`.

`MANY_PREFIX` prefixes the names (two servers told apart), `MANY_START_DELAY` (seconds) makes it a late
server (`MANY_START_AFTER`: once that file exists; `MANY_UP_FILE` is created when it serves).
`MANY_ALWAYS_LOAD` names tools whose `_meta` carries `anthropic/alwaysLoad: true`. Each tool echoes its
name and arguments, so a test can tell which one ran.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import run  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402

VERBS = ["get", "list", "create", "update", "delete", "search", "export", "archive", "sync", "count"]
NOUNS = ["issue", "invoice", "customer", "calendar_event", "pull_request", "weather_forecast", "spreadsheet_row",
         "slack_message", "deployment", "database_table", "email_draft", "payment", "ticket", "wiki_page",
         "build_log", "user_account", "shipment", "contract"]

mcp = FastMCP("many")


def tool_names(count: int) -> list[str]:
    names = [f"{v}_{n}" for n in NOUNS for v in VERBS]
    extra = [f"tool_{i:03d}" for i in range(max(0, count - len(names)))]
    return (names + extra)[:count]


def make(name: str) -> Any:
    def tool(target: str, limit: int = 10) -> str:
        return f"{name} ran on {target} (limit {limit})"

    return tool


def main() -> None:
    count = int(os.environ.get("MANY_TOOLS", "30"))
    always = set(filter(None, os.environ.get("MANY_ALWAYS_LOAD", "").split(",")))
    prefix = os.environ.get("MANY_PREFIX", "")
    time.sleep(float(os.environ.get("MANY_START_DELAY", "0")))
    gate = os.environ.get("MANY_START_AFTER")  # a late server: starts once this file exists
    while gate and not os.path.exists(gate):
        time.sleep(0.1)
    up = os.environ.get("MANY_UP_FILE")
    if up:
        open(up, "w").close()
    for bare in tool_names(count):
        name = prefix + bare
        verb, _, noun = bare.partition("_")
        words = noun.replace("_", " ")
        meta = {"anthropic/alwaysLoad": True} if name in always else None
        mcp.add_tool(make(name), name=name, description=f"{verb.capitalize()} a {words} in the tracker. "
                     f"Use it to {verb} {words} records by target id.", meta=meta)
    run(mcp)


if __name__ == "__main__":
    main()
