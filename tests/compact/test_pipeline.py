"""The outbound pipeline in order (budget -> micro -> retain): react-agent-mini's compact.test.ts
pipeline, threshold, disable and TRACE cases ported, plus resume and the loop wiring."""

from __future__ import annotations

import json
from pathlib import Path

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.compact.micro import MICROCOMPACT_NOTE
from services.compact.options import CompactOptions
from services.compact.pipeline import (
    compact_messages,
    run_outbound_pipeline,
    sent_whole_ids,
    visible_result_ids,
)
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.events import NoticeEvent
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)
from tools.base import Tool, ToolContext, ToolOutput


def rounds(n: int, body: int = 800) -> list:
    msgs = []
    for i in range(n):
        tid = f"toolu_{i:04d}"
        msgs.append(user_message(f"step {i}"))
        msgs.append(assistant_message([tool_use_block(tid, "Read", {"file_path": f"f{i}.txt"})]))
        msgs.append(user_message([tool_result_block(tid, f"BODY{i}:" + "x" * body)]))
        msgs.append(assistant_message([text_block(f"done {i}")]))
    return msgs


def results(msgs: list) -> list[str]:
    return [b["content"] for m in msgs if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]


def test_micro_then_retain_outbound_only():
    msgs = rounds(6)
    out = compact_messages(msgs, CompactOptions(threshold=0, micro_keep_recent=2, micro_min_chars=100))
    assert len(out) < len(msgs) and any((m.get("meta") or {}).get("omitted") for m in out)
    assert all(r.startswith("BODY") for r in results(msgs))


def test_micro_enough_skips_retain(monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    msgs = rounds(6)
    out = compact_messages(
        msgs, CompactOptions(threshold=2000, micro_keep_recent=1, micro_min_chars=100,
                             micro_low_water_percent=70)
    )
    assert len(out) == len(msgs)
    assert MICROCOMPACT_NOTE in results(out)[0]
    err = capsys.readouterr().err
    assert "compact.micro replaced=" in err and "strategy=micro" in err
    assert "stage=retain" not in err


def test_threshold_high_same_reference():
    msgs = rounds(10, body=10)
    assert compact_messages(msgs, CompactOptions(threshold=1_000_000)) is msgs


def test_env_threshold(monkeypatch):
    # COMPACT_THRESHOLD_CHARS sets micro's threshold; retain acts only when the request would not fit.
    monkeypatch.setenv("COMPACT_THRESHOLD_CHARS", "50")
    monkeypatch.setenv("CONTEXT_WINDOW_TOKENS", "8000")
    opts = CompactOptions.from_env()
    assert opts.threshold == 50 and opts.retain_units == (8000 - 1000) * 4
    out = compact_messages(rounds(10, body=10), opts)
    assert not any((m.get("meta") or {}).get("omitted") for m in out)
    out = compact_messages(rounds(200, body=200), opts)
    assert any((m.get("meta") or {}).get("omitted") for m in out)


def test_disabled_same_reference(monkeypatch):
    msgs = rounds(6)
    assert compact_messages(msgs, CompactOptions(enabled=False, threshold=1)) is msgs
    monkeypatch.setenv("COMPACT", "0")
    o = CompactOptions.from_env()
    assert not o.enabled and not o.autocompact
    assert compact_messages(msgs, o) is msgs


def test_no_compaction_no_trace(monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    compact_messages(rounds(2, body=10), CompactOptions())
    assert "compact.run" not in capsys.readouterr().err


def test_visible_ids_follow_identity():
    msgs = rounds(6)
    state = ContentReplacementState()
    res = run_outbound_pipeline(
        msgs, state, CompactOptions(threshold=2400, micro_keep_recent=2, micro_min_chars=100,
                                    micro_low_water_percent=90),
        PipelineEnv(),
    )
    visible = visible_result_ids(msgs, res.messages)
    assert visible == {"toolu_0004", "toolu_0005"}
    assert sent_whole_ids(res.messages, state) == visible  # the loop's O(outbound) version agrees


def test_notices_and_records_collected():
    res = run_outbound_pipeline(
        rounds(12), ContentReplacementState(),
        CompactOptions(threshold=0, micro_keep_recent=2, micro_min_chars=100), PipelineEnv(),
    )
    kinds = [k for k, _ in res.notices]
    assert "cleared" in kinds and "omitted" in kinds
    assert res.records and {r["stage"] for r in res.records} == {"micro", "retain"}


def test_resume_reproduces_outbound_bytes_after_a_retain_cut():
    """The cut is a recorded decision too: a resumed session omits the same messages (Echo results
    are not compactable, so micro cannot help and retain cuts)."""
    o = CompactOptions(threshold=6000, micro_keep_recent=2, micro_min_chars=100)
    state = ContentReplacementState()
    history: list = [user_message("the task")]
    records: list = []
    last = ""
    for i in range(40):
        history.append(assistant_message([text_block(f"step {i}"), tool_use_block(f"id{i}", "Echo", {"text": "x"})]))
        history.append(user_message([tool_result_block(f"id{i}", "o" * 400)]))
        res = run_outbound_pipeline(history, state, o, PipelineEnv())
        records.extend(res.records)
        last = json.dumps(to_api(res.messages))
    assert any(r["stage"] == "retain" for r in records)
    assert "earlier messages omitted" in last
    resumed = ContentReplacementState.from_records(json.loads(json.dumps(records)))
    again = run_outbound_pipeline(json.loads(json.dumps(history)), resumed, o, PipelineEnv())
    assert json.dumps(to_api(again.messages)) == last
    assert again.records == []
    # A history replaced by a summary after the cut voids it.
    voided = ContentReplacementState.from_records([*records, {"type": "history_replaced", "messages": []}])
    assert voided.retain_memo is None and voided.cleared == resumed.cleared


def test_resume_reproduces_outbound_bytes():
    o = CompactOptions(threshold=6000, micro_keep_recent=2, micro_min_chars=100)
    state = ContentReplacementState()
    history: list = []
    records: list = []
    last = ""
    for i in range(30):
        history.extend(rounds(1, body=900)[:3])
        for m in history[-3:]:
            for b in m["content"]:
                if b["type"] == "tool_use":
                    b["id"] = f"id{i}"
                elif b["type"] == "tool_result":
                    b["tool_use_id"] = f"id{i}"
        res = run_outbound_pipeline(history, state, o, PipelineEnv())
        records.extend(res.records)
        last = json.dumps(to_api(res.messages))
    resumed = ContentReplacementState.from_records(json.loads(json.dumps(records)))
    again = run_outbound_pipeline(json.loads(json.dumps(history)), resumed, o, PipelineEnv())
    assert json.dumps(to_api(again.messages)) == last
    assert again.records == []


class Big(Tool):
    name = "Read"
    description = "Returns a big body."
    input_schema = {"type": "object", "properties": {"file_path": {"type": "string"}}}

    def is_read_only(self, input):
        return True

    async def call(self, input, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(f"FILE {input['file_path']}\n" + "z" * 3000)


async def test_loop_runs_stages_and_records_go_to_transcript(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    steps = [reply(tool_call("Read", {"file_path": f"f{i}.py"})) for i in range(12)] + [reply("done")]
    model = ScriptedModel(steps)
    compact = CompactOptions(threshold=10_000, micro_keep_recent=2, autocompact=False)
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=compact), [Big()], QueryDeps(model))
    notices = []
    async for ev in engine.run_turn("read them all"):
        if isinstance(ev, NoticeEvent):
            notices.append(ev.kind)
    engine.close()
    assert "cleared" in notices
    assert engine.replacement_state.cleared
    # The model's last request had old results cleared, the history did not.
    # Old results were cleared (and, where micro could not reach the low-water mark, omitted by stage 3
    # in the same call).
    assert any(MICROCOMPACT_NOTE in r or "earlier messages omitted" in json.dumps(req.messages)
               for req in model.requests for r in results(req.messages))
    assert not any(MICROCOMPACT_NOTE in r for r in results(engine.messages))
    lines = [json.loads(x) for x in engine.paths.transcript.read_text().splitlines()]
    micro = [x for x in lines if x.get("type") == "decision" and x.get("stage") == "micro"]
    assert {x["id"] for x in micro} == set(engine.replacement_state.cleared)
    # Requests between clearing batches extend the previous one (cache-stable prefix).
    reqs = [json.dumps(r.messages) for r in model.requests]
    stable = sum(1 for a, b in zip(reqs, reqs[1:], strict=False) if b.startswith(a[:-1]))
    assert stable >= len(reqs) - 1 - len({x["id"] for x in micro})
