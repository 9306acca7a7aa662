"""The outbound pipeline: budget -> micro -> retain, outbound-only, run before every model call.

Stage 1 (budget) spills oversized results, stage 2 (micro) clears old re-obtainable results in recorded,
monotonic batches down to a low-water mark, stage 3 (retain) re-estimates and, still over, omits the
oldest messages behind the kept task. The history is never changed; `COMPACT=0` skips all three.
Stage 0 (autocompact, the LLM summary) runs before this, in the loop, and does rewrite the history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.compact.budget import apply_tool_result_budget
from services.compact.micro import microcompact_messages
from services.compact.options import CompactOptions
from services.compact.retain import apply_retain_tail_if_needed
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv, StageResult
from services.messages import Message

Microcompact = Callable[[list[Message], ContentReplacementState, CompactOptions], StageResult]


@dataclass
class PipelineResult:
    messages: list[Message]
    records: list[dict[str, Any]] = field(default_factory=list)
    notices: list[tuple[str, str]] = field(default_factory=list)


def run_outbound_pipeline(
    history: list[Message],
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
    microcompact: Microcompact = microcompact_messages,
) -> PipelineResult:
    if not opts.enabled:
        return PipelineResult(history)
    out = PipelineResult(history)
    s1 = apply_tool_result_budget(history, state, opts, env)
    s2 = microcompact(s1.messages, state, opts)
    s3 = apply_retain_tail_if_needed(s2.messages, opts, state)
    for stage in (s1, s2, s3):
        out.records.extend(stage.records)
        out.notices.extend(stage.notices)
    out.messages = s3.messages
    return out


def compact_messages(
    history: list[Message],
    opts: CompactOptions | None = None,
    state: ContentReplacementState | None = None,
    env: PipelineEnv | None = None,
) -> list[Message]:
    """The three stages with default deps, for tests."""
    return run_outbound_pipeline(
        history, state or ContentReplacementState(), opts or CompactOptions(), env or PipelineEnv()
    ).messages


def visible_result_ids(history: list[Message], outbound: list[Message]) -> set[str]:
    """tool_use ids whose tool_result reaches the model unchanged (same block object as in history).

    Stages copy what they change, so identity tells "sent in full" from "replaced or dropped".
    """
    originals = {}
    for m in history:
        if m.get("role") == "user":
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    originals[id(b)] = b["tool_use_id"]  # type: ignore[typeddict-item]
    visible = set()
    for m in outbound:
        if m.get("role") == "user":
            for b in m["content"]:
                if b.get("type") == "tool_result" and id(b) in originals:
                    visible.add(originals[id(b)])
    return visible
