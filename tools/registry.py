"""The tools offered to the model, built in one place."""

from __future__ import annotations

from tools.background_tasks import TaskOutputTool, TaskStopTool
from tools.base import Tool
from tools.bash import BashTool
from tools.echo import EchoTool
from tools.edit import EditTool
from tools.glob import GlobTool
from tools.grep import GrepTool
from tools.notebook_edit import NotebookEditTool
from tools.read import ReadTool
from tools.todo import TodoWriteTool
from tools.web_fetch import WebFetchTool
from tools.web_search import WebSearchTool
from tools.write import WriteTool


def default_tools(include_echo: bool = False, agent: Tool | None = None) -> list[Tool]:
    """The built-in tools. `include_echo` adds the test-only Echo tool (mock runs, CLI tests)."""
    tools: list[Tool] = [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), GlobTool(), NotebookEditTool()]
    # Web tools (WebSearch only when a search key is configured) and the plan tool.
    tools += [WebFetchTool(), WebSearchTool(), TodoWriteTool()]
    tools += [TaskOutputTool(), TaskStopTool()]  # background shells (Bash run_in_background)
    if agent is not None:  # the Agent tool needs the engine's deps and tools: built by agent/loop/factory.py
        tools.append(agent)
    if include_echo:
        tools.append(EchoTool())
    return [t for t in tools if t.is_enabled()]
