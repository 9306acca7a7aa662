"""Where the prompt-cache breakpoints go: a pure function of the request.

The API looks for a cached prefix at each `cache_control` breakpoint and at most 20 content blocks
before it (`LOOKBACK_BLOCKS`). One moving breakpoint on the last block (what Claude Code does) hits
the previous request's entry as long as the previous request ended within 20 blocks of the new end.
A parallel batch of ten calls adds 10 tool_use + 10 tool_result blocks (+ text): the previous entry
falls out of the lookback and every such turn is a full cache miss. So, at most four breakpoints:

1. the last tool definition (the tool list is byte-stable: its own entry survives a system change);
2. the system prompt;
3. the previous request's last block (the last block of the last user message before the newest
   assistant message), only when it lies `LOOKBACK_BLOCKS` or more blocks before the end: a read
   of what the previous request wrote;
4. the last block of the request: the write the next request will read.

Copies only the blocks it marks; the inputs are never changed.
"""

from __future__ import annotations

from typing import Any

LOOKBACK_BLOCKS = 20
EPHEMERAL = {"type": "ephemeral"}
_MARKABLE = ("text", "tool_result", "image", "tool_use", "document")


def _markable(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in _MARKABLE and not (
        block.get("type") == "text" and not block.get("text")
    )


def previous_end(messages: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(message index, block index) of the previous request's last block, or None on a first call."""
    last_assistant = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    if last_assistant is None:
        return None
    for i in range(last_assistant - 1, -1, -1):
        content = messages[i].get("content")
        if messages[i].get("role") == "user" and isinstance(content, list) and content:
            return i, len(content) - 1
    return None


def blocks_between(messages: list[dict[str, Any]], start: tuple[int, int]) -> int:
    """Content blocks after `start` up to and including the request's last block."""
    mi, bi = start
    n = len(messages[mi].get("content") or []) - 1 - bi
    for m in messages[mi + 1 :]:
        content = m.get("content")
        n += len(content) if isinstance(content, list) else 1
    return n


def _mark_block(messages: list[dict[str, Any]], mi: int, bi: int) -> bool:
    m = messages[mi]
    content = m.get("content")
    if not isinstance(content, list) or not _markable(content[bi]):
        return False
    new_content = list(content)
    new_content[bi] = {**content[bi], "cache_control": EPHEMERAL}
    messages[mi] = {**m, "content": new_content}
    return True


def place_breakpoints(
    system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, tools, messages) with at most four breakpoints, placed as the module says."""
    system_blocks = [{"type": "text", "text": system, "cache_control": EPHEMERAL}] if system else []
    tools_out = list(tools)
    if tools_out:
        tools_out[-1] = {**tools_out[-1], "cache_control": EPHEMERAL}
    out = list(messages)
    if out:
        content = out[-1].get("content")
        if isinstance(content, list) and content:
            _mark_block(out, len(out) - 1, len(content) - 1)
        prev = previous_end(out)
        if prev is not None and blocks_between(out, prev) >= LOOKBACK_BLOCKS:
            _mark_block(out, *prev)
    return system_blocks, tools_out, out
