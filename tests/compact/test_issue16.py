"""Issue 16's findings, one test each: the retain cut after a compaction, resume byte for byte through
the engine with all three stages deciding, the task by origin, spill names, the empty marker with
COMPACT=0, and the CJK estimate."""

from __future__ import annotations

import json

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import FunctionModel, reply, tool_call
from services.compact.autocompact import COMPACT_BOUNDARY_TEXT, SUMMARY_PREFIX
from services.compact.options import CompactOptions
from services.compact.pipeline import run_outbound_pipeline
from services.compact.retain import apply_retain_tail_if_needed, head_indices
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.request_check import check_request
from services.session import load_transcript
from services.tokens import estimate_tokens, text_units
from services.tool_result_storage import spill_path, write_spill
from tools.base import Tool, ToolContext, ToolOutput


def long_turn(n: int, body: int = 400, prefix: str = "u") -> list:
    msgs = [user_message("Refactor the parser")]
    for i in range(n):
        tid = f"{prefix}{i}"
        msgs.append(assistant_message([text_block(f"step {i}"), tool_use_block(tid, "Echo", {"n": i})]))
        msgs.append(user_message([tool_result_block(tid, "o" * body)]))
    return msgs


def test_retain_cut_does_not_outlive_a_compaction():
    o = CompactOptions(threshold=3000)
    state = ContentReplacementState()
    old = long_turn(30)
    first = apply_retain_tail_if_needed(old, o, state)
    assert state.retain_memo is not None and first.records
    # A compaction: the same length, a boundary first (as every compaction starts), other messages.
    new = [user_message(COMPACT_BOUNDARY_TEXT, meta={"compact_boundary": True}),
           user_message(SUMMARY_PREFIX + "did steps", meta={"compact_summary": True})]
    new += long_turn(30, body=50, prefix="v")[: len(old) - 2]
    out = apply_retain_tail_if_needed(new, o, state).messages  # no explicit invalidation even
    assert check_request(to_api(out)) == []
    assert out[0] is new[0] and out[1] is new[1]
    # and the explicit path the loop takes voids the memo outright
    apply_retain_tail_if_needed(old, o, state)
    state.history_replaced()
    assert state.retain_memo is None


def test_task_is_the_users_own_message_not_injected_context():
    msgs = [user_message("hook context", meta={"hook": "SessionStart"}),
            user_message("@srv:doc body " * 200, meta={"mcp_resource": "srv:doc"}),
            user_message("Fix the bug in parse.py")] + long_turn(30)[1:]
    assert head_indices(msgs) == (2,)
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=3000), ContentReplacementState()).messages
    assert out[0] is msgs[2]
    assert "omitted" in out[1]["content"][0]["text"]


def test_new_prompt_after_one_long_turn_keeps_the_conversation():
    # Old bug: the cut snapped to the newest user text, leaving [task, marker, "next"].
    msgs = long_turn(40) + [assistant_message([text_block("done")]), user_message("next")]
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=8000), ContentReplacementState()).messages
    assert out[-1] is msgs[-1] and len(out) > 4
    assert check_request(to_api(out)) == []


class Echo(Tool):
    name = "Echo"
    description = "Echo n characters"
    input_schema = {"type": "object"}
    max_result_chars = 100_000

    def is_read_only(self, input):
        return True

    async def call(self, input, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(input.get("c", "x") * input.get("n", 0))


class Reader(Echo):
    name = "Read"  # compactable


def scripted(n_calls: int, sizes):
    """A model that calls Read/Echo `n_calls` times with the given sizes, then answers."""
    state = {"i": 0}
    requests = []

    def fn(req):
        requests.append(req)
        i = state["i"]
        state["i"] += 1
        if i < n_calls:
            size = sizes[i % len(sizes)]
            calls = [tool_call("Read", {"n": size, "c": "abcdefgh"[i % 8]}, id=f"r{i}")]
            if i % 5 == 4:  # a parallel batch now and then
                calls += [tool_call("Echo", {"n": 30_000 + j, "c": "z"}, id=f"e{i}_{j}") for j in range(3)]
            return reply(f"call {i}", *calls)
        return reply("done")

    return FunctionModel(fn), requests


async def test_resume_sends_the_same_bytes_with_all_stages_deciding(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    compact = CompactOptions(threshold=60_000, max_turn_tool_result_chars=30_000, autocompact=False,
                             micro_low_water_percent=60)
    model, requests = scripted(24, [8_000, 20_000, 3_000, 14_000])
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="t", compact=compact, max_turns=200), [Reader(), Echo()],
                         QueryDeps(model))
    async for _ in engine.run_turn("Read a lot"):
        pass
    engine.close()
    records = [json.loads(x) for x in engine.paths.transcript.read_text().splitlines()]
    stages = {r.get("stage") for r in records if r.get("type") == "decision" and r.get("replacement") is not None}
    assert {"budget", "micro"} <= stages, stages
    # The next request, live and resumed: byte for byte.
    env = PipelineEnv(max_result_chars={"Read": 100_000, "Echo": 100_000}, spill_dir=engine.session_dir / "tool-results")
    live_next = run_outbound_pipeline(engine.messages + [user_message("next")], engine.replacement_state, compact, env)
    loaded = load_transcript(engine.paths.transcript)
    resumed_state = ContentReplacementState.from_records(loaded.records)
    resumed_next = run_outbound_pipeline(loaded.messages + [user_message("next")], resumed_state, compact, env)
    assert json.dumps(to_api(resumed_next.messages)) == json.dumps(to_api(live_next.messages))
    assert resumed_next.records == []
    for req in requests:
        assert check_request(req.messages) == []


def test_spill_names_from_a_hash_never_collide(tmp_path):
    a, _ = write_spill(tmp_path, "call:1", "first")
    b, _ = write_spill(tmp_path, "call_1", "second")
    assert a != b and a.read_text() == "first" and b.read_text() == "second"
    assert spill_path(tmp_path, "call:1").name.startswith("call_1-")
    assert spill_path(tmp_path, "../../etc/passwd").parent == tmp_path


async def test_whitespace_result_gets_the_marker_with_compact_off(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    seen = []

    def fn(req):
        seen.append(req)
        if len(seen) == 1:
            return reply(tool_call("Echo", {"n": 5, "c": " "}, id="w1"), tool_call("Echo", {"n": 0}, id="w2"))
        return reply("ok")

    compact = CompactOptions(enabled=False, autocompact=False)
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="t", compact=compact), [Echo()], QueryDeps(FunctionModel(fn)))
    async for _ in engine.run_turn("go"):
        pass
    engine.close()
    results = [b["content"] for b in seen[1].messages[-1]["content"]]
    assert results == ["(Echo completed with no output)"] * 2


def test_cjk_counts_by_script():
    assert estimate_tokens([user_message("中" * 1000)]) == 1000
    assert estimate_tokens([user_message("a" * 1000)]) == 250
    assert text_units("Привет") == 11  # 6 chars of a 2-byte script: 1.9 units (~0.5 token) each
    assert text_units("😀") == 5
    assert text_units("a中é😀") == 1 + 4 + 2 + 5


async def test_compact_command_then_next_request_through_the_engine(tmp_path, monkeypatch):
    """The reported bug end to end: a retain cut is recorded, /compact replaces the history, and the next
    request (strict check on) carries the summary and no orphan; a resume after it sends the same bytes."""
    from services.compact.autocompact import AutocompactContext, compact_now

    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    compact = CompactOptions(threshold=40_000, autocompact=False)
    model, requests = scripted(16, [9_000, 12_000])
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="t", compact=compact, max_turns=200), [Reader(), Echo()],
                         QueryDeps(model))
    async for _ in engine.run_turn("Read a lot"):
        pass
    assert engine.replacement_state.retain_memo is not None

    async def summariser(req):
        yield reply("the summary")

    res = await compact_now(list(engine.messages), AutocompactContext("", "t", summariser, compact, {}))
    engine.replace_history(res.messages)
    assert engine.replacement_state.retain_memo is None
    model2, requests2 = scripted(0, [1])
    engine.deps = QueryDeps(model2)
    async for _ in engine.run_turn("next"):
        pass
    engine.close()
    sent = requests2[0].messages
    assert check_request(sent) == []
    assert any("the summary" in json.dumps(m) for m in sent) and sent[-1]["content"][0]["text"] == "next"
    loaded = load_transcript(engine.paths.transcript)
    resumed = run_outbound_pipeline(loaded.messages, ContentReplacementState.from_records(loaded.records), compact,
                                    PipelineEnv(spill_dir=engine.session_dir / "tool-results"))
    live = run_outbound_pipeline(engine.messages, engine.replacement_state, compact,
                                 PipelineEnv(spill_dir=engine.session_dir / "tool-results"))
    assert json.dumps(to_api(resumed.messages)) == json.dumps(to_api(live.messages))
