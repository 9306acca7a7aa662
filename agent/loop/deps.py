"""QueryDeps: everything the loop must not hard-wire. Tests pass their own; production is built here."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace

from services.compact.autocompact import AutocompactContext, AutocompactResult
from services.compact.autocompact import autocompact as default_autocompact
from services.compact.micro import microcompact_messages
from services.compact.pipeline import Microcompact
from services.messages import Message
from services.model_types import CallModel, ModelError, ModelEvent, ModelRequest, Retrying
from services.trace import trace

Autocompact = Callable[[list[Message], AutocompactContext], Awaitable[AutocompactResult | None]]


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class QueryDeps:
    call_model: CallModel
    microcompact: Microcompact = microcompact_messages
    autocompact: Autocompact = default_autocompact
    clock: Callable[[], float] = field(default=time.time)
    new_id: Callable[[], str] = field(default=_new_id)


def production_deps(*, mock: bool = False, max_retries: int | None = None, betas: list[str] | None = None,
                    fallback_models: list[str] | None = None) -> QueryDeps:
    """The real deps: the Anthropic streaming model, or the offline mock model."""
    if mock:
        from agent.model.mock import mock_call_model

        return QueryDeps(call_model=mock_call_model)
    from agent.model.anthropic import AnthropicModel

    call: CallModel = AnthropicModel(max_retries=max_retries, betas=betas)
    if fallback_models:
        call = with_fallback(call, fallback_models)
    return QueryDeps(call_model=call)


# An overloaded model after all retries: the next model of --fallback-model is tried for that call.
FALLBACK_KINDS = {"overloaded_error"}
FALLBACK_STATUS = {529}


def with_fallback(call: CallModel, fallbacks: list[str]) -> CallModel:
    """`call`, trying each fallback model in turn when the model stays overloaded (`--fallback-model`).
    The main model is tried first again on every call, as Claude Code does at each turn."""

    def fallback_call(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        async def gen() -> AsyncIterator[ModelEvent]:
            models = [request.model, *[m for m in fallbacks if m != request.model]]
            for i, model in enumerate(models):
                try:
                    async for event in call(replace(request, model=model)):
                        yield event
                    return
                except ModelError as exc:
                    overloaded = exc.status in FALLBACK_STATUS or exc.kind in FALLBACK_KINDS
                    if not overloaded or i == len(models) - 1:
                        raise
                    trace("api.fallback", model=models[i + 1], reason=exc.kind or exc.status)
                    yield Retrying(0, 0.0, f"{model} is overloaded; falling back to {models[i + 1]}")

        return gen()

    return fallback_call
