"""Stage 2, microcompact: react-agent-mini's compact.test.ts micro cases ported, plus the cache-stable
design (recorded monotonic decisions, hysteresis, resume)."""

from __future__ import annotations

import json

from services.compact.estimate import estimate_outbound_chars
from services.compact.micro import MICROCOMPACT_NOTE, microcompact_messages, placeholder_for
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)


def rounds(n: int, body: int = 800, tool: str = "Read", start: int = 0) -> list:
    """n rounds of: user text, assistant Read f{i}.txt, user result BODY{i}:+x*body, assistant text."""
    msgs = []
    for i in range(start, start + n):
        tid = f"toolu_{i:04d}"
        msgs.append(user_message(f"step {i}"))
        msgs.append(assistant_message([tool_use_block(tid, tool, {"file_path": f"f{i}.txt"})]))
        msgs.append(user_message([tool_result_block(tid, f"BODY{i}:" + "x" * body)]))
        msgs.append(assistant_message([text_block(f"done {i}")]))
    return msgs


def results(msgs: list) -> list[str]:
    return [b["content"] for m in msgs if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]


def opts(**kw) -> CompactOptions:
    base = dict(threshold=2000, micro_keep_recent=2, micro_min_chars=100, micro_low_water_percent=60)
    base.update(kw)
    return CompactOptions(**base)


def test_placeholder_exact():
    assert placeholder_for("Read", {"file_path": "src/query.py"}) == (
        "[Old tool result content cleared] tool=Read src/query.py"
    )
    assert placeholder_for("Grep", {"pattern": "x", "path": "src"}) == "[Old tool result content cleared] tool=Grep src"
    assert placeholder_for("Bash", {"command": "ls"}) == "[Old tool result content cleared] tool=Bash"


def test_under_threshold_returns_input_unchanged():
    msgs = rounds(6)
    out = microcompact_messages(msgs, ContentReplacementState(), opts(threshold=10**9))
    assert out.messages is msgs and out.records == [] and out.notices == []


def test_over_threshold_clears_old_keeps_recent():
    msgs = rounds(6)
    state = ContentReplacementState()
    out = microcompact_messages(msgs, state, opts(micro_low_water_percent=1))
    res = results(out.messages)
    assert len(res) == 6
    assert MICROCOMPACT_NOTE in res[0] and "f0.txt" in res[0] and len(res[0]) < 200
    assert res[5].startswith("BODY5:") and MICROCOMPACT_NOTE not in res[5]
    assert res[4].startswith("BODY4:")  # keep 2
    assert all(MICROCOMPACT_NOTE in r for r in res[:4])
    # Outbound-only: the history is untouched.
    assert all(r.startswith("BODY") for r in results(msgs))
    assert set(state.cleared) == {f"toolu_{i:04d}" for i in range(4)}
    assert [r["id"] for r in out.records] == [f"toolu_{i:04d}" for i in range(4)]
    assert all(r["stage"] == "micro" and r["type"] == "decision" for r in out.records)


def test_keep_one_pairing_intact():
    msgs = rounds(6)
    out = microcompact_messages(msgs, ContentReplacementState(), opts(micro_keep_recent=1))
    uses = {b["id"] for m in out.messages for b in m["content"] if b["type"] == "tool_use"}
    rids = [b["tool_use_id"] for m in out.messages for b in m["content"] if b["type"] == "tool_result"]
    assert len(rids) == 6 and set(rids) <= uses


def test_non_compactable_tool_kept_and_mcp_cleared():
    msgs = rounds(2, tool="Echo") + rounds(2, tool="mcp__srv__fetch", start=2) + rounds(1, start=4)
    for m in msgs:
        for b in m["content"]:
            if b["type"] == "tool_result" and b["tool_use_id"] in ("toolu_0000", "toolu_0001"):
                b["content"] = "EEEE" + b["content"]
    out = microcompact_messages(msgs, ContentReplacementState(), opts(micro_keep_recent=1, micro_low_water_percent=1))
    res = results(out.messages)
    assert res[0].startswith("EEEE") and res[1].startswith("EEEE")
    assert res[2] == "[Old tool result content cleared] tool=mcp__srv__fetch f2.txt"
    assert MICROCOMPACT_NOTE in res[3]
    assert res[4].startswith("BODY4:")  # the newest compactable result (keep_recent=1) stays whole


def test_small_results_left_alone():
    msgs = rounds(6, body=50)
    out = microcompact_messages(msgs, ContentReplacementState(), opts(micro_keep_recent=1))
    assert out.messages is msgs


def test_unchanged_blocks_are_same_objects():
    msgs = rounds(6)
    out = microcompact_messages(msgs, ContentReplacementState(), opts(micro_low_water_percent=1))
    assert out.messages is not msgs
    for a, b in zip(msgs, out.messages, strict=True):
        if a["role"] == "assistant" or all(x["type"] == "text" for x in a["content"]):
            assert a is b
    assert out.messages[-2] is msgs[-2]  # the kept recent result message


def test_is_error_kept_on_cleared_result():
    msgs = rounds(3)
    msgs[2]["content"][0]["is_error"] = True
    out = microcompact_messages(msgs, ContentReplacementState(), opts(micro_keep_recent=1))
    assert out.messages[2]["content"][0]["is_error"] is True
    assert out.messages[2]["content"][0]["tool_use_id"] == "toolu_0000"


def test_trace_lines(monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    microcompact_messages(rounds(6), ContentReplacementState(), opts(micro_low_water_percent=1))
    err = capsys.readouterr().err
    assert "[trace] compact.micro replaced=4" in err
    assert "[trace] compact.run stage=micro estimated=" in err
    assert "overThreshold=true strategy=micro" in err


def test_notice_emitted_once_per_batch():
    state = ContentReplacementState()
    out = microcompact_messages(rounds(6), state, opts(micro_low_water_percent=1))
    assert [k for k, _ in out.notices] == ["cleared"]
    assert "Cleared 4 old tool results" in out.notices[0][1]


def _session_growth(calls: int, threshold: int):
    """Simulate a session: one new 2000-char Read per call, run micro each call; return outbound bytes."""
    state = ContentReplacementState()
    o = opts(threshold=threshold, micro_keep_recent=4, micro_min_chars=500, micro_low_water_percent=60)
    history = [user_message("the task")]
    sent, outs = [], []
    for i in range(calls):
        tid = f"toolu_{i:04d}"
        history.append(assistant_message([tool_use_block(tid, "Read", {"file_path": f"f{i}.py"})]))
        history.append(user_message([tool_result_block(tid, f"{i}:" + "y" * 2000)]))
        res = microcompact_messages(history, state, o)
        outs.append(res)
        sent.append(json.dumps(to_api(res.messages)))
    return state, history, outs, sent, o


def test_monotonic_decisions_across_50_calls():
    state, history, outs, sent, o = _session_growth(50, threshold=20_000)
    cleared_so_far: dict[str, str] = {}
    for res in outs:
        now = {
            b["tool_use_id"]: b["content"]
            for m in res.messages
            for b in m["content"]
            if b["type"] == "tool_result" and MICROCOMPACT_NOTE in b["content"]
        }
        # every earlier decision still holds, with the same bytes
        for tid, text in cleared_so_far.items():
            assert now[tid] == text
        cleared_so_far.update(now)
    assert len(cleared_so_far) > 10
    assert cleared_so_far == state.cleared


def test_hysteresis_prefix_stable_between_batches():
    state, history, outs, sent, o = _session_growth(50, threshold=20_000)
    clearing_calls = [i for i, r in enumerate(outs) if r.records]
    assert len(clearing_calls) >= 2
    # After a clearing call, no clearing until the estimate passes the threshold again.
    for a, b in zip(clearing_calls, clearing_calls[1:], strict=False):
        assert b - a > 1
        for k in range(a + 1, b):
            assert not outs[k].records
            assert estimate_outbound_chars(outs[k].messages) <= o.threshold
    # Just after a batch the estimate is under the threshold (under the low-water mark but for the
    # newest results, which the model has not answered yet and so cannot be cleared).
    for a in clearing_calls:
        assert estimate_outbound_chars(outs[a].messages) <= o.threshold
    # Calls without new clearing extend the previous request byte for byte (cacheable prefix).
    for k in range(1, len(sent)):
        if not outs[k].records:
            assert sent[k].startswith(sent[k - 1][:-1])


def test_resume_reproduces_outbound_bytes():
    state, history, outs, sent, o = _session_growth(40, threshold=20_000)
    records = [r for res in outs for r in res.records]
    resumed = ContentReplacementState.from_records(json.loads(json.dumps(records)))
    again = microcompact_messages(json.loads(json.dumps(history)), resumed, o)
    assert json.dumps(to_api(again.messages)) == sent[-1]
    assert again.records == []


def test_recorded_clears_reapplied_under_threshold():
    msgs = rounds(6)
    state = ContentReplacementState()
    first = microcompact_messages(msgs, state, opts(micro_low_water_percent=1))
    second = microcompact_messages(msgs, state, opts(threshold=10**9))
    assert json.dumps(first.messages) == json.dumps(second.messages)
    assert second.records == [] and second.notices == []


def test_recent_window_capped_at_threshold():
    # the newest result alone is bigger than the threshold: older ones are not kept whole with it
    msgs = rounds(3, body=800) + rounds(1, body=5000, start=3)
    out = microcompact_messages(msgs, ContentReplacementState(), opts(threshold=3000, micro_keep_recent=4))
    res = results(out.messages)
    assert res[3].startswith("BODY3:")  # the newest always stays whole
    assert all(MICROCOMPACT_NOTE in r for r in res[:3])


def test_micro_clears_even_less_than_a_batch_before_retain_may_drop():
    # Over the threshold mostly because of the recent window: clearing the one small old result does
    # not get under it, but micro still clears it (the order of loss: re-obtainable results go before
    # stage 3 may omit any of the user's messages).
    msgs = rounds(1, body=1500, tool="Echo", start=9) + rounds(1, body=600) + rounds(2, body=3000, start=1)
    o = opts(threshold=7000, micro_keep_recent=2, micro_min_chars=500, micro_low_water_percent=60)
    out = microcompact_messages(msgs, ContentReplacementState(), o)
    assert [r["id"] for r in out.records] == ["toolu_0000"]


def test_unseen_results_are_never_cleared():
    # A parallel batch the model has not answered yet: nothing of it is cleared, however big.
    batch = [user_message("go"), assistant_message([tool_use_block(f"p{i}", "Read", {"file_path": f"b{i}"}) for i in range(6)])]
    batch.append(user_message([tool_result_block(f"p{i}", "y" * 6000) for i in range(6)]))
    out = microcompact_messages(batch, ContentReplacementState(), opts(threshold=1000, micro_keep_recent=1))
    assert out.messages is batch and out.records == []


def test_keep_recent_zero_is_refused():
    import pytest

    from services.config import ConfigError

    with pytest.raises(ConfigError, match="COMPACT_MICRO_KEEP_RECENT must be >= 1"):
        CompactOptions(micro_keep_recent=0)
