"""CompactOptions: every knob of the outbound pipeline in one place, with environment overrides."""

from __future__ import annotations

from dataclasses import dataclass

from services.config import env_flag, env_int, getenv

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


@dataclass
class CompactOptions:
    enabled: bool = True
    threshold: int = DEFAULT_THRESHOLD_CHARS
    max_tool_result_chars: int = DEFAULT_MAX_TOOL_RESULT_CHARS
    max_turn_tool_result_chars: int = DEFAULT_MAX_TURN_TOOL_RESULT_CHARS
    micro_keep_recent: int = DEFAULT_MICRO_KEEP_RECENT
    micro_min_chars: int = DEFAULT_MICRO_MIN_CHARS
    micro_low_water_percent: int = DEFAULT_MICRO_LOW_WATER_PERCENT
    max_messages: int = DEFAULT_MAX_MESSAGES
    autocompact: bool = True
    autocompact_percent: int = DEFAULT_AUTOCOMPACT_PERCENT
    context_window_tokens: int = DEFAULT_CONTEXT_WINDOW_TOKENS

    @classmethod
    def from_env(cls) -> CompactOptions:
        enabled = getenv("COMPACT") != "0"
        return cls(
            enabled=enabled,
            threshold=env_int("COMPACT_THRESHOLD_CHARS", DEFAULT_THRESHOLD_CHARS, minimum=1),
            max_tool_result_chars=env_int(
                "COMPACT_MAX_TOOL_RESULT_CHARS", DEFAULT_MAX_TOOL_RESULT_CHARS, minimum=1
            ),
            max_turn_tool_result_chars=env_int(
                "COMPACT_MAX_TURN_TOOL_RESULT_CHARS", DEFAULT_MAX_TURN_TOOL_RESULT_CHARS, minimum=1
            ),
            micro_keep_recent=env_int("COMPACT_MICRO_KEEP_RECENT", DEFAULT_MICRO_KEEP_RECENT, minimum=0),
            micro_min_chars=env_int("COMPACT_MICRO_MIN_CHARS", DEFAULT_MICRO_MIN_CHARS, minimum=0),
            micro_low_water_percent=env_int(
                "COMPACT_MICRO_LOW_WATER_PERCENT", DEFAULT_MICRO_LOW_WATER_PERCENT, minimum=1
            ),
            max_messages=env_int("COMPACT_MAX_MESSAGES", DEFAULT_MAX_MESSAGES, minimum=2),
            autocompact=enabled and env_flag("AUTOCOMPACT", True),
            autocompact_percent=env_int("AUTOCOMPACT_PERCENT", DEFAULT_AUTOCOMPACT_PERCENT, minimum=1),
            context_window_tokens=env_int(
                "CONTEXT_WINDOW_TOKENS", DEFAULT_CONTEXT_WINDOW_TOKENS, minimum=1000
            ),
        )
