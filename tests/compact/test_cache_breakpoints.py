"""Cache breakpoints: at most four, the last block always, and the previous request's end when a big
batch pushed it out of the API's 20-block lookback."""

from __future__ import annotations

import copy

from services.cache_breakpoints import LOOKBACK_BLOCKS, place_breakpoints
from services.request_check import check_request, count_breakpoints


def session(batch: int) -> list:
    msgs = [{"role": "user", "content": [{"type": "text", "text": "task"}]}]
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "look"},
                                                  *({"type": "tool_use", "id": f"a{i}", "name": "Read", "input": {}} for i in range(batch))]})
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"a{i}", "content": "x"} for i in range(batch)]})
    return msgs


def marked(messages):
    return [(mi, bi) for mi, m in enumerate(messages) for bi, b in enumerate(m["content"]) if "cache_control" in b]


def test_small_batch_one_moving_breakpoint():
    msgs = session(3)
    before = copy.deepcopy(msgs)
    system, tools, out = place_breakpoints("sys", [{"name": "A"}, {"name": "B"}], msgs)
    assert marked(out) == [(2, 2)]
    assert "cache_control" in system[0] and "cache_control" in tools[-1] and "cache_control" not in tools[0]
    assert msgs == before  # pure


def test_big_batch_adds_the_previous_end_within_four():
    msgs = session(12)  # 1 text + 12 tool_use + 12 tool_result blocks after the previous end
    system, tools, out = place_breakpoints("sys", [{"name": "A"}], msgs)
    assert marked(out) == [(0, 0), (2, 11)]
    assert count_breakpoints(system, tools, out) == 4
    assert check_request(out, system, tools) == []


def test_threshold_is_the_lookback():
    # exactly LOOKBACK_BLOCKS - 1 blocks after the previous end: still found by the lookback
    n = (LOOKBACK_BLOCKS - 2) // 2
    _, _, out = place_breakpoints("", [], session(n))
    assert marked(out) == [(2, n - 1)]


def test_first_call_and_blank_text_are_safe():
    _, _, out = place_breakpoints("", [], [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert marked(out) == [(0, 0)]
    _, _, out = place_breakpoints("", [], [{"role": "user", "content": [{"type": "text", "text": ""}]}])
    assert marked(out) == []
