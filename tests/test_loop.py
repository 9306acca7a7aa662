"""The ReAct loop through the engine, with the strict ScriptedModel as call_model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.loop.query import INTERRUPTED_NOTE, QueryParams, query
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.events import (
    AssistantEvent,
    Terminal,
    TextDeltaEvent,
    ToolEndEvent,
    ToolResultsEvent,
    ToolStartEvent,
)
from services.messages import (
    INTERRUPTED_TOOL_RESULT_MESSAGE,
    SKIPPED_TOOL_RESULT_MESSAGE,
    Message,
    tool_results,
    tool_uses,
    user_message,
)
from services.session import load_transcript
from tools.base import SessionState, Tool, ToolContext, ToolOutput
from tools.echo import EchoTool
from tools.permissions import REJECT_MESSAGE, PermissionGate, PermissionRequest


class Timeline:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def span(self, key: str) -> tuple[int, int]:
        return self.events.index(("start", key)), self.events.index(("end", key))


class SleepTool(Tool):
    """Sleeps for `seconds`, recording start and end in a shared timeline."""

    description = "Sleep for a while (test tool)."
    input_schema = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "seconds": {"type": "number"}},
        "required": ["key", "seconds"],
    }

    def __init__(self, name: str, timeline: Timeline, safe: bool):
        self.name = name
        self.timeline = timeline
        self.safe = safe
        self.finished: list[str] = []

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return self.safe

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.timeline.events.append(("start", input["key"]))
        await asyncio.sleep(input["seconds"])
        self.timeline.events.append(("end", input["key"]))
        self.finished.append(input["key"])
        return ToolOutput(f"slept {input['key']}")


class Boom(Tool):
    name = "Boom"
    description = "Always raises (test tool)."
    input_schema = {"type": "object", "properties": {}}

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise RuntimeError("kaboom")


class WriteLike(Tool):
    """Not read-only: the permission gate applies."""

    name = "WriteLike"
    description = "Pretends to write a file (test tool)."
    input_schema = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.calls.append(input["file_path"])
        return ToolOutput("written")


def make_engine(cwd: Path, model, tools: list[Tool] | None = None, gate: PermissionGate | None = None,
                max_turns: int = 100) -> QueryEngine:
    config = EngineConfig(cwd=cwd, model="test-model", max_turns=max_turns)
    return QueryEngine(config, tools if tools is not None else [EchoTool()], QueryDeps(model), gate=gate)


async def run(engine: QueryEngine, text: str) -> tuple[list, Terminal]:
    events = [ev async for ev in engine.run_turn(text)]
    assert isinstance(events[-1], Terminal)
    assert engine.last_terminal is events[-1]
    return events, events[-1]


def assert_paired(messages: list[Message]) -> None:
    """Every tool_use is answered by exactly one tool_result in the very next message, in order."""
    for i, m in enumerate(messages):
        uses = tool_uses(m)
        if not uses:
            continue
        assert i + 1 < len(messages), "dangling tool_use at the end of the history"
        results = tool_results(messages[i + 1])
        assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]


@pytest.fixture
def cwd(agent_home, tmp_path) -> Path:
    d = tmp_path / "proj"
    d.mkdir()
    return d


async def test_tool_round_trip_sends_the_tool_result(cwd):
    call = tool_call("Echo", {"message": "ping"})
    model = ScriptedModel([reply(call), reply("pong received")])
    engine = make_engine(cwd, model)
    events, terminal = await run(engine, "echo ping")
    assert terminal.reason == "completed" and terminal.turns == 2
    assert len(model.requests) == 2
    first, second = model.requests
    assert first.messages == [{"role": "user", "content": [{"type": "text", "text": "echo ping"}]}]
    last = second.messages[-1]
    assert last["role"] == "user"
    assert last["content"] == [{"type": "tool_result", "tool_use_id": call["id"], "content": "ping"}]
    # The first tool round is sent once (react-agent-mini's B1 sent it twice).
    assert len(second.messages) == 3
    assert [m["role"] for m in engine.messages] == ["user", "assistant", "user", "assistant"]
    assert second.tools == [EchoTool().to_api()]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("ToolStartEvent") < kinds.index("ToolEndEvent") < kinds.index("ToolResultsEvent")
    model.assert_done()


async def test_text_and_tool_use_in_one_message_are_both_kept(cwd):
    call = tool_call("Echo", {"message": "x"})
    model = ScriptedModel([reply("Let me check first.", call), reply("done")])
    engine = make_engine(cwd, model)
    events, terminal = await run(engine, "go")
    assert terminal.reason == "completed"
    assistant = engine.messages[1]
    assert assistant["content"][0] == {"type": "text", "text": "Let me check first."}
    assert assistant["content"][1]["type"] == "tool_use"
    sent = model.requests[1].messages[1]
    assert [b["type"] for b in sent["content"]] == ["text", "tool_use"]
    deltas = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert "Let me check first." in deltas
    # Stored messages keep usage locally, but what is sent has no local keys.
    assert "usage" not in sent and "meta" not in sent


async def test_parallel_safe_tools_overlap_and_results_keep_order(cwd):
    timeline = Timeline()
    tool = SleepTool("Nap", timeline, safe=True)
    calls = [tool_call("Nap", {"key": k, "seconds": s}) for k, s in (("a", 0.15), ("b", 0.05), ("c", 0.1))]
    model = ScriptedModel([reply(*calls), reply("rested")])
    engine = make_engine(cwd, model, [tool])
    _, terminal = await run(engine, "nap")
    assert terminal.reason == "completed"
    starts = [timeline.events.index(("start", k)) for k in "abc"]
    ends = [timeline.events.index(("end", k)) for k in "abc"]
    assert max(starts) < min(ends), f"safe tools did not overlap: {timeline.events}"
    assert tool.finished == ["b", "c", "a"]  # they finished out of order...
    results = tool_results(engine.messages[2])
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]  # ...results keep tool_use order
    assert [r["content"] for r in results] == ["slept a", "slept b", "slept c"]


async def test_unsafe_tools_run_one_by_one_in_order(cwd):
    timeline = Timeline()
    tool = SleepTool("Work", timeline, safe=False)
    calls = [tool_call("Work", {"key": k, "seconds": s}) for k, s in (("a", 0.06), ("b", 0.01), ("c", 0.03))]
    model = ScriptedModel([reply(*calls), reply("worked")])
    engine = make_engine(cwd, model, [tool], gate=PermissionGate(mode="bypassPermissions"))
    _, terminal = await run(engine, "work")
    assert terminal.reason == "completed"
    assert timeline.events == [("start", "a"), ("end", "a"), ("start", "b"), ("end", "b"),
                               ("start", "c"), ("end", "c")]
    results = tool_results(engine.messages[2])
    assert [r["content"] for r in results] == ["slept a", "slept b", "slept c"]


async def test_mixed_batch_serialises_around_an_unsafe_call(cwd):
    timeline = Timeline()
    safe = SleepTool("Look", timeline, safe=True)
    unsafe = SleepTool("Touch", timeline, safe=False)
    calls = [
        tool_call("Look", {"key": "r1", "seconds": 0.03}),
        tool_call("Look", {"key": "r2", "seconds": 0.03}),
        tool_call("Touch", {"key": "w", "seconds": 0.01}),
        tool_call("Look", {"key": "r3", "seconds": 0.01}),
    ]
    model = ScriptedModel([reply(*calls), reply("ok")])
    engine = make_engine(cwd, model, [safe, unsafe], gate=PermissionGate(mode="bypassPermissions"))
    await run(engine, "go")
    ev = timeline.events
    assert max(ev.index(("start", "r1")), ev.index(("start", "r2"))) < min(ev.index(("end", "r1")),
                                                                           ev.index(("end", "r2")))
    assert ev.index(("end", "r2")) < ev.index(("start", "w")) < ev.index(("end", "w")) < ev.index(("start", "r3"))
    assert [r["tool_use_id"] for r in tool_results(engine.messages[2])] == [c["id"] for c in calls]


async def test_max_turns_stops_with_a_paired_history(cwd):
    steps = [reply(tool_call("Echo", {"message": f"m{i}"})) for i in range(2)]
    model = ScriptedModel(steps)
    engine = make_engine(cwd, model, max_turns=2)
    _, terminal = await run(engine, "loop forever")
    assert terminal.reason == "max_turns" and terminal.turns == 2
    assert len(model.requests) == 2
    assert engine.messages[-1]["role"] == "user" and tool_results(engine.messages[-1])
    assert_paired(engine.messages)
    model.assert_done()


async def test_abort_mid_stream_keeps_partial_text_and_a_note(cwd):
    model = ScriptedModel([reply("This is a long answer " * 20)], delay=0.02)
    engine = make_engine(cwd, model)
    deltas = 0
    async for ev in engine.run_turn("talk"):
        if isinstance(ev, TextDeltaEvent):
            deltas += 1
            if deltas == 2:
                assert engine.abort() is True
    terminal = engine.last_terminal
    assert terminal is not None and terminal.reason == "aborted"
    roles = [m["role"] for m in engine.messages]
    assert roles == ["user", "assistant", "user"]
    partial = engine.messages[1]["content"][0]["text"]
    assert partial.startswith("This is a long answer") and len(partial) < len("This is a long answer " * 20)
    assert engine.messages[2]["content"][0]["text"] == INTERRUPTED_NOTE
    assert engine.abort() is False  # nothing running any more


async def test_abort_mid_tool_answers_every_tool_use(cwd):
    timeline = Timeline()
    tool = SleepTool("Slow", timeline, safe=False)
    calls = [tool_call("Slow", {"key": "long", "seconds": 30}), tool_call("Slow", {"key": "next", "seconds": 0})]
    model = ScriptedModel([reply("Working.", *calls)])
    engine = make_engine(cwd, model, [tool], gate=PermissionGate(mode="bypassPermissions"))
    ends: list[ToolEndEvent] = []
    async for ev in engine.run_turn("work"):
        if isinstance(ev, ToolStartEvent):
            engine.abort()
        if isinstance(ev, ToolEndEvent):
            ends.append(ev)
    assert engine.last_terminal.reason == "aborted"
    assert tool.finished == []  # the sleeping tool was cancelled, the next never started
    results = tool_results(engine.messages[2])
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert results[0]["content"] == INTERRUPTED_TOOL_RESULT_MESSAGE and results[0]["is_error"]
    assert results[1]["content"] == SKIPPED_TOOL_RESULT_MESSAGE and results[1]["is_error"]
    assert [e.ok for e in ends] == [False]
    assert_paired(engine.messages)
    model.assert_done()


async def test_cancelling_the_turn_task_still_pairs_the_history(cwd):
    timeline = Timeline()
    tool = SleepTool("Slow", timeline, safe=True)
    call = tool_call("Slow", {"key": "k", "seconds": 30})
    model = ScriptedModel([reply(call)])
    engine = make_engine(cwd, model, [tool])
    started = asyncio.Event()

    async def consume() -> None:
        async for ev in engine.run_turn("go"):
            if isinstance(ev, ToolStartEvent):
                started.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_paired(engine.messages)
    assert engine.messages[-1]["content"][0]["tool_use_id"] == call["id"]
    # The transcript has the repaired history too.
    assert_paired(load_transcript(engine.paths.transcript).messages)


async def test_user_deny_rejects_and_ends_the_turn(cwd):
    asked: list[PermissionRequest] = []

    async def deny(req: PermissionRequest):
        asked.append(req)
        return "deny"

    writer = WriteLike()
    calls = [tool_call("WriteLike", {"file_path": "a.txt"}), tool_call("WriteLike", {"file_path": "b.txt"})]
    model = ScriptedModel([reply(*calls)])
    engine = make_engine(cwd, model, [writer], gate=PermissionGate(ask=deny))
    _, terminal = await run(engine, "write")
    assert terminal.reason == "aborted"
    assert writer.calls == [] and len(asked) == 1 and "a.txt" in asked[0].label
    results = tool_results(engine.messages[2])
    assert results[0]["content"] == REJECT_MESSAGE and results[0]["is_error"]
    assert results[1]["content"] == SKIPPED_TOOL_RESULT_MESSAGE
    model.assert_done()  # no further model call after the denial


async def test_user_allow_once_runs_the_tool(cwd):
    async def once(req: PermissionRequest):
        return "once"

    writer = WriteLike()
    model = ScriptedModel([reply(tool_call("WriteLike", {"file_path": "a.txt"})), reply("ok")])
    engine = make_engine(cwd, model, [writer], gate=PermissionGate(ask=once))
    _, terminal = await run(engine, "write")
    assert terminal.reason == "completed" and writer.calls == ["a.txt"]


async def test_one_shot_gate_denies_without_asking_and_the_loop_goes_on(cwd, monkeypatch):
    monkeypatch.delenv("ALLOW_WRITE", raising=False)
    writer = WriteLike()
    model = ScriptedModel([reply(tool_call("WriteLike", {"file_path": "a.txt"})), reply("I could not write.")])
    engine = make_engine(cwd, model, [writer], gate=PermissionGate())
    _, terminal = await run(engine, "write")
    assert terminal.reason == "completed"
    assert writer.calls == []
    (result,) = tool_results(engine.messages[2])
    assert result["content"] == REJECT_MESSAGE and result["is_error"]
    assert model.requests[1].messages[-1]["content"][0]["content"] == REJECT_MESSAGE


async def test_unknown_tool_and_invalid_input_are_errors_and_the_loop_goes_on(cwd):
    calls = [tool_call("Nope", {"x": 1}), tool_call("Echo", {"message": 42}), tool_call("Echo", {"message": "ok"})]
    model = ScriptedModel([reply(*calls), reply("recovered")])
    engine = make_engine(cwd, model)
    events, terminal = await run(engine, "go")
    assert terminal.reason == "completed"
    r1, r2, r3 = tool_results(engine.messages[2])
    assert r1["is_error"] and r1["content"] == "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"
    assert r2["is_error"] and r2["content"] == (
        "<tool_use_error>InputValidationError: Echo failed due to the following issues:\n"
        "The parameter `message` type is expected as `string` but provided as `number`</tool_use_error>")
    assert r3 == {"type": "tool_result", "tool_use_id": calls[2]["id"], "content": "ok"}
    ok = [e.ok for e in events if isinstance(e, ToolEndEvent)]
    assert ok == [False, False, True]


async def test_a_raising_tool_becomes_an_error_result(cwd):
    model = ScriptedModel([reply(tool_call("Boom", {})), reply("it failed")])
    engine = make_engine(cwd, model, [Boom()], gate=PermissionGate(mode="bypassPermissions"))
    _, terminal = await run(engine, "boom")
    assert terminal.reason == "completed"
    (result,) = tool_results(engine.messages[2])
    assert result["is_error"] and "RuntimeError" in result["content"] and "kaboom" in result["content"]


async def test_model_error_ends_with_terminal_error(cwd):
    from services.model_types import ModelError

    model = ScriptedModel([ModelError("Model API error (HTTP 500): down")])
    engine = make_engine(cwd, model)
    _, terminal = await run(engine, "hi")
    assert terminal.reason == "error" and "HTTP 500" in terminal.error
    assert [m["role"] for m in engine.messages] == ["user"]


async def test_scripted_model_is_strict(cwd):
    model = ScriptedModel([reply(tool_call("Echo", {"message": "again"}))])
    engine = make_engine(cwd, model)
    with pytest.raises(AssertionError, match="unexpected call #2"):
        await run(engine, "go")
    unused = ScriptedModel([reply("one"), reply("two")])
    engine2 = make_engine(cwd, unused)
    await run(engine2, "go")
    with pytest.raises(AssertionError, match="never called"):
        unused.assert_done()


async def test_query_does_not_write_the_callers_history(cwd):
    model = ScriptedModel([reply(tool_call("Echo", {"message": "x"})), reply("done")])
    history = [user_message("hi")]
    params = QueryParams(
        messages=history,
        system="sys",
        tools=[EchoTool()],
        tool_context=ToolContext(session=SessionState(cwd=cwd), project_root=cwd),
        model="m",
    )
    events = [ev async for ev in query(params, QueryDeps(model))]
    assert history == [user_message("hi")]
    assert isinstance(events[-1], Terminal) and events[-1].reason == "completed"
    assert sum(isinstance(e, AssistantEvent) for e in events) == 2
    assert sum(isinstance(e, ToolResultsEvent) for e in events) == 1
    assert model.requests[0].system == "sys"
