"""Anthropic-shaped message blocks: the one format that is stored, traced and sent.

Messages are plain JSON dicts (`{"role": ..., "content": [...]}`) so that a transcript line, a TRACE
dump and a request body are the same bytes. The TypedDicts document the shapes; the helpers build
them and keep the pairing invariant (every tool_use answered by exactly one tool_result).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict, cast


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageSource(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: ImageSource


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock]
    is_error: NotRequired[bool]


Block = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock


class Message(TypedDict):
    role: Literal["user", "assistant"]
    content: list[Block]
    # Optional bookkeeping kept beside the API fields; stripped before sending.
    usage: NotRequired[dict[str, int]]
    meta: NotRequired[dict[str, Any]]


# Keys that live on stored messages but are not part of the Messages API.
LOCAL_KEYS = ("usage", "meta")

SKIPPED_TOOL_RESULT_MESSAGE = (
    "Skipped because a previous tool use was rejected or the turn was aborted."
)
# A tool_use whose streamed JSON could not be parsed keeps a valid object input with this key, so
# the history stays sendable and the loop answers it with an input error.
INVALID_INPUT_KEY = "__invalid_json__"
INTERRUPTED_TOOL_RESULT_MESSAGE = "Interrupted by user: the tool did not finish."


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: lone surrogates (from undecodable bytes) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


def image_block(media_type: str, data_b64: str) -> ImageBlock:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data_b64}}


def tool_use_block(id: str, name: str, input: dict[str, Any]) -> ToolUseBlock:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def tool_result_block(
    tool_use_id: str, content: str | list[Any], is_error: bool = False
) -> ToolResultBlock:
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def user_message(content: str | Sequence[Block], meta: dict[str, Any] | None = None) -> Message:
    blocks: list[Block] = [text_block(content)] if isinstance(content, str) else list(content)
    msg: Message = {"role": "user", "content": blocks}
    if meta:
        msg["meta"] = meta
    return msg


def assistant_message(blocks: Sequence[Block], usage: dict[str, int] | None = None) -> Message:
    msg: Message = {"role": "assistant", "content": list(blocks)}
    if usage is not None:
        msg["usage"] = usage
    return msg


def tool_uses(message: Message) -> list[ToolUseBlock]:
    if message.get("role") != "assistant":
        return []
    return [b for b in message["content"] if b.get("type") == "tool_use"]  # type: ignore[misc]


def tool_results(message: Message) -> list[ToolResultBlock]:
    if message.get("role") != "user":
        return []
    return [b for b in message["content"] if b.get("type") == "tool_result"]  # type: ignore[misc]


def message_text(message: Message) -> str:
    """The message's text blocks, a blank line between blocks (two blocks are two paragraphs)."""
    return "\n\n".join(b["text"] for b in message["content"] if b.get("type") == "text" and b.get("text"))  # type: ignore[typeddict-item]


def is_user_text_message(message: Message) -> bool:
    """A user message of text blocks (and the images pasted with them: a prompt from the REPL), no tool
    results: a safe place to start an outbound copy."""
    content = message.get("content") or []
    return (message.get("role") == "user" and any(b.get("type") == "text" for b in content)
            and all(b.get("type") in ("text", "image") for b in content))


def result_text(content: str | list[Any]) -> str:
    """The text of a tool_result's content (block lists are measured by their text blocks)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def has_image(content: str | list[Any]) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "image" for b in content
    )


def tool_use_index(messages: list[Message]) -> dict[str, ToolUseBlock]:
    """Map tool_use id -> its block, across the whole history."""
    index: dict[str, ToolUseBlock] = {}
    for m in messages:
        for b in tool_uses(m):
            index[b["id"]] = b
    return index


def unanswered_tool_uses(messages: list[Message]) -> list[ToolUseBlock]:
    """tool_use blocks of the last assistant message that have no tool_result after them."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "assistant":
            uses = tool_uses(m)
            answered = {r["tool_use_id"] for later in messages[i + 1 :] for r in tool_results(later)}
            return [u for u in uses if u["id"] not in answered]
    return []


def repair_pairing(messages: list[Message], reason: str = SKIPPED_TOOL_RESULT_MESSAGE) -> Message | None:
    """A user message answering every unanswered tool_use of the last assistant turn, or None.

    Used after an abort, a crash or a transcript cut mid-turn, so the next request is valid.
    """
    missing = unanswered_tool_uses(messages)
    if not missing:
        return None
    return user_message([tool_result_block(u["id"], reason, is_error=True) for u in missing])


def to_api(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as the API takes them: local bookkeeping keys removed, nothing else changed."""
    out: list[dict[str, Any]] = []
    for m in messages:
        plain = cast(dict[str, Any], m)
        out.append({k: v for k, v in plain.items() if k not in LOCAL_KEYS} if any(k in m for k in LOCAL_KEYS)
                   else plain)
    return out


# -- hostile or damaged histories ------------------------------------------------------

# A tool input nested deeper than this is refused before anything recurses over it (validation, JSON
# encoding, the transcript); the model never needs more than a few levels.
MAX_INPUT_DEPTH = 64
LOST_MESSAGES_NOTE = "[Earlier messages of this session were lost.]"
REPAIRED_RESULT_MESSAGE = "Interrupted: the session ended before this tool finished."


def nesting_depth(value: Any, limit: int = MAX_INPUT_DEPTH) -> int:
    """Depth of nested lists/dicts, counted without recursion; stops counting past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


def _unique_id(tid: str, seen: set[str]) -> str:
    n = 2
    while f"{tid}_{n}" in seen:
        n += 1
    return f"{tid}_{n}"


def blocks_of(message: Message) -> list[dict[str, Any]]:
    """A message's blocks as plain dicts, for code that handles every block type (thinking, server
    tools...), not only the four the TypedDicts name."""
    return cast(list[dict[str, Any]], message["content"])


def sanitize_assistant(message: Message, seen_ids: set[str]) -> Message:
    """The assistant message as the loop keeps it: a tool_use id already used (in this message or the
    history, `seen_ids`, which is updated) gets a `_2`, `_3`... suffix so every output keeps its own
    result; an input nested past MAX_INPUT_DEPTH is replaced by an invalid-input marker the loop answers
    with an error. Returns the same object when nothing changed."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return message
    out: list[Any] = []
    changed = False
    for block in content:
        b = cast(dict[str, Any], block)
        if isinstance(b, dict) and b.get("type") == "tool_use":
            tid = b.get("id") if isinstance(b.get("id"), str) and b.get("id") else "toolu_missing"
            if tid in seen_ids:
                b, changed = {**b, "id": _unique_id(tid, seen_ids)}, True
            elif tid != b.get("id"):
                b, changed = {**b, "id": tid}, True
            if nesting_depth(b.get("input")) > MAX_INPUT_DEPTH:
                why = f"the input is nested deeper than {MAX_INPUT_DEPTH} levels"
                b, changed = {**b, "input": {INVALID_INPUT_KEY: why}}, True
            seen_ids.add(b["id"])
        out.append(b)
    return cast(Message, {**message, "content": out}) if changed else message


@dataclass
class _Normalizing:
    """The state of one `normalize_history` pass."""

    out: list[Message] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    # (original id, kept id) of the last assistant message's calls that still await their results
    pending: list[tuple[str, str]] = field(default_factory=list)

    def close_pending(self) -> None:
        if self.pending:
            self.out.append(user_message([tool_result_block(new, REPAIRED_RESULT_MESSAGE, is_error=True)
                                          for _, new in self.pending]))
            self.actions.append("synthesised interrupted results for " + ", ".join(new for _, new in self.pending))
            self.pending = []

    def assistant(self, m: Message) -> None:
        self.close_pending()
        fixed = sanitize_assistant(m, self.seen)
        uses = [b for b in blocks_of(fixed) if b.get("type") == "tool_use"]
        orig = [str(b.get("id")) for b in blocks_of(m) if b.get("type") == "tool_use"]
        renamed = [f"{o} -> {u['id']}" for o, u in zip(orig, uses, strict=True) if o != u["id"]]
        if renamed:
            self.actions.append("renamed duplicate tool_use ids " + ", ".join(renamed))
        if fixed is not m and not renamed and orig:
            self.actions.append("replaced an over-deep tool input")
        if self.out and self.out[-1]["role"] == "assistant":
            self.out[-1] = {**self.out[-1], "content": [*self.out[-1]["content"], *fixed["content"]]}
            self.actions.append("joined two assistant messages in a row")
        else:
            self.out.append(fixed)
        self.pending = [(o, u["id"]) for o, u in zip(orig, uses, strict=True)]

    def answer(self, results: list[Any]) -> list[Any]:
        """`results` matched to the pending calls: one per call, in call order, a synthetic one where missing."""
        waiting = list(self.pending)
        answered: dict[str, Any] = {}
        dropped: list[str] = []
        for r in results:
            rid = r.get("tool_use_id")
            match = next((p for p in waiting if rid in p), None)
            if match is None:
                dropped.append(str(rid))
                continue
            waiting.remove(match)
            answered[match[1]] = r if r.get("tool_use_id") == match[1] else {**r, "tool_use_id": match[1]}
        if dropped:
            self.actions.append("dropped tool_results that answer no call: " + ", ".join(dropped))
        missing = [new for _, new in self.pending if new not in answered]
        if missing:
            self.actions.append("synthesised interrupted results for " + ", ".join(missing))
        ordered = [answered.get(new) or tool_result_block(new, REPAIRED_RESULT_MESSAGE, is_error=True)
                   for _, new in self.pending]
        reordered = [r.get("tool_use_id") for r in results] != [r["tool_use_id"] for r in ordered]
        if reordered and not (dropped or missing):
            self.actions.append("put tool_results in the order of their calls")
        self.pending = []
        return ordered

    def user(self, m: Message) -> None:
        results = [b for b in m["content"] if b.get("type") == "tool_result"]
        others = [b for b in m["content"] if b.get("type") != "tool_result"]
        content: list[Any] = [*self.answer(results), *others] if self.pending or results else list(m["content"])
        if not content:
            self.actions.append("dropped an empty user message")
            return
        self.out.append(m if content == m["content"] else {**m, "content": content})


def normalize_history(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """A history the API accepts, from any sequence of well-shaped messages, and what was done to it.

    Both directions of the pairing: a tool_result that answers nothing is dropped; a tool_use without
    a result gets an interrupted one; results come first, in the order of their tool_use blocks.
    Duplicate tool_use ids are renamed as `sanitize_assistant` does live (results are matched to the
    calls in order, so each output is kept); two assistant messages in a row are joined; an empty
    message is dropped; a history that starts with the assistant gets a note before it.
    """
    n = _Normalizing()
    for m in messages:
        if m["role"] == "assistant":
            n.assistant(m)
        else:
            n.user(m)
    n.close_pending()
    if n.out and n.out[0]["role"] != "user":
        n.out.insert(0, user_message(LOST_MESSAGES_NOTE))
        n.actions.append("added a note before a history that began with the assistant")
    return n.out, n.actions
