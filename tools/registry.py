"""The tools offered to the model, built in one place."""

from __future__ import annotations

from tools.base import Tool
from tools.echo import EchoTool


def default_tools() -> list[Tool]:
    tools: list[Tool] = [EchoTool()]
    return [t for t in tools if t.is_enabled()]
