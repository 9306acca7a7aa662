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

Else (no big batch) the fourth goes to the **pass anchor**: the block just before the oldest tool result
that stage 2 (micro) may still clear, when it lies `LOOKBACK_BLOCKS` or more blocks before the end. It stays
put between clearing passes, so every request reads (and so keeps alive) its entry; the request after a pass
rewrites only what follows it instead of the whole conversation.

Copies only the blocks it marks; the inputs are never changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from services.compact.estimate import result_chars
from services.compact.micro import MICROCOMPACT_NOTE, is_compactable_tool_name
from services.compact.options import DEFAULT_MICRO_MIN_CHARS

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


def _clearable(block: Any, names: dict[str, str]) -> bool:
    """A tool result micro may still clear: compactable, bigger than its minimum, not cleared yet."""
    if not isinstance(block, dict) or block.get("type") != "tool_result":
        return False
    content = block.get("content")
    if isinstance(content, str) and content.startswith(MICROCOMPACT_NOTE):
        return False
    name = names.get(str(block.get("tool_use_id")), "")
    return is_compactable_tool_name(name) and result_chars(content or "") > DEFAULT_MICRO_MIN_CHARS


def pass_anchor(messages: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(message, block) just before the oldest tool result micro may still clear, when it lies
    LOOKBACK_BLOCKS or more blocks before the request's end; else None."""
    names = {b["id"]: b.get("name", "") for m in messages if m.get("role") == "assistant"
             for b in (m.get("content") if isinstance(m.get("content"), list) else []) or []
             if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b}
    for prev, b in _blocks_after(messages):
        if _clearable(b, names):
            return None if prev is None or blocks_between(messages, prev) < LOOKBACK_BLOCKS else prev
    return None


def _blocks_after(messages: list[dict[str, Any]]) -> Iterator[tuple[tuple[int, int] | None, Any]]:
    """Each content block with the (message, block) position of the block before it (None after a message
    whose content is a plain string: no block to mark there)."""
    prev: tuple[int, int] | None = None
    for mi, m in enumerate(messages):
        content = m.get("content")
        if not isinstance(content, list):
            prev = None
            continue
        for bi, b in enumerate(content):
            yield prev, b
            prev = (mi, bi)


def _mark_block(messages: list[dict[str, Any]], mi: int, bi: int) -> bool:
    m = messages[mi]
    content = m.get("content")
    if not isinstance(content, list) or not _markable(content[bi]):
        return False
    new_content = list(content)
    new_content[bi] = {**content[bi], "cache_control": EPHEMERAL}
    messages[mi] = {**m, "content": new_content}
    return True


def before_result(messages: list[dict[str, Any]], tool_use_id: str) -> tuple[int, int] | None:
    """(message, block) of the block just before the tool_result answering `tool_use_id`."""
    for prev, b in _blocks_after(messages):
        if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
            return prev
    return None


def _message_marks(out: list[dict[str, Any]], anchors: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where the message breakpoints go, most important first (the last block first)."""
    content = out[-1].get("content")
    marks = [(len(out) - 1, len(content) - 1)] if isinstance(content, list) and content else []
    prev = previous_end(out)
    if prev is not None and blocks_between(out, prev) >= LOOKBACK_BLOCKS:
        return [*marks, prev]
    for tid in anchors[:1]:  # the request after a clearing pass: read what was cached before it
        start = before_result(out, tid)
        if start is not None and blocks_between(out, start) >= LOOKBACK_BLOCKS:
            marks.append(start)
    anchor = pass_anchor(out)
    if anchor is not None and anchor not in marks:
        marks.append(anchor)
    return marks


def place_breakpoints(
    system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]], anchors: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, tools, messages) with at most four breakpoints, placed as the module says. When
    three message breakpoints are wanted (after a clearing pass), the tool list's goes: the system
    prompt's entry covers the tools too (they come first)."""
    system_blocks = [{"type": "text", "text": system, "cache_control": EPHEMERAL}] if system else []
    out = list(messages)
    marks = _message_marks(out, anchors) if out else []
    tools_out = list(tools)
    # The last tool the API renders in the prefix: deferred ones (`defer_loading`) are rendered where the
    # model loaded them, so a mark on one would move with every load.
    shown = [i for i, t in enumerate(tools_out) if not t.get("defer_loading")]
    if shown and len(marks) + len(system_blocks) < 4:
        tools_out[shown[-1]] = {**tools_out[shown[-1]], "cache_control": EPHEMERAL}
    for mi, bi in marks[: 4 - len(system_blocks)]:
        _mark_block(out, mi, bi)
    return system_blocks, tools_out, out
