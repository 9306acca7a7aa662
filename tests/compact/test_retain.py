"""Stage 3, retain tail: react-agent-mini's tail-retention cases ported, plus: the task is kept, the
omitted marker, and a single long agentic turn is still trimmed with pairs intact (bug B5)."""

from __future__ import annotations

from services.compact.autocompact import COMPACT_BOUNDARY_TEXT, SUMMARY_PREFIX
from services.compact.options import CompactOptions
from services.compact.retain import apply_retain_tail_if_needed
from services.messages import (
    assistant_message,
    is_user_text_message,
    text_block,
    tool_result_block,
    tool_use_block,
    user_message,
)


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


def marker_at(out: list) -> int:
    """Index of the omitted marker: before it the head and the user's own messages kept verbatim."""
    return next(i for i, m in enumerate(out) if (m.get("meta") or {}).get("omitted"))


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
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0)).messages
    k = marker_at(out)
    assert len(out) - k - 1 <= 12 and out[-1] is msgs[-1]
    assert all(is_user_text_message(m) and m["content"][0]["text"].startswith("ask") for m in out[:k])


def test_first_message_kept_with_marker():
    msgs = conversation(10)
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0)).messages
    assert out[0] is msgs[0]
    k = marker_at(out)
    dropped = len(msgs) - (len(out) - 1)
    assert out[k]["content"][0]["text"] == f"[{dropped} earlier messages omitted]"
    # the user's own messages of the omitted stretch are kept verbatim, in order, before the marker
    assert [m["content"][0]["text"] for m in out[:k]] == [f"ask {i}" for i in range(k)]
    assert pairing_ok(out)


def test_short_history_over_the_threshold_is_cut_too():
    # Retain answers to the size, not to a message count: a short history over the threshold is cut
    # (react-agent-mini kept any history of 40 messages or fewer, and sent it over the threshold).
    msgs = conversation(2)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0))
    assert res.messages[0] is msgs[0] and res.messages[-1] is msgs[-1] and len(res.messages) < len(msgs) + 1
    assert pairing_ok(res.messages)


def test_under_threshold_is_noop():
    msgs = conversation(10)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=1_000_000))
    assert res.messages is msgs


def test_single_long_turn_is_trimmed_pairs_intact():
    msgs = long_turn(40)
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=1000))
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
    out = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0)).messages
    assert out[0] is msgs[0] and out[1] is msgs[1]
    k = marker_at(out)
    assert k >= 2 and len(out) - k - 1 <= 12 and pairing_ok(out)


def test_no_safe_cut_returns_unchanged():
    # one assistant message with 30 tool uses answered by one result message: no cut point inside
    uses = [tool_use_block(f"x{i}", "Bash", {"command": "x"}) for i in range(30)]
    msgs = [user_message("go"), assistant_message(uses), user_message([tool_result_block(f"x{i}", "z" * 100) for i in range(30)])]
    msgs = msgs * 1
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0))
    assert res.messages is msgs


def test_trace_and_notice(monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    res = apply_retain_tail_if_needed(conversation(10), CompactOptions(threshold=0))
    err = capsys.readouterr().err
    assert "[trace] compact.run stage=retain droppedMessages=" in err
    assert "overThreshold=true strategy=retain" in err
    assert res.notices and res.notices[0][0] == "omitted"


def test_history_untouched():
    msgs = conversation(10)
    snapshot = [dict(m) for m in msgs]
    apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0))
    assert msgs == snapshot and len(msgs) == 40


def test_cut_is_sticky_and_moves_on_a_grid():
    import json

    from services.compact.state import ContentReplacementState

    state = ContentReplacementState()
    o = CompactOptions(threshold=2000)
    history = long_turn(10)
    sent = []
    cuts = []
    for i in range(10, 60):
        tid = f"u{i}"
        history.append(assistant_message([text_block(f"step {i}"), tool_use_block(tid, "Bash", {"command": f"c{i}"})]))
        history.append(user_message([tool_result_block(tid, "o" * 300)]))
        res = apply_retain_tail_if_needed(history, o, state)
        assert len(res.messages) <= 12 and pairing_ok(res.messages)
        sent.append(json.dumps(res.messages))
        cuts.append(state.retain_memo.cut)
    assert cuts == sorted(cuts)  # monotonic
    moves = sum(1 for a, b in zip(cuts, cuts[1:], strict=False) if a != b)
    assert 0 < moves <= len(cuts) // 2  # on a grid (5 messages = 2.5 calls here), not every call
    # between moves the request extends the previous one byte for byte
    for k in range(1, len(sent)):
        if cuts[k] == cuts[k - 1]:
            assert sent[k].startswith(sent[k - 1][:-1])


def test_cut_kept_under_threshold_and_reset_on_new_history():
    from services.compact.state import ContentReplacementState

    state = ContentReplacementState()
    msgs = conversation(10)
    first = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=0), state).messages
    again = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=10**9), state)
    k = marker_at(first)
    assert [id(m) for m in again.messages[:k]] == [id(m) for m in first[:k]]
    assert [id(m) for m in again.messages[k + 1 :]] == [id(m) for m in first[k + 1 :]]
    assert again.notices == []  # same cut: no new notice
    replaced = [user_message(COMPACT_BOUNDARY_TEXT), user_message(SUMMARY_PREFIX + "s"), *msgs[-4:]]
    res = apply_retain_tail_if_needed(replaced, CompactOptions(threshold=10**9), state)
    assert res.messages is replaced


def test_cut_that_frees_too_little_is_not_made():
    # over only because of one huge final result: dropping small old messages would not help
    msgs = conversation(10, body=10)
    msgs.append(user_message("last"))
    msgs.append(assistant_message([tool_use_block("big", "Read", {"file_path": "x"})]))
    msgs.append(user_message([tool_result_block("big", "B" * 50_000)]))
    res = apply_retain_tail_if_needed(msgs, CompactOptions(threshold=40_000))
    assert res.messages is msgs
