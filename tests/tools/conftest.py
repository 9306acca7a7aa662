"""Fixtures for the codebase tools: a project in tmp_path and a ToolContext on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.base import SessionState, Tool, ToolContext, ToolOutput
from tools.bash import BashTool
from tools.edit import EditTool
from tools.glob import GlobTool
from tools.grep import GrepTool
from tools.read import ReadTool
from tools.write import WriteTool


@pytest.fixture
def project(workdir: Path) -> Path:
    """The tool tests' name for the shared empty project directory."""
    return workdir


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=project), project_root=project)


class Runner:
    def __init__(self, ctx: ToolContext):
        self.ctx = ctx
        self.tools: dict[str, Tool] = {t.name: t for t in (ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), GlobTool())}
        self.n = 0

    async def __call__(self, name: str, tid: str | None = None, **input: Any) -> ToolOutput:
        """Call a tool directly; a ToolError becomes an error output like the orchestrator makes it."""
        from tools.base import ToolError

        self.n += 1
        try:
            return await self.tools[name].call(input, self.ctx.for_call(tid or f"toolu_{self.n}"))
        except ToolError as exc:
            return ToolOutput(str(exc), is_error=True)


@pytest.fixture
def run(ctx: ToolContext) -> Runner:
    return Runner(ctx)
