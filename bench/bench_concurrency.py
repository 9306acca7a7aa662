"""Concurrency: eight parallel read-only tool calls against the same eight run one by one.

A read-only tool that waits 50 ms (standing in for disk or network latency) is called eight times in
one assistant message (one parallel group) and in eight messages (serial), through the real loop.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from common import header, table

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from tools.base import Tool, ToolContext, ToolOutput


class Wait(Tool):
    name = "Wait"
    description = "Waits 50 ms."
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        await asyncio.sleep(0.05)
        return ToolOutput(f"done {input.get('n')}")


async def run(parallel: bool) -> float:
    if parallel:
        steps = [reply(*[tool_call("Wait", {"n": i}) for i in range(8)]), reply("ok")]
    else:
        steps = [reply(tool_call("Wait", {"n": i})) for i in range(8)] + [reply("ok")]
    model = ScriptedModel(steps)
    engine = QueryEngine(EngineConfig(cwd=Path(tempfile.mkdtemp()), model="bench"), [Wait()], QueryDeps(model))
    t0 = time.perf_counter()
    async for _ in engine.run_turn("go"):
        pass
    return time.perf_counter() - t0


def main() -> None:
    import os

    os.environ.setdefault("AGENT_HOME", tempfile.mkdtemp(prefix="bench-home-"))
    header("Concurrency: eight read-only tool calls")
    par = asyncio.run(run(True))
    ser = asyncio.run(run(False))
    table([["parallel (one message)", f"{par * 1000:.0f}", "1.00"],
           ["serial (eight messages)", f"{ser * 1000:.0f}", f"{ser / par:.2f}"]],
          ["run", "ms", "x parallel"])


if __name__ == "__main__":
    main()
