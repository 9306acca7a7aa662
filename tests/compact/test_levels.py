"""The order of loss holds for every window from 8k to 1M tokens: micro clears (threshold T, the messages'
units) before autocompact summarises (level A, the whole request), autocompact before retain drops (level F,
the whole request), retain only when the request would not fit with room for the reply, and the summary
call (the request at A, its prompt, its reply) fits the window."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.compact.autocompact import summary_fit_units
from services.compact.cc_texts import compact_prompt
from services.compact.options import (
    SUMMARY_PROMPT_TOKENS,
    UNITS_PER_TOKEN,
    CompactOptions,
    reply_reserve_tokens,
)
from services.tokens import text_units

windows = st.integers(min_value=8_000, max_value=1_000_000)


@settings(max_examples=400, deadline=None)
@given(window=windows, percent=st.one_of(st.none(), st.integers(min_value=1, max_value=100)))
def test_levels_keep_the_order_of_loss(window: int, percent: int | None) -> None:
    opts = CompactOptions.for_window(window, autocompact_percent=percent)
    t, a, f = opts.threshold, opts.autocompact_units, opts.retain_units
    assert 0 < t < a < f <= (window - reply_reserve_tokens(window)) * UNITS_PER_TOKEN
    assert t <= a // 2  # micro acts well before a summary
    assert opts.low_water < t and opts.max_turn_tool_result_chars <= t * 60 // 100
    # A summary leaves room for new content before the next one may start.
    assert 0 < opts.min_new_units < a
    if percent is None:
        # The summary call (the request at A + the prompt + the summary) fits the window.
        assert opts.autocompact_tokens + SUMMARY_PROMPT_TOKENS + opts.summary_max_tokens <= window
    # Whatever the level, the summary request's messages are cut to fit (a huge turn, a late trigger).
    assert summary_fit_units(opts) // UNITS_PER_TOKEN + SUMMARY_PROMPT_TOKENS + opts.summary_max_tokens <= window


def test_the_prompt_reserve_covers_claude_codes_prompt() -> None:
    assert text_units(compact_prompt("x" * 1000)) // UNITS_PER_TOKEN < SUMMARY_PROMPT_TOKENS


def test_levels_at_200k_and_40k() -> None:
    """The numbers CONTEXT.md states."""
    big, small = CompactOptions.for_window(200_000), CompactOptions.for_window(40_000)
    assert (big.threshold // 4, big.autocompact_tokens, big.retain_units // 4) == (60_000, 167_000, 180_000)
    assert (small.threshold // 4, small.autocompact_tokens, small.retain_units // 4) == (12_000, 30_000, 35_000)
