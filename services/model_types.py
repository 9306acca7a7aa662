"""What a model provider takes and yields.

A provider is an async generator function `call_model(request)` that yields `TextDelta`s as text
arrives, maybe `Retrying` notices, and finally exactly one `ModelResponse`. It raises `ModelError`
with a one-line message when nothing more can be done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from services.messages import Message
from services.scrub import scrub


@dataclass
class ModelRequest:
    messages: list[dict[str, Any]]
    system: str
    tools: list[dict[str, Any]]
    model: str
    max_tokens: int
    # Extended thinking (`{"type": "enabled", "budget_tokens": N}` or `{"type": "adaptive"}`) and
    # `output_config` (`{"effort": ...}`), sent as given when set (services/thinking.py builds them).
    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    # Also yield every raw API stream event (`RawStreamEvent`): stream-json's --include-partial-messages.
    raw_events: bool = False
    # tool_use ids whose result's preceding block gets a cache breakpoint: where this request's clearing
    # pass started (services/cache_breakpoints.py: the request after a pass reads the prefix before it).
    cache_anchors: tuple[str, ...] = ()


@dataclass
class RawStreamEvent:
    """One server-sent event of the Messages API, as JSON (message_start, content_block_delta, ...)."""

    event: dict[str, Any]


@dataclass
class TextDelta:
    text: str


@dataclass
class ThinkingDelta:
    """Thinking text as it streams (shown dimmed by the REPL; never part of the answer text)."""

    text: str


@dataclass
class Retrying:
    """The provider will try again: whatever it streamed before belongs to a discarded attempt. An API
    retry says how many it may make (`max_retries`) and the HTTP status that failed (None: no answer;
    200: an `error` event inside the stream); attempt 0 is not an API retry (a fallback model)."""

    attempt: int
    delay: float
    reason: str
    max_retries: int = 0
    status: int | None = None


@dataclass
class ModelResponse:
    message: Message
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    # stop_reason max_tokens inside a tool call: the half-written call was removed from `message`.
    cut_tool_use: bool = False
    # The API's explanation of the stop, when it sends one (a refusal's category and explanation).
    stop_details: dict[str, Any] | None = None


class ModelError(Exception):
    """The model call failed for good; `str(err)` is a one-line message for the user."""

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None):
        super().__init__(scrub(message))
        self.status = status
        self.kind = kind


ModelEvent = TextDelta | ThinkingDelta | Retrying | ModelResponse | RawStreamEvent
CallModel = Callable[[ModelRequest], AsyncIterator[ModelEvent]]
