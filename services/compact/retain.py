"""Stage 3: retain the tail when still over the threshold. Identity until its issue lands."""

from __future__ import annotations

from agent.messages import Message
from services.compact.options import CompactOptions
from services.compact.types import StageResult


def apply_retain_tail_if_needed(messages: list[Message], opts: CompactOptions) -> StageResult:
    return StageResult(messages)
