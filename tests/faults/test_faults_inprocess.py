"""Fault injection in-process: hostile model output and hostile tool output never crash the loop.

The issue-10 suite drives the real CLI (`test_faults_cli.py`); what stays here are the paths it cannot
reach through the CLI's tools: a schema-refused 5 MB argument (the error stays one short line), a tool
returning lone surrogates (Bash already decodes with replacement), and a schema error beside an unknown tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.events import Terminal
from services.messages import tool_results, tool_uses
from services.session import load_transcript
from tools.base import Tool, ToolContext, ToolOutput
from tools.echo import EchoTool


class Nasty(Tool):
    """Returns invalid UTF-8 decoded with surrogates, NUL bytes and control characters."""

    name = "Nasty"
    description = "Returns hostile bytes."
    input_schema = {"type": "object", "properties": {}}

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = b"ok \x00 nul \xff\xfe bad utf8 \x1b[31m red"
        return ToolOutput(raw.decode("utf-8", errors="surrogateescape"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    return tmp_path


def make_engine(cwd: Path, steps, tools=None) -> tuple[QueryEngine, ScriptedModel]:
    model = ScriptedModel(steps)
    engine = QueryEngine(EngineConfig(cwd=cwd, model="test"), tools or [EchoTool()], QueryDeps(model))
    return engine, model


async def run(engine: QueryEngine, text: str) -> Terminal:
    async for _ in engine.run_turn(text):
        pass
    assert engine.last_terminal is not None
    return engine.last_terminal


async def test_five_megabyte_argument_runs_bounded(home):
    big = "x" * (5 * 1024 * 1024)
    engine, model = make_engine(home, [reply(tool_call("Echo", {"message": big, "extra": 1})), reply("ok")])
    terminal = await run(engine, "go")
    assert terminal.reason == "completed"
    result = tool_results(engine.messages[2])[0]
    # additionalProperties is false: the call is refused with a short error (Claude Code's shape), not run.
    assert result.get("is_error") is True and "An unexpected parameter `extra` was provided" in result["content"]
    assert len(result["content"]) < 2000


async def test_hostile_bytes_are_stored_and_sent_as_valid_json(home):
    engine, model = make_engine(home, [reply(tool_call("Nasty", {})), reply("ok")], tools=[Nasty()])
    terminal = await run(engine, "go")
    assert terminal.reason == "completed"
    # The request body after the tool round must serialise to valid UTF-8 JSON.
    body = json.dumps(model.requests[1].messages, ensure_ascii=False)
    body.encode("utf-8")  # raises on lone surrogates
    loaded = load_transcript(engine.paths.transcript)
    assert not loaded.warnings
    assert "nul" in json.dumps(loaded.messages)


async def test_unknown_tool_and_invalid_input_do_not_stop_the_loop(home):
    steps = [reply(tool_call("NoSuchTool", {}), tool_call("Echo", {"wrong": 1})), reply("recovered")]
    engine, model = make_engine(home, steps)
    terminal = await run(engine, "go")
    assert terminal.reason == "completed"
    r1, r2 = tool_results(engine.messages[2])
    assert r1["is_error"] and "No such tool available: NoSuchTool" in r1["content"]
    assert r2["is_error"] and "InputValidationError: Echo failed" in r2["content"]
    assert len(tool_uses(engine.messages[1])) == 2
