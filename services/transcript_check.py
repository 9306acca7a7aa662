"""A message read back from a transcript, checked field by field before anything relies on it.

A transcript is a file anyone who can write the project's home can edit (or a crash can tear), so every
field of a stored message is untrusted input. `check_message` returns the message as the rest of the
agent expects it (role, a list of well-typed blocks, dict bookkeeping) or None when nothing usable is left,
and says in one short phrase per repair what it changed. The rules per block type are the Messages API's:
a block the API would refuse is repaired when its meaning survives (a missing tool_use id gets a new one,
a non-object input becomes `{}`, a result's bad `is_error` is dropped) and dropped otherwise. Fields the
API added that this agent does not know are kept: they came from the API and go back to it as they came.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, cast

from services.messages import Message, clean_text

Checked = tuple[dict[str, Any] | None, list[str]]

# Result blocks a tool_result may carry (the API's list, plus the tool search's references).
_RESULT_PARTS = frozenset({"text", "image", "document", "search_result", "tool_reference"})


def clean_strings(value: Any, depth: int = 0) -> Any:
    """`value` with every string made UTF-8-encodable (a `\\ud800` escape loads as a lone surrogate)."""
    if isinstance(value, str):
        return clean_text(value)
    if depth > 200:
        return None
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_strings(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_strings(v, depth + 1) for v in value]
    return value


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _text(b: dict[str, Any]) -> Checked:
    if not isinstance(b.get("text"), str):
        return None, ["dropped a text block without text"]
    if "citations" in b and not isinstance(b["citations"], list):
        return {k: v for k, v in b.items() if k != "citations"}, ["dropped a text block's malformed citations"]
    return b, []


def _source_ok(source: Any) -> bool:
    if not isinstance(source, dict):
        return False
    kind = source.get("type")
    if kind == "base64":
        return _nonempty_str(source.get("media_type")) and isinstance(source.get("data"), str)
    if kind == "url":
        return _nonempty_str(source.get("url"))
    if kind == "text":
        return isinstance(source.get("data"), str)
    return kind in ("file", "content") and (_nonempty_str(source.get("file_id")) or "content" in source)


def _media(b: dict[str, Any]) -> Checked:
    if _source_ok(b.get("source")):
        return b, []
    return None, [f"dropped an {b['type']} block with a malformed source"]


def _tool_use(b: dict[str, Any]) -> Checked:
    notes: list[str] = []
    if not _nonempty_str(b.get("name")):
        return None, [f"dropped a {b['type']} block without a name"]
    if not _nonempty_str(b.get("id")):
        b = {**b, "id": f"toolu_repaired_{secrets.token_hex(6)}"}
        notes.append(f"gave a {b['name']} call without an id the id {b['id']}")
    if not isinstance(b.get("input"), dict):
        b = {**b, "input": {}}
        notes.append(f"replaced the non-object input of {b['id']} by {{}}")
    return b, notes


def _result_parts(content: list[Any]) -> tuple[list[Any], int]:
    kept: list[Any] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in _RESULT_PARTS:
            fixed, _ = _check_block(part)
            if fixed is not None:
                kept.append(fixed)
    return kept, len(content) - len(kept)


def _tool_result(b: dict[str, Any]) -> Checked:
    if not _nonempty_str(b.get("tool_use_id")):
        return None, ["dropped a tool_result that names no call"]
    notes: list[str] = []
    content = b.get("content", "")
    if isinstance(content, list):
        kept, lost = _result_parts(content)
        if lost:
            b = {**b, "content": kept}
            notes.append(f"dropped {lost} malformed part(s) of the result of {b['tool_use_id']}")
    elif not isinstance(content, str):
        b = {**b, "content": "[The stored result of this call was damaged and is lost.]"}
        notes.append(f"replaced the damaged result of {b['tool_use_id']}")
    if "is_error" in b and not isinstance(b["is_error"], bool):
        b = {k: v for k, v in b.items() if k != "is_error"}
        notes.append(f"dropped a malformed is_error of {b['tool_use_id']}")
    return b, notes


def _thinking(b: dict[str, Any]) -> Checked:
    if isinstance(b.get("thinking"), str) and isinstance(b.get("signature"), str):
        return b, []
    return None, ["dropped a thinking block without its text or signature"]


def _redacted(b: dict[str, Any]) -> Checked:
    if isinstance(b.get("data"), str):
        return b, []
    return None, ["dropped a redacted_thinking block without data"]


def _server_result(b: dict[str, Any]) -> Checked:
    if _nonempty_str(b.get("tool_use_id")) and "content" in b:
        return b, []
    return None, [f"dropped a malformed {b['type']} block"]


_RULES: dict[str, Callable[[dict[str, Any]], Checked]] = {
    "text": _text, "image": _media, "document": _media, "tool_use": _tool_use, "server_tool_use": _tool_use,
    "mcp_tool_use": _tool_use, "tool_result": _tool_result, "thinking": _thinking, "redacted_thinking": _redacted,
    "search_result": lambda b: (b, []) if isinstance(b.get("content"), list) else (None, ["dropped a malformed search_result"]),
    "tool_reference": lambda b: (b, []) if _nonempty_str(b.get("tool_name")) else (None, ["dropped a malformed tool_reference"]),
}


def _check_block(block: Any) -> Checked:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None, ["dropped a block that is not an object with a type"]
    kind = block["type"]
    rule = _RULES.get(kind)
    if rule is not None:
        return rule(block)
    if kind.endswith("_tool_result"):  # server tools' results: web_search_tool_result, code_execution_...
        return _server_result(block)
    return None, [f"dropped a block of unknown type {kind[:40]!r}"]


def _content(msg: dict[str, Any]) -> tuple[list[Any], list[str]]:
    raw = msg.get("content")
    if isinstance(raw, str):
        return [{"type": "text", "text": raw}], []
    if not isinstance(raw, list):
        return [], ["the message had no content list"]
    blocks: list[Any] = []
    notes: list[str] = []
    for block in raw:
        fixed, why = _check_block(block)
        notes.extend(why)
        if fixed is not None:
            blocks.append(fixed)
    return blocks, notes


def _bookkeeping(msg: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
    usage, meta = msg.get("usage"), msg.get("meta")
    if isinstance(usage, dict):
        out["usage"] = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    elif usage is not None:
        notes.append("dropped malformed usage")
    if isinstance(meta, dict):
        out["meta"] = {k: v for k, v in meta.items() if _meta_value_ok(v)}
        if len(out["meta"]) != len(meta):
            notes.append("dropped malformed meta fields")
    elif meta is not None:
        notes.append("dropped malformed meta")


def _meta_value_ok(value: Any) -> bool:
    """The agent's own bookkeeping holds scalars and lists of names (hashable where it is looked up)."""
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def check_message(msg: Any) -> tuple[Message | None, list[str]]:
    """The stored message `msg` as the agent can rely on it, or None, and what was repaired."""
    if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
        return None, ["not a user or assistant message"]
    msg = cast(dict[str, Any], clean_strings(msg))
    blocks, notes = _content(msg)
    if not blocks:
        return None, [*notes, "nothing usable was left of it"]
    out: dict[str, Any] = {"role": msg["role"], "content": blocks}
    _bookkeeping(msg, out, notes)
    # Other top-level keys would be sent to the API, which refuses unknown ones.
    extra = sorted(k for k in msg if k not in out and k not in ("usage", "meta"))
    if extra:
        notes.append("dropped unknown message fields " + ", ".join(repr(k[:40]) for k in extra[:5]))
    return cast(Message, out), notes
