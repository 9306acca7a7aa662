"""Data for /context and the `ctx ~N%` status: where the context window goes.

Counts are estimates (characters / 4) except `used_tokens` when a real usage report is known (the last
assistant message's input + cache tokens), which is what the provider actually billed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from services.compact.autocompact import percent_of
from services.compact.estimate import block_chars
from services.compact.state import ContentReplacementState
from services.messages import Message

CHARS_PER_TOKEN = 4


@dataclass
class ContextUsage:
    system_tokens: int
    tools_tokens: int
    messages_tokens: int  # text and tool_use blocks
    tool_results_tokens: int
    message_count: int
    tool_result_count: int
    spilled: int
    cleared: int
    used_tokens: int
    window_tokens: int
    percent: int
    source: str  # "usage" or "estimate"


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def usage_tokens(usage: dict[str, Any] | None) -> int:
    if not usage:
        return 0
    return sum(
        int(usage.get(k, 0) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


def context_usage(
    system: str,
    tool_specs: list[dict[str, Any]],
    messages: list[Message],
    state: ContentReplacementState | None,
    window_tokens: int,
    last_usage: dict[str, Any] | None = None,
) -> ContextUsage:
    msg_chars = result_chars = results = 0
    for m in messages:
        for b in m.get("content") or []:
            if b.get("type") == "tool_result":
                results += 1
                result_chars += block_chars(b)  # type: ignore[arg-type]
            else:
                msg_chars += block_chars(b)  # type: ignore[arg-type]
    system_t = _tokens(len(system))
    tools_t = _tokens(len(json.dumps(tool_specs))) if tool_specs else 0
    msgs_t, res_t = _tokens(msg_chars), _tokens(result_chars)
    real = usage_tokens(last_usage)
    used, source = (real, "usage") if real > 0 else (system_t + tools_t + msgs_t + res_t, "estimate")
    return ContextUsage(
        system_tokens=system_t,
        tools_tokens=tools_t,
        messages_tokens=msgs_t,
        tool_results_tokens=res_t,
        message_count=len(messages),
        tool_result_count=results,
        spilled=len(state.replacements) if state else 0,
        cleared=len(state.cleared) if state else 0,
        used_tokens=used,
        window_tokens=window_tokens,
        percent=percent_of(used, window_tokens),
        source=source,
    )


def format_report(u: ContextUsage) -> str:
    src = "last API usage" if u.source == "usage" else "estimate, chars/4"
    rows = [
        f"Context: ~{u.used_tokens:,} / {u.window_tokens:,} tokens ({u.percent}%, {src})",
        f"  system prompt   ~{u.system_tokens:,} tokens",
        f"  tools           ~{u.tools_tokens:,} tokens",
        f"  messages        ~{u.messages_tokens:,} tokens ({u.message_count} messages)",
        f"  tool results    ~{u.tool_results_tokens:,} tokens ({u.tool_result_count} results)",
        f"  spilled to disk {u.spilled}, cleared {u.cleared}",
    ]
    return "\n".join(rows)
