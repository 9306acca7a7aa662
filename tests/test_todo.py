"""TodoWrite: validation, the compact summary, and the plan surviving resume (and reset by clear)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.session import load_transcript
from tools.base import SessionState, ToolContext, ToolError
from tools.orchestration import ToolRunner
from tools.permissions import PermissionGate
from tools.todo import TodoWriteTool, format_todos, latest_todos
from tools.validation import validate_input

PLAN = [
    {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
    {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending"},
]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=tmp_path), project_root=tmp_path, tool_use_id="toolu_1")


async def test_update_stores_the_plan_and_summarises(ctx: ToolContext) -> None:
    out = await TodoWriteTool().call({"todos": PLAN}, ctx)
    assert not out.is_error
    assert ctx.session.todos == PLAN
    assert out.summary == "1/3 done · Fixing the bug"
    assert "[x] Read the code" in out.content and "[>] Fixing the bug" in out.content
    assert "[ ] Run the tests" in out.content
    assert "3 items: 1 completed, 1 in progress, 1 pending" in out.content
    assert format_todos(PLAN).splitlines() == ["[x] Read the code", "[>] Fixing the bug", "[ ] Run the tests"]


async def test_more_than_one_in_progress_is_refused(ctx: ToolContext) -> None:
    two = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    with pytest.raises(ToolError, match="At most one todo may be in_progress"):
        await TodoWriteTool().call({"todos": two}, ctx)
    assert ctx.session.todos is None


def test_schema_rejects_bad_status_and_missing_content() -> None:
    tool = TodoWriteTool()
    assert validate_input(tool, {"todos": PLAN}) is None
    assert "InputValidationError: TodoWrite failed" in (validate_input(tool, {"todos": [{"content": "x", "status": "done"}]}) or "")
    assert validate_input(tool, {"todos": [{"status": "pending"}]}) is not None
    assert validate_input(tool, {"todos": [{"content": "", "status": "pending"}]}) is not None
    assert validate_input(tool, {}) is not None


async def test_empty_list_clears_and_no_in_progress_is_nudged(ctx: ToolContext) -> None:
    out = await TodoWriteTool().call({"todos": [{"content": "a", "status": "pending"}]}, ctx)
    assert "No item is in progress" in out.content
    out = await TodoWriteTool().call({"todos": []}, ctx)
    assert out.content == "Todo list cleared." and out.summary == "plan cleared"
    assert ctx.session.todos == []


async def test_two_updates_in_one_message_apply_in_order(ctx: ToolContext) -> None:
    tool = TodoWriteTool()
    assert tool.is_read_only({}) and not tool.is_concurrency_safe({})
    first = tool_call("TodoWrite", {"todos": [{"content": "a", "status": "in_progress"}]})
    second = tool_call("TodoWrite", {"todos": [{"content": "a", "status": "completed"}]})
    runner = ToolRunner({"TodoWrite": tool}, ctx, PermissionGate())
    async for _ in runner.run([first, second]):
        pass
    assert ctx.session.todos == [{"content": "a", "status": "completed"}]


def test_latest_todos_from_history_skips_failed_calls() -> None:
    ok = tool_call("TodoWrite", {"todos": PLAN}, id="t1")
    bad = tool_call("TodoWrite", {"todos": [{"content": "x", "status": "in_progress"}] * 2}, id="t2")
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [ok]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        {"role": "assistant", "content": [bad]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "no", "is_error": True}]},
    ]
    assert latest_todos(messages) == PLAN
    assert latest_todos(messages[:1]) is None
    # A record wins (it survives an autocompact that summarised the call away).
    rec = {"type": "todos", "todos": [{"content": "z", "status": "pending"}]}
    assert latest_todos(messages[:1], [rec]) == [{"content": "z", "status": "pending"}]


def _engine(tmp_path: Path, model: ScriptedModel) -> QueryEngine:
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    return QueryEngine(EngineConfig(cwd=cwd, model="claude-test"), [TodoWriteTool()], QueryDeps(call_model=model))


async def test_plan_survives_resume_and_is_reset_by_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    model = ScriptedModel([reply("Planning.", tool_call("TodoWrite", {"todos": PLAN})), reply("Planned.")])
    engine = _engine(tmp_path, model)
    async for _ in engine.run_turn("fix the bug"):
        pass
    assert engine.state.todos == PLAN
    path = engine.paths.transcript
    engine.close()
    loaded = load_transcript(path)
    assert any(r.get("type") == "todos" and r["todos"] == PLAN for r in loaded.records)

    resumed = _engine(tmp_path, ScriptedModel([]))
    resumed.resume(loaded)
    assert resumed.state.todos == PLAN
    resumed.clear()
    assert resumed.state.todos is None
    resumed.close()


async def test_resume_recovers_the_plan_from_history_without_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    model = ScriptedModel([reply(tool_call("TodoWrite", {"todos": PLAN})), reply("ok")])
    engine = _engine(tmp_path, model)
    async for _ in engine.run_turn("plan it"):
        pass
    path = engine.paths.transcript
    engine.close()
    loaded = load_transcript(path)
    loaded.records = [r for r in loaded.records if r.get("type") != "todos"]
    resumed = _engine(tmp_path, ScriptedModel([]))
    resumed.resume(loaded)
    assert resumed.state.todos == PLAN
    resumed.close()
