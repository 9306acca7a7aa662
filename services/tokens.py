"""Token accounting. Rough estimate for now (characters / 4); the budget issue refines it."""

from __future__ import annotations

import json
import math

from agent.messages import Message


def estimate_tokens(messages: list[Message]) -> int:
    chars = 0
    for m in messages:
        for b in m.get("content", []):
            t = b.get("type")
            if t == "text":
                chars += len(b["text"])  # type: ignore[typeddict-item]
            elif t == "tool_use":
                chars += len(b["name"]) + len(json.dumps(b["input"]))  # type: ignore[typeddict-item]
            elif t == "tool_result":
                c = b["content"]  # type: ignore[typeddict-item]
                chars += len(c) if isinstance(c, str) else len(json.dumps(c))
            elif t == "image":
                chars += 8000
    return math.ceil(chars / 4)
