"""QueryDeps: everything the loop must not hard-wire. Tests pass their own; production is built here."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from services.compact.autocompact import AutocompactContext, AutocompactResult
from services.compact.autocompact import autocompact as default_autocompact
from services.compact.micro import microcompact_messages
from services.compact.pipeline import Microcompact
from services.messages import Message
from services.model_types import CallModel

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


def production_deps(*, mock: bool = False, max_retries: int | None = None) -> QueryDeps:
    """The real deps: the Anthropic streaming model, or the offline mock model."""
    if mock:
        from agent.model.mock import mock_call_model

        return QueryDeps(call_model=mock_call_model)
    from agent.model.anthropic import AnthropicModel

    return QueryDeps(call_model=AnthropicModel(max_retries=max_retries))
