"""The Anthropic streaming provider, on the official SDK (imported only when a call is about to happen).

The raw SSE events are accumulated here, so that text deltas reach the user as they arrive, every
block of the final message is kept (text beside tool calls included), and a tool_use whose JSON is
malformed becomes an input error for the loop instead of a crash. Retries are ours (the SDK's are
off) so that `retry-after` is capped, mid-stream `overloaded_error` is retried too, and each retry is
traced and shown.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator
from http import HTTPStatus
from typing import Any

from services.cache_breakpoints import place_breakpoints
from services.config import client_options, env_int
from services.install_id import install_id
from services.messages import INVALID_INPUT_KEY, assistant_message
from services.model_types import (
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    RawStreamEvent,
    Retrying,
    TextDelta,
    ThinkingDelta,
)
from services.models import wire_model
from services.scrub import scrub
from services.server_tools import betas_for
from services.thinking import request_extras
from services.trace import trace

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}
INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
# The SDK obeys any retry-after (up to days); a user at a terminal should never wait that long.
MAX_RETRY_AFTER = 60.0


def request_metadata() -> dict[str, Any]:
    """What Claude Code also sends: `metadata.user_id` (an anonymous per-install id) and, only when the user
    names them in ANTHROPIC_BETAS (comma-separated), beta headers: an Anthropic-compatible server may reject
    betas it does not know, so none is sent by default."""
    extra: dict[str, Any] = {"metadata": {"user_id": install_id()}}
    betas = ",".join(b.strip() for b in os.environ.get("ANTHROPIC_BETAS", "").split(",") if b.strip())
    if betas:
        extra["extra_headers"] = {"anthropic-beta": betas}
    return extra


def _cache_marked(request: ModelRequest) -> tuple[list[dict], list[dict], list[dict]]:
    """System, tools and messages with prompt-cache breakpoints (services/cache_breakpoints.py)."""
    return place_breakpoints(request.system, list(request.tools), list(request.messages), request.cache_anchors)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None:
            return float(ms) / 1000
        s = headers.get("retry-after")
        if s is not None:
            return float(s)
    except ValueError:
        return None
    return None


def _status_reason(status: int, kind: str) -> str:
    """A failed call as a person reads it: "529 overloaded", "429 too many requests"; an `error` event
    inside a stream (HTTP 200) by its type."""
    if status == 200:
        return f"{(kind or 'unknown').removesuffix('_error').replace('_', ' ')} error in the stream"
    if status == 529:  # Anthropic's own status, not in the HTTP registry
        return "529 overloaded"
    try:
        return f"{status} {HTTPStatus(status).phrase.lower()}"
    except ValueError:
        return f"HTTP {status}"


def _connection_reason(exc: BaseException, timeout_type: type[BaseException]) -> str:
    """"timeout", "connection refused" (nothing listens there: the OS error is deep in the SDK's chain)
    or "connection error"."""
    if isinstance(exc, timeout_type):
        return "timeout"
    seen: BaseException | None = exc
    for _ in range(10):  # a bounded walk: a chain could loop
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return "connection error"


def _usage(raw: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if raw is None:
        return out
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(raw, key, None)
        if isinstance(value, int):
            out[key] = value
    return out


# Blocks whose input streams as input_json_delta (server tools too: their input must go back as sent).
_JSON_INPUT_BLOCKS = ("tool_use", "server_tool_use")


class _Accumulator:
    """Builds the assistant message from raw stream events, keeping every block as the server sent it
    (thinking with its signature, redacted_thinking, server tool blocks and results, citations)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, str] = {}
        # Streamed text and thinking, as pieces joined once at the end (+= on a long string is quadratic).
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stop_details: dict[str, Any] | None = None
        self.model: str | None = None
        self.started = False
        self.finished = False

    def feed(self, event: Any) -> TextDelta | ThinkingDelta | None:
        """One raw stream event taken in; a text or thinking delta comes back to be streamed on."""
        kind = event.type
        if kind == "message_start":
            self.started = True
            self.model = getattr(event.message, "model", None)
            self.usage.update(_usage(event.message.usage))
        elif kind == "content_block_start":
            return self.start_block(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self.delta(event.index, event.delta)
        elif kind == "content_block_stop":
            self.stop_block(event.index)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self.stop_details = _plain(getattr(event.delta, "stop_details", None))
            self.usage.update(_usage(event.usage))
        elif kind == "message_stop":
            self.finished = True
        return None

    def start_block(self, index: int, block: Any) -> ThinkingDelta | None:
        data = block.model_dump(mode="json", exclude_unset=True) if hasattr(block, "model_dump") else dict(block)
        if data.get("type") in _JSON_INPUT_BLOCKS:
            data["input"] = {}
            self.partial_json[index] = ""
        self.blocks[index] = data
        # Thinking started: said at once, since with the display omitted no thinking text follows.
        return ThinkingDelta("") if data.get("type") in ("thinking", "redacted_thinking") else None

    def delta(self, index: int, delta: Any) -> TextDelta | ThinkingDelta | None:
        block = self.blocks.get(index)
        if block is None:
            return None
        kind = getattr(delta, "type", "")
        if kind == "text_delta":
            pieces = self.parts.setdefault((index, "text"), [block.get("text", "")])
            first = not any(pieces)
            pieces.append(delta.text)
            if first and self._text_before(index):
                # A new text block of the same message: a paragraph break on screen (not in the block).
                return TextDelta("\n\n" + delta.text)
            return TextDelta(delta.text)
        if kind == "input_json_delta":
            self.partial_json[index] = self.partial_json.get(index, "") + delta.partial_json
        elif kind == "thinking_delta":
            self.parts.setdefault((index, "thinking"), [block.get("thinking", "")]).append(delta.thinking)
            return ThinkingDelta(delta.thinking)
        elif kind == "signature_delta":
            block["signature"] = delta.signature
        elif kind == "citations_delta":
            citation = delta.citation
            citation = citation.model_dump(mode="json", exclude_unset=True) if hasattr(citation, "model_dump") else citation
            block.setdefault("citations", []).append(citation)
        return None

    def _text_before(self, index: int) -> bool:
        return any(
            i < index and b.get("type") == "text" and (b.get("text") or any(self.parts.get((i, "text"), ())))
            for i, b in self.blocks.items()
        )

    def stop_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None or block.get("type") not in _JSON_INPUT_BLOCKS:
            return
        raw = self.partial_json.get(index, "")
        if not raw.strip():
            block["input"] = {}
            return
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            # Keep the message valid for the API (input must be an object) and tell the loop.
            block["input"] = {INVALID_INPUT_KEY: f"{exc.msg} at position {exc.pos}"}
            return
        except RecursionError:  # hostile nesting: an input error, not a crash
            block["input"] = {INVALID_INPUT_KEY: "the input is nested too deeply"}
            return
        block["input"] = value if isinstance(value, dict) else {INVALID_INPUT_KEY: "input is not a JSON object"}

    def response(self) -> ModelResponse:
        for (index, key), pieces in self.parts.items():
            self.blocks[index][key] = "".join(pieces)
        self.parts.clear()
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        cut = False
        if self.stop_reason in ("max_tokens", "model_context_window_exceeded") and blocks and (
            blocks[-1].get("type") == "tool_use"
        ):
            # The limit fell inside a tool call: its input is a fragment the model never finished.
            # It is dropped, never run and never sent back with an invented input.
            blocks = blocks[:-1]
            cut = True
        if blocks and blocks[-1].get("type") == "thinking" and not blocks[-1].get("signature"):
            # Thinking cut before its signature arrived: the API would reject it when sent back.
            blocks = blocks[:-1]
        # Drop empty text blocks: the API rejects them when the history is sent back.
        blocks = [b for b in blocks if not (b.get("type") == "text" and not b.get("text") and not b.get("citations"))]
        message = assistant_message(blocks, usage=dict(self.usage))  # type: ignore[arg-type]
        return ModelResponse(message, self.stop_reason, dict(self.usage), cut_tool_use=cut,
                             stop_details=self.stop_details)


def check_client(timeout: float = 15.0) -> Any:
    """A client for /model's questions to the endpoint (Models API, probe): no retries, a short timeout."""
    import anthropic  # noqa: PLC0415

    options: dict[str, Any] = dict(client_options())
    return anthropic.AsyncAnthropic(max_retries=0, timeout=timeout, **options)


class AnthropicModel:
    """`call_model` for the real API. One client per process, created on first use."""

    def __init__(self, max_retries: int | None = None, timeout: float | None = None,
                 betas: list[str] | None = None):
        self.betas = list(betas or [])
        self.max_retries = max_retries if max_retries is not None else env_int("API_MAX_RETRIES", 4, minimum=0)
        self.timeout = timeout if timeout is not None else env_int("API_TIMEOUT_MS", 600_000, minimum=1) / 1000
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import anthropic  # noqa: PLC0415 - the SDK takes ~1 s to import; only now is it needed

            options: dict[str, Any] = dict(client_options())
            self._client = anthropic.AsyncAnthropic(max_retries=0, timeout=self.timeout, **options)
        return self._client

    def __call__(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._call(request)

    async def _call(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic

        attempt = 0
        status: int | None = None
        kind = ""
        while True:
            try:
                async for event in self._stream_once(request):
                    yield event
                return
            except anthropic.APIStatusError as exc:
                status = exc.status_code
                kind = getattr(exc, "type", None) or ""
                retryable = status in RETRYABLE_STATUS or (status == 200 and kind in RETRYABLE_STREAM_ERRORS)
                if exc.response is not None and exc.response.headers.get("x-should-retry") == "false":
                    retryable = False
                if not retryable or attempt >= self.max_retries:
                    raise ModelError(_status_message(exc), status=status, kind=kind) from None
                reason = _status_reason(status, kind)
                delay = _retry_after(exc)
            except anthropic.APIConnectionError as exc:
                reason, status, kind = _connection_reason(exc, anthropic.APITimeoutError), None, ""
                if attempt >= self.max_retries:
                    raise ModelError(
                        f"Could not reach the model API ({reason}) after {attempt + 1} attempts: {exc}. "
                        "Check ANTHROPIC_BASE_URL and your network."
                    ) from None
                delay = None
            except _StreamDropped as exc:
                # A reply cut mid-stream is asked for again; nothing of the cut attempt was run or kept.
                if attempt >= self.max_retries:
                    raise ModelError(f"{exc} (after {attempt + 1} attempts)") from None
                reason, status, kind = "stream dropped", None, ""
                delay = None
            except TypeError as exc:
                if "authentication" in str(exc).lower():
                    raise ModelError(
                        "No API credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)."
                    ) from None
                raise
            attempt += 1
            if delay is None:
                delay = min(MAX_DELAY, INITIAL_DELAY * 2 ** (attempt - 1)) * (1 - 0.25 * random.random())
            delay = max(0.0, min(delay, MAX_RETRY_AFTER))
            # The trace names the API's error type (one token); the notice says it in words.
            trace("api.retry", attempt=attempt, reason=kind or reason.replace(" ", "_"), delay=f"{delay:.2f}")
            yield Retrying(attempt, delay, reason, self.max_retries, status)
            await asyncio.sleep(delay)

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        system, tools, messages = _cache_marked(request)
        # `[1m]` is ours to read, never the API's: the bare id, with the context-1m beta when needed.
        model, model_betas = wire_model(request.model)
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        meta = request_metadata()
        kwargs["metadata"] = meta["metadata"]
        # One anthropic-beta header: --betas, ANTHROPIC_BETAS, the server tools' and thinking's own.
        named = meta.get("extra_headers", {}).get("anthropic-beta", "")
        betas = [*self.betas, *[b for b in named.split(",") if b], *betas_for(tools), *model_betas]
        if request.thinking:
            kwargs["thinking"] = request.thinking
        # What goes with thinking, as Claude Code sends it: thinking kept whole across turns while it is
        # on (context_management, which this SDK version does not name), and the betas.
        context_management, thinking_betas = request_extras(request.thinking, request.output_config)
        if context_management:
            kwargs["extra_body"] = {"context_management": context_management}
        betas += thinking_betas
        if betas:
            kwargs["extra_headers"] = {"anthropic-beta": ",".join(dict.fromkeys(betas))}
        if request.output_config:
            kwargs["output_config"] = request.output_config
        return kwargs

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic
        import httpx2

        acc = _Accumulator()
        stream = await self.client().messages.create(**self._kwargs(request))
        response = getattr(stream, "response", None)
        content_type = response.headers.get("content-type", "") if response is not None else ""
        if response is not None and "json" in content_type.lower():
            # A gateway answered the streaming request with one JSON body: a message is used as such.
            body = await response.aread()
            await stream.close()
            for event in _from_json_reply(body):
                yield event
            return
        try:
            async with stream:
                async for event in stream:
                    if request.raw_events:
                        yield RawStreamEvent(event.to_dict())
                    out = acc.feed(event)
                    if out is not None:
                        yield out
        except (httpx2.HTTPError, anthropic.APIConnectionError) as exc:
            if acc.started:
                # Half a message (maybe half a tool call) is not executed; the call is made again.
                raise _StreamDropped(
                    f"The connection to the model dropped mid-response ({type(exc).__name__}); "
                    "nothing from the partial reply was run."
                ) from None
            raise anthropic.APIConnectionError(request=getattr(exc, "request", None)) from exc  # type: ignore[arg-type]
        if not acc.started:
            raise _StreamDropped("The model stream ended before any message arrived.")
        if not acc.finished:
            # The body ended cleanly but the reply did not (no message_stop): a proxy or server gave up.
            raise _StreamDropped(
                "The connection to the model dropped mid-response (the stream ended before message_stop); "
                "nothing from the partial reply was run."
            )
        yield acc.response()


def _plain(value: Any) -> dict[str, Any] | None:
    """A dict from an SDK model or a dict (newer fields arrive as either), else None."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_unset=True)
    return value if isinstance(value, dict) else None


class _StreamDropped(Exception):
    pass


def _from_json_reply(body: bytes) -> list[ModelEvent]:
    """Events for a non-stream JSON reply: a valid message becomes the response (its text streamed at
    once); an error body or anything else is a clear ModelError."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("type") == "error":
        err: dict[str, Any] = data["error"] if isinstance(data.get("error"), dict) else {}
        raise ModelError(
            f"The model API returned an error: {err.get('type', 'error')}: {str(err.get('message', ''))[:300]}",
            kind=err.get("type"),
        )
    content = data.get("content") if isinstance(data, dict) else None
    if not (isinstance(data, dict) and data.get("type") == "message" and isinstance(content, list)
            and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)):
        preview = body[:200].decode("utf-8", "replace").replace("\n", " ")
        raise ModelError(
            "The model API answered a streaming request with JSON that is not a message "
            f"(check ANTHROPIC_BASE_URL): {preview}"
        )
    acc = _Accumulator()
    acc.started = acc.finished = True
    acc.stop_reason = data.get("stop_reason")
    acc.stop_details = _plain(data.get("stop_details"))
    acc.model = data.get("model")
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    acc.usage = {k: v for k, v in usage.items() if isinstance(v, int)}
    events: list[ModelEvent] = []
    for i, block in enumerate(content):
        acc.blocks[i] = dict(block)
        if block["type"] == "text" and block.get("text"):
            events.append(TextDelta(("\n\n" if acc._text_before(i) else "") + block["text"]))
    events.append(acc.response())
    return events


def _status_message(exc: Any) -> str:
    status = exc.status_code
    detail = getattr(exc, "api_message", None) or getattr(exc, "message", "") or ""
    detail = scrub(str(detail).splitlines()[0][:300]) if detail else ""
    if status == 401:
        return "Authentication failed (HTTP 401): check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN."
    if status == 403:
        return f"Permission denied (HTTP 403): {detail}"
    if status == 404:
        return f"Not found (HTTP 404): check the model name and ANTHROPIC_BASE_URL. {detail}".strip()
    if status == 200:
        return f"The model stream failed: {getattr(exc, 'type', '') or 'error'}: {detail}".strip()
    return f"Model API error (HTTP {status}): {detail}".strip()
