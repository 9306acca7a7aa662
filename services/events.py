"""Events the loop yields to front ends. The loop never prints; renderers consume these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from services.messages import Message

TerminalReason = Literal[
    "completed", "max_turns", "aborted", "error", "refusal", "max_tokens", "context_window_exceeded",
    "loop_detected",
]



@dataclass
class TextDeltaEvent:
    text: str


@dataclass
class ThinkingDeltaEvent:
    """Thinking text as it streams: shown dimmed in the REPL, omitted from text output."""

    text: str


@dataclass
class RetryEvent:
    """The model call is being made again: text streamed since the last AssistantEvent belongs to a
    discarded attempt, and front ends that showed it clear it (or never showed it). `max_retries` and
    `status` as in services.model_types.Retrying (attempt 0: the loop asks again, no API retry)."""

    attempt: int
    delay: float
    reason: str
    max_retries: int = 0
    status: int | None = None


@dataclass
class StreamEvent:
    """A raw API stream event, passed through for front ends that show them (stream-json)."""

    event: dict[str, Any]


@dataclass
class AssistantEvent:
    message: Message


@dataclass
class ToolStartEvent:
    id: str
    name: str
    input: dict[str, Any]
    # Edit/Write: the unified diff of the change, taken before the tool ran (None for other tools).
    diff: list[str] | None = None


@dataclass
class ToolEndEvent:
    id: str
    name: str
    ok: bool
    summary: str = ""
    duration: float = 0.0
    error: str = ""
    # The first lines of the result, for front ends that show them (the REPL's Bash output), and how many
    # lines the whole result has.
    preview: str = ""
    lines: int = 0


@dataclass
class ToolResultsEvent:
    """The user message answering one assistant message's tool calls (plus any injected messages)."""

    message: Message
    extra_messages: list[Message] = field(default_factory=list)


@dataclass
class UserMessageEvent:
    """A user message the loop adds on its own (hook feedback, an interruption note)."""

    message: Message


@dataclass
class NoticeEvent:
    """A one-line notice from the machinery (spilled, cleared, omitted, summarised, retrying)."""

    kind: str
    text: str


@dataclass
class RecordEvent:
    """A pipeline decision (or other non-message record) the engine must append to the transcript."""

    record: dict[str, Any]


@dataclass
class HistoryReplacedEvent:
    """Autocompact wrote back a new history (boundary + summary + tail)."""

    messages: list[Message]


@dataclass
class Terminal:
    reason: TerminalReason
    turns: int
    error: str = ""
    stop_reason: str | None = None  # the last response's stop_reason, when there was one


Event = (
    TextDeltaEvent
    | ThinkingDeltaEvent
    | RetryEvent
    | StreamEvent
    | AssistantEvent
    | ToolStartEvent
    | ToolEndEvent
    | ToolResultsEvent
    | UserMessageEvent
    | NoticeEvent
    | RecordEvent
    | HistoryReplacedEvent
    | Terminal
)
