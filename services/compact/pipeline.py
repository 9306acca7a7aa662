"""The outbound pipeline: budget -> micro -> retain, outbound-only, run before every model call.

Stage 1 (budget) spills oversized results, stage 2 (micro) clears old re-obtainable results in recorded,
monotonic batches down to a low-water mark, stage 3 (retain) re-estimates and, when the request would
still not fit (after stage 0 summarised, or could not), omits the oldest messages behind the kept task. The history is never changed; `COMPACT=0` skips all three.
Stage 0 (autocompact, the LLM summary) runs before this, in the loop, and does rewrite the history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.compact.budget import apply_tool_result_budget
from services.compact.estimate import estimate_outbound_chars
from services.compact.micro import microcompact_messages, next_pass_at
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
    # The first result a clearing pass of this call cleared: the request marks the block before it.
    cache_anchors: tuple[str, ...] = ()


@dataclass
class _LastCall:
    """The previous call's work, so that a call whose history only grew reuses it (not persisted: a
    resumed session starts with a full pass, which must and does give the same bytes)."""

    history_len: int
    first: Message
    last: Message
    opts: CompactOptions
    env: PipelineEnv
    microcompact: Microcompact
    retain_memo: Any
    cleared: int
    out: list[Message]
    region_estimate: int  # what micro measures (the part stage 3 sends, before new clearing)
    out_estimate: int


def run_outbound_pipeline(
    history: list[Message],
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
    microcompact: Microcompact = microcompact_messages,
) -> PipelineResult:
    if not opts.enabled:
        return PipelineResult(history)
    quick = _incremental(history, state, opts, env, microcompact)
    if quick is not None:
        return quick
    out = PipelineResult(history)
    s1 = apply_tool_result_budget(history, state, opts, env)
    s2 = microcompact(s1.messages, state, opts)
    if microcompact is microcompact_messages and _over_retain(s2.messages, state, opts, env):
        # Micro waited for its next batch, but the request would not fit: it clears before retain may cut.
        more = microcompact_messages(s2.messages, state, opts, force=True)
        s2 = StageResult(more.messages, [*s2.records, *more.records], [*s2.notices, *more.notices])
    s3 = apply_retain_tail_if_needed(s2.messages, opts, state, rewritten=bool(s2.records), fixed=env.fixed_units)
    for stage in (s1, s2, s3):
        out.records.extend(stage.records)
        out.notices.extend(stage.notices)
    out.messages = s3.messages
    cleared_now = [r["id"] for r in s2.records if r.get("stage") == "micro" and isinstance(r.get("id"), str)]
    out.cache_anchors = tuple(cleared_now[:1])
    if history:
        memo = state.retain_memo
        region = [*(s2.messages[k] for k in memo.keep), *s2.messages[memo.cut :]] if memo else s2.messages
        state.last_call = _LastCall(
            len(history), history[0], history[-1], opts, env, microcompact, memo, len(state.cleared),
            list(out.messages),  # a copy: the outbound may be the history list itself, which grows
            estimate_outbound_chars(region), estimate_outbound_chars(out.messages),
        )
    return out


def _incremental(
    history: list[Message],
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
    microcompact: Microcompact,
) -> PipelineResult | None:
    """The steady call: the history only grew since the last call and nothing crosses a threshold.

    Then the stages would re-apply every decision to the old part and change nothing else, so the
    previous outbound copy is reused and only the new messages go through stage 1; the cost is that
    of the new messages, not of the whole history. Anything else (a compaction, a new decision on
    old messages, the threshold crossed) takes the full pass."""
    last = state.last_call
    if (
        last is None
        or last.opts is not opts
        or last.env is not env
        or last.microcompact is not microcompact
        or microcompact is not microcompact_messages
        or state.retain_memo is not last.retain_memo
        or len(state.cleared) != last.cleared
        or len(history) < last.history_len
        or not history
        or history[0] is not last.first
        or history[last.history_len - 1] is not last.last
    ):
        return None
    new = history[last.history_len :]
    if not new:
        return PipelineResult(list(last.out))
    # Stage 1 needs the tool names of the results' assistant message: it may be the last old one.
    context = [history[last.history_len - 1]] if history[last.history_len - 1].get("role") == "assistant" else []
    s1 = apply_tool_result_budget([*context, *new], state, opts, env)
    fresh = s1.messages[len(context) :]
    added = estimate_outbound_chars(fresh)
    if last.region_estimate + added > next_pass_at(state, opts) or last.out_estimate + added > _retain_at(opts, env):
        return None  # micro or retain would act: the full pass decides (stage 1's decisions are kept)
    out = [*last.out, *fresh]
    state.last_call = _LastCall(
        len(history), history[0], history[-1], opts, env, microcompact, last.retain_memo, len(state.cleared),
        out, last.region_estimate + added, last.out_estimate + added,
    )
    return PipelineResult(list(out), s1.records, s1.notices)


def _over_retain(messages: list[Message], state: ContentReplacementState, opts: CompactOptions, env: PipelineEnv) -> bool:
    if not opts.retain_units or not state.micro_floor:
        return False
    memo = state.retain_memo
    region = [*(messages[k] for k in memo.keep), *messages[memo.cut :]] if memo and memo.cut < len(messages) else messages
    return estimate_outbound_chars(region) > _retain_at(opts, env)


def _retain_at(opts: CompactOptions, env: PipelineEnv) -> int:
    """The messages' units over which stage 3 acts."""
    return max(1, opts.retain_units - env.fixed_units) if opts.retain_units else opts.threshold


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


def sent_whole_ids(outbound: list[Message], state: ContentReplacementState) -> set[str]:
    """tool_use ids whose tool_result reaches the model whole: sent, and neither spilled nor cleared.

    The loop's version of `visible_result_ids`: O(outbound), not O(history) (a long session's history
    is mostly omitted from the request, and this runs on every call)."""
    ids = set()
    for m in outbound:
        if m.get("role") == "user":
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    tid = b["tool_use_id"]  # type: ignore[typeddict-item]
                    if tid not in state.replacements and tid not in state.cleared:
                        ids.add(tid)
    return ids


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
