"""The Agent tool with scripted models: nesting limit, narrowing, separate read state, parallel
children, abort cascade, report cap, usage roll-up."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import FunctionModel, ScriptedModel, reply, tool_call
from services.model_types import ModelRequest
from services.session import load_transcript
from tools.agent_tool import MAX_REPORT_CHARS, AgentTool
from tools.base import SessionState, Tool, ToolContext, ToolError, ToolOutput
from tools.echo import EchoTool
from tools.read import ReadTool


class Timeline(Tool):
    name = "Sleep"
    description = "sleep (test)"
    input_schema = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.events.append(("start", input["key"]))
        await asyncio.sleep(0.2)
        self.events.append(("end", input["key"]))
        return ToolOutput("slept")


def make_engine(tmp_path: Path, model: Any, extra: list[Tool] | None = None, **agent_kw: Any) -> QueryEngine:
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    tools: list[Tool] = [EchoTool(), ReadTool(), *(extra or [])]
    engine: QueryEngine
    agent = AgentTool(lambda: engine.tools, "claude-test", get_gate=lambda: engine.gate,
                      get_hooks=lambda: engine.hooks, **agent_kw)
    tools.append(agent)
    engine = QueryEngine(EngineConfig(cwd=cwd, model="claude-test"), tools, QueryDeps(call_model=model))
    return engine


async def run(engine: QueryEngine, text: str) -> list[Any]:
    return [ev async for ev in engine.run_turn(text)]


def last_result(engine: QueryEngine) -> list[dict[str, Any]]:
    return [b for b in engine.messages[-2]["content"] if b.get("type") == "tool_result"]


def is_child(req: ModelRequest) -> bool:
    return req.system.startswith("You are a sub-agent")


async def test_child_runs_and_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    model = ScriptedModel([
        reply(tool_call("Agent", {"description": "demo task", "prompt": "say done"})),
        reply("subagent done", usage={"input_tokens": 100, "output_tokens": 7}),
        reply("All good.", usage={"input_tokens": 10, "output_tokens": 3}),
    ])
    engine = make_engine(tmp_path, model)
    await run(engine, "delegate")
    (result,) = last_result(engine)
    assert not result.get("is_error") and result["content"] == "[Agent: demo task]\nsubagent done"
    child_req = model.requests[1]
    names = [t["name"] for t in child_req.tools]
    assert "Agent" not in names and "Echo" in names and "Read" in names
    assert child_req.messages == [{"role": "user", "content": [{"type": "text", "text": "say done"}]}]
    # Usage roll-up: the child's 100/7 counted with the parent's own, and recorded for resume.
    assert engine.usage.input_tokens == 110 and engine.usage.output_tokens == 3 + 7
    path = engine.paths.transcript
    engine.close()
    loaded = load_transcript(path)
    assert any(r.get("type") == "agent_usage" and r["usage"]["input_tokens"] == 100 for r in loaded.records)
    resumed = make_engine(tmp_path, ScriptedModel([]))
    resumed.resume(loaded)
    assert resumed.usage.input_tokens == 110 and resumed.usage.requests == engine.usage.requests
    # The child's transcript lives under the parent session.
    child_files = list((engine.session_dir / "agents").glob("*/transcript.jsonl"))
    assert len(child_files) == 1 and "subagent done" in child_files[0].read_text()


async def test_nesting_limit_and_narrowing(tmp_path: Path) -> None:
    engine_tools: list[Tool] = [EchoTool(), ReadTool()]
    model = ScriptedModel([])
    agent = AgentTool(lambda: engine_tools, "m", max_depth=1)
    engine_tools.append(agent)
    ctx = ToolContext(session=SessionState(cwd=tmp_path), project_root=tmp_path, depth=1)
    with pytest.raises(ToolError, match="depth exceeded \\(max 1\\)"):
        await agent.call({"description": "d", "prompt": "p"}, ctx)
    assert model.requests == []
    assert [t.name for t in agent.child_tools(1)] == ["Echo", "Read"]
    assert [t.name for t in agent.child_tools(1, ["Echo"])] == ["Echo"]
    with pytest.raises(ToolError, match="Unknown tool_names for the sub-agent: Bash"):
        agent.child_tools(1, ["Bash"])
    with pytest.raises(ToolError, match="cannot be nested"):
        agent.child_tools(1, ["Agent"])
    deeper = AgentTool(lambda: engine_tools, "m", max_depth=2)
    engine_tools[-1] = deeper
    assert "Agent" in [t.name for t in deeper.child_tools(1)]
    assert "Agent" not in [t.name for t in deeper.child_tools(2)]


async def test_narrowed_tools_reach_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    model = ScriptedModel([
        reply(tool_call("Agent", {"description": "d", "prompt": "p", "tool_names": ["Echo"]})),
        reply("ok"),
        reply("done"),
    ])
    engine = make_engine(tmp_path, model)
    await run(engine, "go")
    assert [t["name"] for t in model.requests[1].tools] == ["Echo"]


async def test_child_has_its_own_read_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    engine_holder: dict[str, QueryEngine] = {}
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("alpha\n")
    model = ScriptedModel([
        reply(tool_call("Read", {"file_path": "a.txt"})),
        reply(tool_call("Agent", {"description": "d", "prompt": "read a.txt"})),
        reply(tool_call("Read", {"file_path": "a.txt"})),  # the child
        reply("child saw alpha"),
        reply("done"),
    ])
    engine = make_engine(tmp_path, model)
    engine_holder["e"] = engine
    await run(engine, "go")
    child_read = [b for b in model.requests[3].messages[-1]["content"] if b.get("type") == "tool_result"][0]
    assert "alpha" in str(child_read["content"])  # full content, not the "unchanged" stub
    assert len(engine.state.read_state) == 1


async def test_parallel_children_overlap_when_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    sleeper = Timeline()

    def fn(req: ModelRequest) -> Any:
        if not is_child(req):
            if len(req.messages) == 1:
                return reply(
                    tool_call("Agent", {"description": "one", "prompt": "k1", "tool_names": ["Sleep"]}),
                    tool_call("Agent", {"description": "two", "prompt": "k2", "tool_names": ["Sleep"]}),
                )
            return reply("both done")
        key = req.messages[0]["content"][0]["text"]
        if len(req.messages) == 1:
            return reply(tool_call("Sleep", {"key": key}))
        return reply(f"report {key}")

    engine = make_engine(tmp_path, FunctionModel(fn), extra=[sleeper])
    await run(engine, "fan out")
    results = last_result(engine)
    assert [r["content"] for r in results] == ["[Agent: one]\nreport k1", "[Agent: two]\nreport k2"]
    ev = sleeper.events
    assert ev.index(("start", "k2")) < ev.index(("end", "k1"))  # overlapped
    # With a tool that is not read-only, they run one after the other.
    agent = next(t for t in engine.tools if t.name == "Agent")
    assert agent.is_concurrency_safe({"description": "d", "prompt": "p", "tool_names": ["Sleep", "Read"]})
    assert not agent.is_concurrency_safe({"description": "d", "prompt": "p"}) or all(
        t.is_read_only({}) for t in engine.tools if t.name != "Agent"
    )


async def test_abort_cascades_to_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    engine: QueryEngine

    def fn(req: ModelRequest) -> Any:
        if not is_child(req):
            return reply(tool_call("Agent", {"description": "slow", "prompt": "p"}))
        engine.abort()  # the user presses Esc while the child streams
        return reply("x" * 2000)

    engine = make_engine(tmp_path, FunctionModel(fn, delay=0.01))
    events = await run(engine, "go")
    assert events[-1].reason == "aborted"
    (result,) = [b for m in engine.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert result.get("is_error")


async def test_report_cap_keeps_the_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    long = "head " + "y" * (MAX_REPORT_CHARS + 5000) + " THE END"
    model = ScriptedModel([reply(tool_call("Agent", {"description": "d", "prompt": "p"})), reply(long), reply("ok")])
    engine = make_engine(tmp_path, model)
    await run(engine, "go")
    (result,) = last_result(engine)
    content = result["content"]
    assert content.startswith("[Agent: d]\n[…") and content.endswith(" THE END")
    assert "head " not in content and len(content) < MAX_REPORT_CHARS + 200
