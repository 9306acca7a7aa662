"""Anthropic-shaped message blocks: the one format that is stored, traced and sent.

Messages are plain JSON dicts (`{"role": ..., "content": [...]}`) so that a transcript line, a TRACE
dump and a request body are the same bytes. The TypedDicts document the shapes; the helpers build
them and keep the pairing invariant (every tool_use answered by exactly one tool_result).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


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


def user_message(content: str | list[Block], meta: dict[str, Any] | None = None) -> Message:
    blocks = [text_block(content)] if isinstance(content, str) else list(content)
    msg: Message = {"role": "user", "content": blocks}
    if meta:
        msg["meta"] = meta
    return msg


def assistant_message(blocks: list[Block], usage: dict[str, int] | None = None) -> Message:
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
    """A user message made only of text blocks: a safe place to start an outbound copy."""
    content = message.get("content") or []
    return message.get("role") == "user" and bool(content) and all(b.get("type") == "text" for b in content)


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
    out = []
    for m in messages:
        if any(k in m for k in LOCAL_KEYS):
            m = {k: v for k, v in m.items() if k not in LOCAL_KEYS}  # type: ignore[assignment]
        out.append(m)
    return out
