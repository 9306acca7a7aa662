"""Token accounting: a rough estimate, the canonical usage-anchored count, and an optional exact count.

- `estimate_tokens(messages)`: units / 4 rounded up, where a unit is an ASCII character and a
  non-ASCII one weighs more by script (`text_units`: CJK 4, Cyrillic 1.9, emoji 5); images and documents count 2000 tokens each
  (never their base64 size); the content of a JSON file read by Read counts characters / 2.
- `token_count_with_estimation(history)`: the last assistant message's real usage plus the estimate of
  every message after it, anchored at the first record of a response split into several records.
- `count_tokens_exact(...)`: the SDK's count_tokens, for numbers shown on request only (never the hot path).
"""

from __future__ import annotations

import json
import math
from typing import Any

from services.messages import Message, blocks_of

# Units per character by script class (4 units ~ 1 token), measured with Anthropic's published tokenizer
# on bench/data/token_calibration.json (bench/context_economy.py prints the error per sample):
# ASCII ~4 characters a token; 2-byte scripts (Cyrillic, Greek, accented Latin) ~2; 3-byte ones (CJK,
# kana, Hangul) ~1; 4-byte ones (emoji) ~0.8. Plain characters/4 undercounted CJK about fourfold.
UNITS_2_BYTE = 1.9
UNITS_3_BYTE = 4.0
UNITS_4_BYTE = 5.0


def text_units(text: str) -> int:
    """Size of `text` in units (4 units ~ 1 token): its length when ASCII, weighted by script otherwise.

    The classes come from three C-speed encodes (no per-character Python loop, which would cost more
    than the request's json.dumps): UTF-8 and UTF-16 lengths and the ASCII count give the number of
    1-, 2-, 3- and 4-byte characters."""
    if text.isascii():
        return len(text)
    n = len(text)
    u8 = len(text.encode("utf-8", errors="surrogatepass"))
    u16 = len(text.encode("utf-16-le", errors="surrogatepass"))
    a = len(text.encode("ascii", errors="ignore"))
    d = (u16 - 2 * n) // 2  # astral characters: 4 bytes in UTF-16
    rest = u8 - a - 4 * d  # bytes of the 2- and 3-byte characters
    bc = n - a - d  # how many of them
    c = rest - 2 * bc  # each 3-byte character has one byte more than a 2-byte one
    b = bc - c
    return a + int(UNITS_2_BYTE * b + UNITS_3_BYTE * c + UNITS_4_BYTE * d + 0.5)


IMAGE_TOKENS = 2000
CHARS_PER_TOKEN = 4
JSON_CHARS_PER_TOKEN = 2
JSON_SUFFIXES = (".json", ".jsonl", ".jsonc")
READ_TOOL = "Read"


def _content_chars(content: Any) -> tuple[int, int]:
    """(characters, fixed-cost blocks) of a tool_result content."""
    if isinstance(content, str):
        return text_units(content), 0
    chars = fixed = 0
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                chars += text_units(b.get("text", ""))
            elif t in ("image", "document"):
                fixed += 1
            else:
                chars += len(json.dumps(b, ensure_ascii=False))
    return chars, fixed


def _json_read_ids(messages: list[Message]) -> set[str]:
    ids = set()
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for b in blocks_of(m):
            if b.get("type") == "tool_use" and b.get("name") == READ_TOOL:
                path = str((b.get("input") or {}).get("file_path", ""))
                if path.lower().endswith(JSON_SUFFIXES):
                    ids.add(b["id"])
    return ids


def estimate_tokens(messages: list[Message], json_read_ids: set[str] | None = None) -> int:
    """Rough token count of messages. `json_read_ids`: tool_use ids of Reads of JSON files, when the
    tool_use lives outside `messages` (found in `messages` otherwise)."""
    json_ids = _json_read_ids(messages) if json_read_ids is None else json_read_ids | _json_read_ids(messages)
    chars = json_chars = fixed = 0
    for m in messages:
        for b in blocks_of(m):
            t = b.get("type")
            if t == "text":
                chars += text_units(b["text"])
            elif t == "tool_use":
                chars += len(b["name"]) + text_units(json.dumps(b["input"], ensure_ascii=False))
            elif t == "tool_result":
                c, f = _content_chars(b["content"])
                fixed += f
                if b["tool_use_id"] in json_ids:
                    json_chars += c
                else:
                    chars += c
            elif t in ("image", "document"):
                fixed += 1
            elif t == "thinking":
                chars += text_units(b.get("thinking", ""))
            elif t == "redacted_thinking":
                chars += len(b.get("data", ""))
            else:
                chars += len(json.dumps(b, ensure_ascii=False))
    return (
        math.ceil(chars / CHARS_PER_TOKEN)
        + math.ceil(json_chars / JSON_CHARS_PER_TOKEN)
        + fixed * IMAGE_TOKENS
    )


def usage_tokens(usage: dict[str, Any] | None) -> int:
    """input + cache creation + cache read + output: the context size the API reported."""
    if not usage:
        return 0
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    )


def response_id(message: Message) -> str | None:
    """The API response id of an assistant record (records split from one response share it)."""
    if message.get("role") != "assistant":
        return None
    meta = message.get("meta") or {}
    rid = meta.get("message_id") or meta.get("response_id")
    return rid if isinstance(rid, str) else None


def token_count_with_estimation(history: list[Message]) -> int:
    """The canonical context size for every threshold: real usage + an estimate of what came after."""
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        if m.get("role") != "assistant" or (m.get("meta") or {}).get("synthetic"):
            continue
        usage = m.get("usage")
        if not usage_tokens(usage):
            continue
        anchor = i
        rid = response_id(m)
        if rid is not None:
            j = i - 1
            while j >= 0:
                prior = response_id(history[j])
                if prior == rid:
                    anchor = j
                elif prior is not None or (
                    history[j].get("role") == "assistant" and history[j].get("usage")
                ):
                    break
                j -= 1
        return usage_tokens(usage) + estimate_tokens(
            history[anchor + 1 :], json_read_ids=_json_read_ids(history[: anchor + 1])
        )
    return estimate_tokens(history)


async def count_tokens_exact(
    client: Any, model: str, messages: list[Message], system: str = "", tools: list[dict[str, Any]] | None = None
) -> int | None:
    """Exact input tokens through the SDK's `messages.count_tokens`; None when unavailable.

    Costs a network round trip: use it only where a number is shown on request (/context), never per call.
    """
    from services.messages import to_api

    kwargs: dict[str, Any] = {"model": model, "messages": to_api(messages) or [{"role": "user", "content": "foo"}]}
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = tools
    try:
        res = client.messages.count_tokens(**kwargs)
        if hasattr(res, "__await__"):
            res = await res
        return int(res.input_tokens)
    except Exception:  # noqa: BLE001 - an optional figure; the estimate stands in
        return None
