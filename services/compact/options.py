"""CompactOptions: every knob of the outbound pipeline in one place, with environment overrides."""

from __future__ import annotations

from dataclasses import dataclass

from services.config import ConfigError, env_flag, env_int, getenv

# The order of loss. Every level derives from the model's context window W (tokens), so the stages hand
# over in order for every window from 8k to 1M tokens (tests/compact/test_levels.py):
#
#   micro threshold T  <  autocompact level A  <  retain level F  <=  W - reply reserve
#
# Micro (stage 2) clears re-obtainable tool results over T (30% of W, in units of the messages); autocompact
# (stage 0) summarises when the whole request (system + tools + messages) reaches A, which leaves room for
# the summary call (its prompt and its reply); retain (stage 3) drops the oldest turns only when a request
# would still not fit, over F (the window less the room kept for the reply). Units: 4 units ~ 1 token
# (`services.tokens.text_units`).
UNITS_PER_TOKEN = 4
THRESHOLD_PERCENT_OF_WINDOW = 30
# Claude Code's numbers at a 200k window: 20k tokens kept for the reply, a 13k buffer below that for the
# summary call, so it summarises at 167k. Small windows keep an eighth of the window for each.
REPLY_RESERVE_TOKENS = 20_000
AUTOCOMPACT_BUFFER_TOKENS = 13_000
# The summary call: its prompt (Claude Code's, ~2.5k tokens, with room for /compact instructions) and the
# largest summary it may write.
SUMMARY_PROMPT_TOKENS = 3_000
SUMMARY_MAX_TOKENS = 20_000
SUMMARY_MIN_TOKENS = 1_024

# 240000 units (~60k tokens, 30% of the default window) is what micro keeps a request under; the
# cache-economy bench (bench/context_economy.py) measured it against 80k-320k. COMPACT_THRESHOLD_CHARS=80000
# restores react-agent-mini's setting.
DEFAULT_THRESHOLD_CHARS = 240_000
DEFAULT_MAX_TOOL_RESULT_CHARS = 50_000
DEFAULT_MAX_TURN_TOOL_RESULT_CHARS = 200_000
DEFAULT_MICRO_KEEP_RECENT = 4
DEFAULT_MICRO_MIN_CHARS = 500
# A clearing pass goes down to 30% of the threshold: each pass is one prompt-cache rewrite of what follows
# its start, so passes must be rare and deep (bench/context_economy.py: 60% made two to three times as
# many passes on the 160-call seeds, under a 0.93 cacheable share on two of them).
DEFAULT_MICRO_LOW_WATER_PERCENT = 30
# Retain's cut aims at 60% of its level (hysteresis: the next cut is many calls away).
RETAIN_LOW_WATER_PERCENT = 60
# A fresh turn's results together stay under 60% of the threshold (else the largest are spilled): a
# Read the model needs whole fits, and one turn never fills the request past micro's threshold alone.
TURN_BUDGET_PERCENT = 60
DEFAULT_CONTEXT_WINDOW_TOKENS = 200_000


def derived_threshold(window_tokens: int) -> int:
    return window_tokens * UNITS_PER_TOKEN * THRESHOLD_PERCENT_OF_WINDOW // 100


def reply_reserve_tokens(window_tokens: int) -> int:
    return min(REPLY_RESERVE_TOKENS, window_tokens // 8)


def summary_max_tokens(window_tokens: int) -> int:
    """How long a summary may be: a tenth of the window, between 1k and 20k tokens."""
    return max(SUMMARY_MIN_TOKENS, min(SUMMARY_MAX_TOKENS, window_tokens // 10))


def autocompact_level_tokens(window_tokens: int) -> int:
    """Where autocompact summarises (whole request, tokens): the window less the reply reserve and the
    buffer, and low enough that the summary call (this request + its prompt + the summary) fits."""
    w = window_tokens
    by_reserve = w - reply_reserve_tokens(w) - min(AUTOCOMPACT_BUFFER_TOKENS, w // 8)
    by_summary = w - SUMMARY_PROMPT_TOKENS - summary_max_tokens(w)
    return max(w // 4, min(by_reserve, by_summary))


def retain_level_tokens(window_tokens: int) -> int:
    """Over this (whole request, tokens) the request would not fit with room for the reply: retain cuts."""
    return window_tokens - reply_reserve_tokens(window_tokens)


@dataclass
class CompactOptions:
    enabled: bool = True
    threshold: int = DEFAULT_THRESHOLD_CHARS
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
    max_turn_tool_result_chars: int = DEFAULT_MAX_TURN_TOOL_RESULT_CHARS
    micro_keep_recent: int = DEFAULT_MICRO_KEEP_RECENT
    micro_min_chars: int = DEFAULT_MICRO_MIN_CHARS
    micro_low_water_percent: int = DEFAULT_MICRO_LOW_WATER_PERCENT
    autocompact: bool = True
    # None: derived from the window (`autocompact_level_tokens`); AUTOCOMPACT_PERCENT overrides it.
    autocompact_percent: int | None = None
    context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS
    # Units (whole request) over which stage 3 drops the oldest turns. 0: at `threshold`, the stages'
    # older contract, kept for options built by hand (unit tests); `derive()` sets the order of loss.
    retain_units: int = 0

    def __post_init__(self) -> None:
        if self.micro_keep_recent < 1:
            # 0 would let micro clear the result the model is about to read (cleared unseen).
            raise ConfigError(
                f"COMPACT_MICRO_KEEP_RECENT must be >= 1 (got {self.micro_keep_recent}): the newest "
                "tool result must reach the model before it can be cleared"
            )

    @property
    def low_water(self) -> int:
        return self.threshold * self.micro_low_water_percent // 100

    @property
    def autocompact_tokens(self) -> int:
        """The whole request's size (tokens) at which autocompact summarises."""
        if self.autocompact_percent is not None:
            return self.context_window_tokens * self.autocompact_percent // 100
        return autocompact_level_tokens(self.context_window_tokens)

    @property
    def autocompact_units(self) -> int:
        return self.autocompact_tokens * UNITS_PER_TOKEN

    @property
    def retain_limit(self) -> int:
        """Units over which retain cuts (0 in `retain_units`: the threshold)."""
        return self.retain_units or self.threshold

    @property
    def retain_low_water(self) -> int:
        """Where a cut aims (hysteresis: the next cut is many calls away)."""
        return self.retain_limit * RETAIN_LOW_WATER_PERCENT // 100

    @property
    def summary_max_tokens(self) -> int:
        return summary_max_tokens(self.context_window_tokens)

    @property
    def min_new_units(self) -> int:
        """New content (units) a history needs after a summary before it may be summarised again: a
        tenth of the autocompact level, so a summary is never followed by another a few calls later."""
        return self.autocompact_units // 10

    def derive(self) -> CompactOptions:
        """The same options with the levels in the order of loss (see the top of this module)."""
        w = self.context_window_tokens
        self.retain_units = retain_level_tokens(w) * UNITS_PER_TOKEN
        # Micro acts well before autocompact: at most half its level.
        self.threshold = max(1, min(self.threshold, self.autocompact_units // 2))
        if self.autocompact_percent is not None:  # an explicit level still summarises before retain cuts
            self.autocompact_percent = max(1, min(self.autocompact_percent, retain_level_tokens(w) * 100 // w - 1))
        self.max_turn_tool_result_chars = max(
            1, min(self.max_turn_tool_result_chars, self.threshold * TURN_BUDGET_PERCENT // 100)
        )
        return self

    @classmethod
    def for_window(cls, window_tokens: int, **overrides: object) -> CompactOptions:
        """Defaults for a model with this context window."""
        opts = cls(context_window_tokens=window_tokens, threshold=derived_threshold(window_tokens))
        for k, v in overrides.items():
            setattr(opts, k, v)
        return opts.derive()

    @classmethod
    def from_env(cls, model_window: int | None = None) -> CompactOptions:
        """Options from the environment; the window is the model's (from the catalog) unless
        CONTEXT_WINDOW_TOKENS says otherwise."""
        enabled = getenv("COMPACT") != "0"
        window = env_int("CONTEXT_WINDOW_TOKENS", model_window or DEFAULT_CONTEXT_WINDOW_TOKENS, minimum=1000)
        percent = env_int("AUTOCOMPACT_PERCENT", 0, minimum=0)
        opts = cls(
            enabled=enabled,
            threshold=env_int("COMPACT_THRESHOLD_CHARS", derived_threshold(window), minimum=1),
            max_tool_result_chars=env_int(
                "COMPACT_MAX_TOOL_RESULT_CHARS", DEFAULT_MAX_TOOL_RESULT_CHARS, minimum=1
            ),
            max_turn_tool_result_chars=env_int(
                "COMPACT_MAX_TURN_TOOL_RESULT_CHARS", DEFAULT_MAX_TURN_TOOL_RESULT_CHARS, minimum=1
            ),
            micro_keep_recent=env_int("COMPACT_MICRO_KEEP_RECENT", DEFAULT_MICRO_KEEP_RECENT, minimum=1),
            micro_min_chars=env_int("COMPACT_MICRO_MIN_CHARS", DEFAULT_MICRO_MIN_CHARS, minimum=0),
            micro_low_water_percent=env_int(
                "COMPACT_MICRO_LOW_WATER_PERCENT", DEFAULT_MICRO_LOW_WATER_PERCENT, minimum=1
            ),
            autocompact=enabled and env_flag("AUTOCOMPACT", True),
            autocompact_percent=percent or None,
            context_window_tokens=window,
        )
        return opts.derive()
