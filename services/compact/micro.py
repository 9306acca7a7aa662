"""Stage 2: microcompact (clear old re-obtainable results). Identity until its issue lands."""

from __future__ import annotations

from agent.messages import Message
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.compact.types import StageResult


def microcompact_messages(
    messages: list[Message], state: ContentReplacementState, opts: CompactOptions
) -> StageResult:
    return StageResult(messages)
