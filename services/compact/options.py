"""CompactOptions: every knob of the outbound pipeline in one place, with environment overrides."""

from __future__ import annotations

from dataclasses import dataclass

from services.config import ConfigError, env_flag, env_int, getenv

# One budget. Every threshold derives from the model's context window and from the others, so the
# stages hand over in order: micro (threshold T) clears long before autocompact would summarise
# (T <= half of autocompact's level), a fresh turn's results fit under micro's low-water mark L (the
# per-turn budget P <= L, else they are spilled), and the recent window micro keeps fits under L too.
# Units: 4 units ~ 1 token (`services.tokens.text_units`).
UNITS_PER_TOKEN = 4
THRESHOLD_PERCENT_OF_WINDOW = 30

# The seed's 80000 chars (~20k tokens, a tenth of a 200k window) keeps so little that each new tool
# result is a large share of every request: in bench/context_economy.py no policy then reaches a 0.9
# cacheable share (the new content alone caps it near 0.89) and the model re-reads files it just
# lost. 240000 chars (~60k tokens, 30% of the default window) meets the 0.9 target on every script
# seed we replay and still costs about half of sending everything. COMPACT_THRESHOLD_CHARS=80000
# restores react-agent-mini's setting.
DEFAULT_THRESHOLD_CHARS = 240_000
DEFAULT_MAX_TOOL_RESULT_CHARS = 50_000
DEFAULT_MAX_TURN_TOOL_RESULT_CHARS = 200_000
DEFAULT_MICRO_KEEP_RECENT = 4
DEFAULT_MICRO_MIN_CHARS = 500
DEFAULT_MICRO_LOW_WATER_PERCENT = 60
DEFAULT_MAX_MESSAGES = 40
DEFAULT_AUTOCOMPACT_PERCENT = 80
DEFAULT_CONTEXT_WINDOW_TOKENS = 200_000


def derived_threshold(window_tokens: int) -> int:
    return window_tokens * UNITS_PER_TOKEN * THRESHOLD_PERCENT_OF_WINDOW // 100


@dataclass
class CompactOptions:
    enabled: bool = True
    threshold: int = DEFAULT_THRESHOLD_CHARS
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
    max_turn_tool_result_chars: int = DEFAULT_MAX_TURN_TOOL_RESULT_CHARS
    micro_keep_recent: int = DEFAULT_MICRO_KEEP_RECENT
    micro_min_chars: int = DEFAULT_MICRO_MIN_CHARS
    micro_low_water_percent: int = DEFAULT_MICRO_LOW_WATER_PERCENT
    # react-agent-mini's message cap for retain. Retain is now sized by the estimate alone (a short
    # history over the threshold is cut, a long one under it is not); the field stays so that
    # COMPACT_MAX_MESSAGES in an existing environment is still validated, but nothing reads it.
    max_messages: int = DEFAULT_MAX_MESSAGES
    autocompact: bool = True
    autocompact_percent: int = DEFAULT_AUTOCOMPACT_PERCENT
    context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS

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
    def autocompact_units(self) -> int:
        return self.context_window_tokens * UNITS_PER_TOKEN * self.autocompact_percent // 100

    def derive(self) -> CompactOptions:
        """The same options with the thresholds made consistent with each other (see One budget)."""
        self.threshold = max(1, min(self.threshold, self.autocompact_units // 2))
        self.max_turn_tool_result_chars = max(1, min(self.max_turn_tool_result_chars, self.low_water))
        return self

    @classmethod
    def for_window(cls, window_tokens: int, **overrides: object) -> CompactOptions:
        """Defaults for a model with this context window (the lead wires services.models here)."""
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
            max_messages=env_int("COMPACT_MAX_MESSAGES", DEFAULT_MAX_MESSAGES, minimum=2),
            autocompact=enabled and env_flag("AUTOCOMPACT", True),
            autocompact_percent=env_int("AUTOCOMPACT_PERCENT", DEFAULT_AUTOCOMPACT_PERCENT, minimum=1),
            context_window_tokens=window,
        )
        return opts.derive()
