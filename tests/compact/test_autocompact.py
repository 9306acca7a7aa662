"""Stage 0, LLM autocompact: react-agent-mini's autoCompact tests ported, plus tail alignment (B4), the
summary taken once (B22), the circuit breaker, and the loop/engine write-back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import FunctionModel, ScriptedModel, reply
from services.compact.autocompact import (
    COMPACT_BOUNDARY_TEXT,
    MAX_AUTOCOMPACT_FAILURES,
    SUMMARY_PREFIX,
    AutocompactContext,
    CompactError,
    autocompact,
    compact_conversation,
    compact_now,
    messages_after_boundary,
)
from services.compact.cc_texts import compact_prompt
from services.compact.estimate import estimate_outbound_chars
from services.compact.options import CompactOptions
from services.events import NoticeEvent
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.model_types import ModelError
from services.session import load_transcript


def history(n: int = 6) -> list:
    msgs = [user_message("Please fix the parser in src/parse.py")]
    for i in range(n):
        tid = f"t{i}"
        msgs.append(assistant_message([text_block(f"looking {i}"), tool_use_block(tid, "Read", {"file_path": f"f{i}"})]))
        msgs.append(user_message([tool_result_block(tid, "content " * 50)]))
    return msgs


def ctx_for(model, keep: int = 2, state: dict | None = None, **opt) -> AutocompactContext:
    base = dict(autocompact_percent=50, context_window_tokens=10)
    base.update(opt)
    return AutocompactContext("sys", "m", model, CompactOptions(**base), state if state is not None else {}, keep)


def summary_model(text: str = "this is the summary") -> ScriptedModel:
    return ScriptedModel([reply(text)])


def text_of(m) -> str:
    return "".join(b.get("text", "") for b in m["content"])


async def test_compact_conversation_shape():
    msgs = history()
    model = summary_model()
    res = await compact_conversation(msgs, ctx_for(model, keep=2))
    out = res.messages
    assert text_of(out[0]) == COMPACT_BOUNDARY_TEXT
    assert text_of(out[1]).startswith(SUMMARY_PREFIX) and "\nthis is the summary" in text_of(out[1])
    assert to_api(out[-2:]) == to_api(msgs[-2:]) and out[-1]["meta"]["compact_end"]
    assert len(out) < len(msgs)
    req = model.requests[0]
    # The summarised part as the loop sends it, Claude Code's prompt appended as the last user text.
    assert req.tools == [] and req.system == "sys"
    assert req.messages[-1]["content"][-1]["text"] == compact_prompt()
    assert req.messages[0]["content"][0]["text"] == "Please fix the parser in src/parse.py"


async def test_throwing_summarize_rejects_input_unchanged():
    msgs = history()
    snapshot = json.dumps(msgs)
    with pytest.raises(ModelError, match="summarize failed"):
        await compact_conversation(msgs, ctx_for(ScriptedModel([ModelError("summarize failed")])))
    assert json.dumps(msgs) == snapshot


async def test_blank_summary_rejected():
    with pytest.raises(CompactError, match="(?i)empty"):
        await compact_conversation(history(), ctx_for(summary_model("   ")))


async def test_autocompact_over_threshold_succeeds():
    res = await autocompact(history(), ctx_for(summary_model()))
    assert res is not None and text_of(res.messages[0]) == COMPACT_BOUNDARY_TEXT
    assert [k for k, _ in res.notices] == ["summarised"]
    assert "ctx ~100%" in res.notices[0][1]  # "-> ctx ~N%", or "usage unchanged" when it stayed the same


async def test_below_threshold_returns_none():
    model = ScriptedModel([])
    res = await autocompact(history(), ctx_for(model, autocompact_percent=80, context_window_tokens=10**6))
    assert res is None and model.requests == []


def test_real_usage_counts(monkeypatch):
    msgs = history(1)
    msgs.insert(1, assistant_message([text_block("hi")], usage={"input_tokens": 9000, "output_tokens": 10}))
    from services.compact.autocompact import token_count

    assert token_count(msgs) >= 9010


async def test_autocompact_disabled_but_compact_now_forces():
    model = summary_model()
    ctx = ctx_for(model, autocompact=False)
    assert await autocompact(history(), ctx) is None and model.requests == []
    res = await compact_now(history(), ctx)
    assert text_of(res.messages[0]) == COMPACT_BOUNDARY_TEXT


async def test_compact_disabled_refuses_even_forced():
    ctx = ctx_for(ScriptedModel([]), enabled=False)
    assert await autocompact(history(), ctx) is None
    with pytest.raises(CompactError, match="COMPACT=0"):
        await compact_now(history(), ctx)


async def test_a_failing_summary_opens_the_breaker_with_a_notice():
    state: dict = {}
    model = ScriptedModel([ModelError("down")])
    res = await autocompact(history(), ctx_for(model, state=state))
    assert res is not None and not res.replaced and res.messages == history()
    assert [k for k, _ in res.notices] == ["compact_failed"] and "/compact" in res.notices[0][1]
    assert state["consecutive_failures"] == MAX_AUTOCOMPACT_FAILURES == 1 and state["circuit_open"]
    # open: the next call does not call the model at all (ScriptedModel would raise on an extra call)
    assert await autocompact(history(), ctx_for(model, state=state)) is None
    assert len(model.requests) == 1


async def test_compact_now_closes_the_breaker():
    state: dict = {}
    model = ScriptedModel([ModelError("down"), reply("ok summary"), reply("again")])
    await autocompact(history(), ctx_for(model, state=state))
    assert state["circuit_open"]
    assert (await compact_now(history(), ctx_for(model, state=state))).replaced
    assert state["consecutive_failures"] == 0 and not state["circuit_open"]
    assert await autocompact(history(), ctx_for(model, state=state)) is not None


async def test_failure_leaves_messages_equal():
    msgs = history()
    snapshot = json.dumps(msgs)
    res = await autocompact(msgs, ctx_for(ScriptedModel([ModelError("x")])))
    assert json.dumps(msgs) == snapshot and res is not None and res.messages is msgs


async def test_messages_after_boundary():
    res = await compact_conversation(history(), ctx_for(summary_model("the 摘要")))
    after = messages_after_boundary(res.messages)
    assert all(text_of(m) != COMPACT_BOUNDARY_TEXT for m in after)
    assert after[0]["content"][0]["type"] == "text" and "摘要" in after[0]["content"][0]["text"]
    assert "compact boundary" in COMPACT_BOUNDARY_TEXT


async def test_tail_never_starts_with_orphaned_tool_result():
    msgs = history()
    # keep=1 would start the tail at the last tool_result: alignment moves it back to its tool_use
    for keep in range(1, 6):
        res = await compact_conversation(msgs, ctx_for(summary_model(), keep=keep))
        tail = res.messages[2:]
        uses = {b["id"] for m in tail for b in m["content"] if b["type"] == "tool_use"}
        for m in tail:
            for b in m["content"]:
                if b["type"] == "tool_result":
                    assert b["tool_use_id"] in uses
        assert tail[0]["role"] == "assistant" or tail[0]["content"][0]["type"] == "text"


async def test_summary_collected_once_not_doubled():
    # The scripted model streams the text as deltas and repeats it in the final message (B22).
    res = await compact_conversation(history(), ctx_for(summary_model("ABCDEFGHIJKLMNOPQRSTUVWXYZ")))
    assert text_of(res.messages[1]).count("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 1


async def test_short_history_forced_summarises_everything():
    msgs = [user_message("hi"), assistant_message([text_block("hello")])]
    res = await compact_now(msgs, ctx_for(summary_model(), keep=4))
    assert len(res.messages) == 3 and text_of(res.messages[0]) == COMPACT_BOUNDARY_TEXT
    assert to_api([res.messages[2]]) == to_api([msgs[0]])  # the task, kept verbatim


async def test_nothing_to_compact_for_two_messages():
    msgs = [user_message("hi"), assistant_message([text_block("hello")])]
    assert await autocompact(msgs, ctx_for(ScriptedModel([]))) is None


# ---- through the loop and the engine -------------------------------------------------------


def _engine(tmp_path: Path, monkeypatch, model, **opt) -> QueryEngine:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    compact = CompactOptions(**{"autocompact_percent": 50, "context_window_tokens": 1000, **opt})
    return QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=compact), [], QueryDeps(model))


async def test_engine_writes_summary_back_and_to_transcript(tmp_path, monkeypatch):
    calls = []

    def fn(req):
        calls.append(req)
        if req.messages[-1]["content"][-1].get("text") == compact_prompt():
            return reply("summary of the long chat")
        return reply("ok")

    model = FunctionModel(fn)
    engine = _engine(tmp_path, monkeypatch, model)
    engine.messages.extend(history(8))  # ~ 3000 chars: over 50% of 1000 tokens
    notices = []
    async for ev in engine.run_turn("continue"):
        if isinstance(ev, NoticeEvent):
            notices.append(ev.kind)
    assert "summarised" in notices
    assert text_of(engine.messages[0]) == COMPACT_BOUNDARY_TEXT
    sent = calls[-1].messages
    assert sent[0]["content"][0]["text"] == COMPACT_BOUNDARY_TEXT
    assert sent[1]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    loaded = load_transcript(engine.paths.transcript)
    engine.close()
    assert text_of(loaded.messages[0]) == COMPACT_BOUNDARY_TEXT


async def test_engine_noop_autocompact_keeps_history(tmp_path, monkeypatch):
    model = ScriptedModel([reply("ok")])
    engine = _engine(tmp_path, monkeypatch, model, autocompact=False)
    engine.messages.extend(history(8))
    snapshot = json.dumps(engine.messages)
    async for _ in engine.run_turn("go on"):
        pass
    engine.close()
    assert json.dumps(engine.messages[: len(json.loads(snapshot))]) == snapshot


async def test_no_resummarise_when_only_the_tail_is_left():
    res = await compact_conversation(history(), ctx_for(summary_model(), keep=2))
    model = ScriptedModel([])
    assert await autocompact(res.messages, ctx_for(model, keep=2)) is None and model.requests == []


async def test_summary_request_fits_the_window():
    msgs = [user_message("THE TASK statement")]
    for i in range(3000):
        msgs.append(assistant_message([tool_use_block(f"t{i}", "Read", {"file_path": f"f{i}"})]))
        msgs.append(user_message([tool_result_block(f"t{i}", "z" * 2000)]))
    model = summary_model()
    opts = CompactOptions.for_window(100_000)
    await compact_conversation(msgs, AutocompactContext("sys", "m", model, opts, {}, 2))
    req = model.requests[0]
    sent = estimate_outbound_chars(req.messages) // 4  # tokens, the prompt included
    assert sent + req.max_tokens <= 100_000
    assert req.messages[0]["content"][0]["text"] == "THE TASK statement"
    assert "f2996" in json.dumps(req.messages)  # the newest part of the summarised stretch is there
