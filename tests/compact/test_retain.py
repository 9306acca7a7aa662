"""Stage 3, retain tail: react-agent-mini's tail-retention cases ported, plus: the task is kept, the
omitted marker, and a single long agentic turn is still trimmed with pairs intact (bug B5)."""

from __future__ import annotations

from agent.messages import (
    assistant_message,
    is_user_text_message,
    text_block,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.compact.autocompact import COMPACT_BOUNDARY_TEXT, SUMMARY_PREFIX
from services.compact.options import CompactOptions
from services.compact.retain import apply_retain_tail_if_needed


def conversation(n_rounds: int, body: int = 200) -> list:
    msgs = []
    for i in range(n_rounds):
        tid = f"t{i}"
        msgs.append(user_message(f"ask {i}"))
        msgs.append(assistant_message([tool_use_block(tid, "Grep", {"pattern": str(i)})]))
        msgs.append(user_message([tool_result_block(tid, "r" * body)]))
        msgs.append(assistant_message([text_block(f"answer {i}")]))
    return msgs


def long_turn(n_tools: int, body: int = 300) -> list:
    msgs = [user_message("Refactor the whole package please")]
    for i in range(n_tools):
        tid = f"u{i}"
        msgs.append(assistant_message([text_block(f"step {i}"), tool_use_block(tid, "Bash", {"command": f"c{i}"})]))
        msgs.append(user_message([tool_result_block(tid, "o" * body)]))
    return msgs


def pairing_ok(msgs: list) -> bool:
    seen = set()
    for m in msgs:
        for b in m["content"]:
            if b["type"] == "tool_use":
                seen.add(b["id"])
            elif b["type"] == "tool_result" and b["tool_use_id"] not in seen:
                return False
    return True


def test_tail_at_most_max_and_last_kept():
    msgs = conversation(10)
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=12)).messages
    assert len(out) <= 12 and out[-1] is msgs[-1]


def test_first_message_kept_with_marker():
    msgs = conversation(10)
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=10)).messages
    assert out[0] is msgs[0]
    assert out[1]["content"][0]["text"].endswith("earlier messages omitted]")
    dropped = len(msgs) - (len(out) - 2)
    assert out[1]["content"][0]["text"] == f"[{dropped - 1} earlier messages omitted]"
    assert is_user_text_message(out[2])
    assert pairing_ok(out)


def test_short_history_same_reference():
    msgs = conversation(2)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=40))
    assert res.messages is msgs and res.notices == []


def test_under_threshold_is_noop():
    msgs = conversation(10)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=1_000_000, max_messages=12))
    assert res.messages is msgs


def test_single_long_turn_is_trimmed_pairs_intact():
    msgs = long_turn(40)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=1000, max_messages=12))
    out = res.messages
    assert len(out) <= 12 and len(out) < len(msgs)
    assert out[0] is msgs[0]
    assert out[1]["content"][0]["text"].endswith("earlier messages omitted]")
    assert out[2]["role"] == "assistant"
    assert out[-1] is msgs[-1]
    assert pairing_ok(out)
    # roles alternate after the marker
    roles = [m["role"] for m in out[1:]]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))


def test_boundary_and_summary_kept_as_head():
    msgs = [user_message(COMPACT_BOUNDARY_TEXT), user_message(SUMMARY_PREFIX + "did things")] + conversation(10)
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=12)).messages
    assert out[0] is msgs[0] and out[1] is msgs[1]
    assert "earlier messages omitted" in out[2]["content"][0]["text"]
    assert len(out) <= 12 and pairing_ok(out)


def test_no_safe_cut_returns_unchanged():
    # one assistant message with 30 tool uses answered by one result message: no cut point inside
    uses = [tool_use_block(f"x{i}", "Bash", {"command": "x"}) for i in range(30)]
    msgs = [user_message("go"), assistant_message(uses), user_message([tool_result_block(f"x{i}", "z" * 100) for i in range(30)])]
    msgs = msgs * 1
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=2))
    assert res.messages is msgs


def test_trace_and_notice(monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    res = apply_retain_tail_if_needed(conversation(10), CompactOptions(threshold=0, max_messages=12))
    err = capsys.readouterr().err
    assert "[trace] compact.run stage=retain droppedMessages=" in err
    assert "overThreshold=true strategy=retain" in err
    assert res.notices and res.notices[0][0] == "omitted"


def test_history_untouched():
    msgs = conversation(10)
    snapshot = [dict(m) for m in msgs]
    apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0, max_messages=8))
    assert msgs == snapshot and len(msgs) == 40
