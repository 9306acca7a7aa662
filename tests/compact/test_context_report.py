"""/context adds up: its parts sum to its first line, billed or estimated, and spilled results count as
what is sent (the placeholder)."""

from __future__ import annotations

import re

from services.compact.context_usage import context_usage, format_report
from services.compact.state import ContentReplacementState
from services.messages import assistant_message, text_block, tool_result_block, tool_use_block, user_message


def _numbers(report: str) -> tuple[int, list[int]]:
    rows = report.splitlines()
    total = int(re.search(r"~([\d,]+) /", rows[0]).group(1).replace(",", ""))
    parts = [int(re.search(r"~([\d,]+) tokens", r).group(1).replace(",", "")) for r in rows[1:5]]
    return total, parts


def _history() -> list:
    return [user_message("q" * 4000), assistant_message([tool_use_block("toolu_1", "Read", {"path": "x"})]),
            user_message([tool_result_block("toolu_1", "r" * 80_000)]), assistant_message([text_block("a" * 400)])]


def test_the_parts_add_up_to_the_billed_total():
    usage = {"input_tokens": 12_345, "cache_read_input_tokens": 7_013, "output_tokens": 99}
    report = format_report(context_usage("s" * 8000, [{"name": "Read"}], _history(), None, 40_000, usage))
    total, parts = _numbers(report)
    assert total == 19_358 and sum(parts) == total, report
    assert "free            ~20,642 tokens" in report


def test_a_spilled_result_counts_as_its_placeholder_and_the_estimate_adds_up():
    state = ContentReplacementState()
    state.replacements["toolu_1"] = "<persisted-output>preview</persisted-output>"
    spilled = context_usage("s" * 8000, [], _history(), state, 200_000)
    whole = context_usage("s" * 8000, [], _history(), None, 200_000)
    assert spilled.tool_results_tokens < 50 < whole.tool_results_tokens
    total, parts = _numbers(format_report(spilled))
    assert sum(parts) == total
