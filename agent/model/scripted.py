"""Test doubles for `call_model`: a model is a function of the messages.

`FunctionModel(fn)` calls `fn(request)` for each call. `ScriptedModel(steps)` plays a fixed script
and is strict: an extra call fails, and `assert_done()` fails on unconsumed steps. Both record every
request. They are importable outside tests because the benchmarks replay sessions with them.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

from services.messages import Block, assistant_message, text_block, tool_use_block
from services.model_types import ModelError, ModelEvent, ModelRequest, ModelResponse, TextDelta

_ids = itertools.count(1)


def tool_call(name: str, input: dict[str, Any], id: str | None = None) -> Block:
    return tool_use_block(id or f"toolu_{next(_ids):06d}", name, input)


def reply(*parts: str | Block, usage: dict[str, int] | None = None) -> ModelResponse:
    """An assistant reply from text strings and tool_use blocks."""
    blocks: list[Block] = [text_block(p) if isinstance(p, str) else p for p in parts]
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return ModelResponse(assistant_message(blocks, usage=usage or {}), stop, usage or {})


Step = ModelResponse | Exception | Callable[[ModelRequest], "ModelResponse | Exception"]


async def _emit(response: ModelResponse, delay: float = 0.0) -> AsyncIterator[ModelEvent]:
    for block in response.message["content"]:
        if block.get("type") == "text":
            text = block["text"]  # type: ignore[typeddict-item]
            for i in range(0, len(text), 16):
                if delay:
                    await asyncio.sleep(delay)
                yield TextDelta(text[i : i + 16])
    yield response


class FunctionModel:
    def __init__(self, fn: Callable[[ModelRequest], ModelResponse], delay: float = 0.0):
        self.fn = fn
        self.delay = delay
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        return _emit(self.fn(request), self.delay)


class ScriptedModel:
    def __init__(self, steps: list[Step], delay: float = 0.0):
        self.steps = list(steps)
        self.delay = delay
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError(f"ScriptedModel: unexpected call #{len(self.requests)} (script exhausted)")
        step = self.steps.pop(0)
        if callable(step) and not isinstance(step, ModelResponse):
            step = step(request)
        if isinstance(step, Exception):
            return _raise(step)
        return _emit(step, self.delay)

    def assert_done(self) -> None:
        if self.steps:
            raise AssertionError(f"ScriptedModel: {len(self.steps)} scripted step(s) never called")


async def _raise(exc: Exception) -> AsyncIterator[ModelEvent]:
    if isinstance(exc, ModelError | Exception):
        raise exc
    yield  # pragma: no cover
