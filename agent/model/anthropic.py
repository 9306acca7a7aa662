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
import random
from collections.abc import AsyncIterator
from typing import Any

from services.config import env_int
from services.messages import INVALID_INPUT_KEY, assistant_message
from services.model_types import (
    ModelError,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    RawStreamEvent,
    Retrying,
    TextDelta,
)
from services.trace import trace

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}
INITIAL_DELAY = 0.5
MAX_DELAY = 8.0
# The SDK obeys any retry-after (up to days); a user at a terminal should never wait that long.
MAX_RETRY_AFTER = 60.0


def _cache_marked(request: ModelRequest) -> tuple[list[dict], list[dict], list[dict]]:
    """System, tools and messages with prompt-cache breakpoints: the tools/system prefix, and one
    moving breakpoint on the last message. Copies only what it marks."""
    system = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}] if request.system else []
    tools = list(request.tools)
    if tools:
        tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
    messages = list(request.messages)
    if messages:
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, list) and content:
            block = content[-1]
            if block.get("type") in ("text", "tool_result", "image", "tool_use") and not (
                block.get("type") == "text" and not block.get("text")
            ):
                new_content = list(content[:-1]) + [{**block, "cache_control": {"type": "ephemeral"}}]
                messages[-1] = {**last, "content": new_content}
    return system, tools, messages


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


def _usage(raw: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if raw is None:
        return out
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(raw, key, None)
        if isinstance(value, int):
            out[key] = value
    return out


class _Accumulator:
    """Builds the assistant message from raw stream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, str] = {}
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.started = False
        self.finished = False

    def start_block(self, index: int, block: Any) -> None:
        data = block.model_dump(mode="json", exclude_none=True)
        if data.get("type") == "tool_use":
            data = {"type": "tool_use", "id": data["id"], "name": data["name"], "input": {}}
            self.partial_json[index] = ""
        elif data.get("type") == "text":
            data = {"type": "text", "text": data.get("text", "")}
        self.blocks[index] = data

    def delta(self, index: int, delta: Any) -> str | None:
        block = self.blocks.get(index)
        if block is None:
            return None
        kind = getattr(delta, "type", "")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.text
            return delta.text
        if kind == "input_json_delta":
            self.partial_json[index] = self.partial_json.get(index, "") + delta.partial_json
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
        elif kind == "signature_delta":
            block["signature"] = delta.signature
        return None

    def stop_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if block is None or block.get("type") != "tool_use":
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
        except RecursionError:  # hostile nesting (issue 21): an input error, not a crash
            block["input"] = {INVALID_INPUT_KEY: "the input is nested too deeply"}
            return
        block["input"] = value if isinstance(value, dict) else {INVALID_INPUT_KEY: "input is not a JSON object"}

    def message(self) -> dict[str, Any]:
        blocks = [self.blocks[i] for i in sorted(self.blocks)]
        # Drop empty text blocks: the API rejects them when the history is sent back.
        blocks = [b for b in blocks if not (b.get("type") == "text" and not b.get("text"))]
        return assistant_message(blocks, usage=dict(self.usage))  # type: ignore[arg-type]


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

            headers = {"anthropic-beta": ",".join(self.betas)} if self.betas else None
            self._client = anthropic.AsyncAnthropic(max_retries=0, timeout=self.timeout, default_headers=headers)
        return self._client

    def __call__(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._call(request)

    async def _call(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic

        attempt = 0
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
                reason = kind or f"HTTP {status}"
                delay = _retry_after(exc)
            except anthropic.APIConnectionError as exc:
                if isinstance(exc, anthropic.APITimeoutError):
                    reason = "timeout"
                else:
                    reason = "connection error"
                if attempt >= self.max_retries:
                    raise ModelError(
                        f"Could not reach the model API ({reason}) after {attempt + 1} attempts: {exc}. "
                        "Check ANTHROPIC_BASE_URL and your network."
                    ) from None
                delay = None
            except _StreamDropped as exc:
                raise ModelError(str(exc)) from None
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
            trace("api.retry", attempt=attempt, reason=reason, delay=f"{delay:.2f}")
            yield Retrying(attempt, delay, reason)
            await asyncio.sleep(delay)

    async def _stream_once(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic
        import httpx2

        system, tools, messages = _cache_marked(request)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        acc = _Accumulator()
        stream = await self.client().messages.create(**kwargs)
        try:
            async with stream:
                async for event in stream:
                    kind = event.type
                    if request.raw_events:
                        yield RawStreamEvent(event.to_dict())
                    if kind == "message_start":
                        acc.started = True
                        acc.usage.update(_usage(event.message.usage))
                    elif kind == "content_block_start":
                        acc.start_block(event.index, event.content_block)
                    elif kind == "content_block_delta":
                        text = acc.delta(event.index, event.delta)
                        if text:
                            yield TextDelta(text)
                    elif kind == "content_block_stop":
                        acc.stop_block(event.index)
                    elif kind == "message_delta":
                        acc.stop_reason = event.delta.stop_reason
                        acc.usage.update(_usage(event.usage))
                    elif kind == "message_stop":
                        acc.finished = True
        except (httpx2.HTTPError, anthropic.APIConnectionError) as exc:
            if acc.started:
                # Half a message (maybe half a tool call) is not executed; the turn ends clearly.
                raise _StreamDropped(
                    f"The connection to the model dropped mid-response ({type(exc).__name__}); "
                    "nothing from the partial reply was run. Try again."
                ) from None
            raise anthropic.APIConnectionError(request=getattr(exc, "request", None)) from exc  # type: ignore[arg-type]
        if not acc.started:
            raise _StreamDropped("The model stream ended before any message arrived.")
        if not acc.finished:
            # The body ended cleanly but the reply did not (no message_stop): a proxy or server gave up.
            raise _StreamDropped(
                "The connection to the model dropped mid-response (the stream ended before message_stop); "
                "nothing from the partial reply was run. Try again."
            )
        message = acc.message()
        yield ModelResponse(message, acc.stop_reason, dict(acc.usage))


class _StreamDropped(Exception):
    pass


def _status_message(exc: Any) -> str:
    status = exc.status_code
    detail = getattr(exc, "api_message", None) or getattr(exc, "message", "") or ""
    detail = str(detail).splitlines()[0][:300] if detail else ""
    if status == 401:
        return "Authentication failed (HTTP 401): check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN."
    if status == 403:
        return f"Permission denied (HTTP 403): {detail}"
    if status == 404:
        return f"Not found (HTTP 404): check the model name and ANTHROPIC_BASE_URL. {detail}".strip()
    if status == 200:
        return f"The model stream failed: {getattr(exc, 'type', '') or 'error'}: {detail}".strip()
    return f"Model API error (HTTP {status}): {detail}".strip()
