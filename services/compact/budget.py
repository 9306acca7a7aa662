"""Stage 1: the tool-result budget (spill to disk). Identity until the budget issue lands."""

from __future__ import annotations

from agent.messages import Message
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv, StageResult


def apply_tool_result_budget(
    messages: list[Message], state: ContentReplacementState, opts: CompactOptions, env: PipelineEnv
) -> StageResult:
    return StageResult(messages)
