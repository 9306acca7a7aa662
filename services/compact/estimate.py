"""estimate_outbound_chars: the size measure stages 2 and 3 compare against the threshold.

Text length + tool_result content length + tool name and JSON input length of tool_use blocks, in
*units*: one unit per ASCII character, more per non-ASCII one by script class (`text_units`), so
that 4 units are about one token in every script. Claude's tokenizer gives English and code about 4
characters a token but CJK about one character a token: counting plain characters undercounted a CJK
history about fourfold and let it overshoot the window. The system prompt and tool schemas are not
counted (they are the same on every call).
"""

from __future__ import annotations

import json
from typing import Any

from services.messages import Message
from services.tokens import text_units

# An image in a tool_result or user message counts as this many characters.
IMAGE_CHARS = 6000


def result_chars(content: str | list[Any]) -> int:
    """Characters of a tool_result's content (text blocks, images at a flat rate)."""
    if isinstance(content, str):
        return text_units(content)
    total = 0
    for b in content:
        if isinstance(b, dict):
            if b.get("type") == "text":
                total += text_units(b.get("text", ""))
            elif b.get("type") == "image":
                total += IMAGE_CHARS
    return total


def block_chars(block: dict[str, Any]) -> int:
    t = block.get("type")
    if t == "text":
        return text_units(block["text"])
    if t == "tool_result":
        return result_chars(block["content"])
    if t == "tool_use":
        try:
            return len(block["name"]) + text_units(json.dumps(block["input"], ensure_ascii=False))
        except (TypeError, ValueError):
            return len(block["name"])
    if t == "image":
        return IMAGE_CHARS
    return 0


def estimate_outbound_chars(messages: list[Message]) -> int:
    total = 0
    for m in messages:
        for b in m.get("content") or []:
            total += block_chars(b)  # type: ignore[arg-type]
    return total


def fixed_units(system: str, tool_specs: list[dict[str, Any]]) -> int:
    """Units of what every request carries beside the messages: the system prompt and the tool schemas."""
    try:
        tools = json.dumps(tool_specs, ensure_ascii=False)
    except (TypeError, ValueError):
        tools = ""
    return text_units(system or "") + text_units(tools)
