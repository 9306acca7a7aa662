"""Stage 0: LLM autocompact (summary write-back). Never triggers until its issue lands."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.messages import Message
from services.compact.options import CompactOptions


@dataclass
class AutocompactContext:
    system: str
    model: str
    call_model: Any
    options: CompactOptions
    # Per-session breaker state and anything else the stage keeps between calls.
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class AutocompactResult:
    messages: list[Message]
    records: list[dict[str, Any]] = field(default_factory=list)
    notices: list[tuple[str, str]] = field(default_factory=list)


async def autocompact(messages: list[Message], ctx: AutocompactContext) -> AutocompactResult | None:
    return None
