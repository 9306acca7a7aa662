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
    counts = (usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0)


def context_usage(
    system: str,
    tool_specs: list[dict[str, Any]],
    messages: list[Message],
    state: ContentReplacementState | None,
    window_tokens: int,
    last_usage: dict[str, Any] | None = None,
) -> ContextUsage:
    msg_chars = result_chars = results = 0
    swapped = {**(state.replacements if state else {}), **(state.cleared if state else {})}
    for m in messages:
        for b in m.get("content") or []:
            if b.get("type") == "tool_result":
                results += 1  # what is sent: a spilled or cleared result counts as its placeholder
                tid = b.get("tool_use_id")
                result_chars += len(swapped[tid]) if tid in swapped else block_chars(b)  # type: ignore[arg-type]
            else:
                msg_chars += block_chars(b)  # type: ignore[arg-type]
    parts = [_tokens(len(system)), _tokens(len(json.dumps(tool_specs))) if tool_specs else 0,
             _tokens(msg_chars), _tokens(result_chars)]
    real = usage_tokens(last_usage)
    used, source = (real, "usage") if real > 0 else (sum(parts), "estimate")
    system_t, tools_t, msgs_t, res_t = _scaled(parts, used)
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


def _scaled(parts: list[int], total: int) -> list[int]:
    """The estimated parts in proportion, summing exactly to `total` (the billed count when known): the
    report's lines add up to its first line."""
    estimated = sum(parts)
    if estimated <= 0:
        return [0] * (len(parts) - 1) + [total]
    out = [part * total // estimated for part in parts]
    out[max(range(len(parts)), key=lambda i: parts[i])] += total - sum(out)
    return out


def format_report(u: ContextUsage) -> str:
    src = "last API usage; parts estimated in proportion" if u.source == "usage" else "estimate, chars/4"
    rows = [
        f"Context: ~{u.used_tokens:,} / {u.window_tokens:,} tokens ({u.percent}%, {src})",
        f"  system prompt   ~{u.system_tokens:,} tokens",
        f"  tools           ~{u.tools_tokens:,} tokens",
        f"  messages        ~{u.messages_tokens:,} tokens ({u.message_count} messages)",
        f"  tool results    ~{u.tool_results_tokens:,} tokens ({u.tool_result_count} results)",
        f"  free            ~{max(0, u.window_tokens - u.used_tokens):,} tokens",
        f"  spilled to disk {u.spilled}, cleared {u.cleared}",
    ]
    return "\n".join(rows)
