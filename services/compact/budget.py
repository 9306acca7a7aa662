"""Stage 1: the tool-result budget. Large results are relocated to disk, never cut.

Every call, for each user message carrying tool_results:
- ids in `state.replacements` are re-applied from the map, byte for byte, no I/O;
- ids in `state.seen` without a replacement are frozen: sent whole forever (replacing them later
  would change a prefix the model already saw and break the prompt cache);
- fresh ids are decided now: spilled when over their tool's threshold, then the largest fresh ones
  (never one under 5000 chars) while the message's total still exceeds the per-message budget.
  Each decision becomes a transcript record; an id is marked seen only after its file write succeeded
  (a failed write keeps the content whole and freezes the id).
Only changed messages and blocks are copied: unchanged blocks stay the same objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv, StageResult
from services.messages import Message, has_image, result_text
from services.request_check import empty_result_marker as empty_marker
from services.request_check import is_blank_content
from services.tokens import text_units
from services.tool_result_storage import build_replacement, format_size, is_persisted, write_spill
from services.trace import trace

# Never spill a result smaller than this for the per-message budget: the pointer would cost more than it
# frees. (A quarter of the per-message budget when that is smaller: with a small window the floor
# would otherwise exempt every result and a fresh batch could not be brought under the budget.)
MIN_AGGREGATE_SPILL_CHARS = 5000
STAGE = "budget"


def result_threshold(tool_name: str, opts: CompactOptions, env: PipelineEnv) -> float:
    """min(the tool's declared max_result_chars, the global cap); unknown tools get the global cap."""
    declared = env.max_result_chars.get(tool_name)
    if declared is None:
        return opts.max_tool_result_chars
    if declared == math.inf:
        return math.inf
    return min(declared, opts.max_tool_result_chars)


def mark_empty_results(assistant: Message, results: Message) -> Message:
    """`results` with every empty or whitespace-only tool_result given `(<Tool> completed with no
    output)`. Runs in every mode (COMPACT=0 too): an empty result at the prompt's tail can end the
    model's turn, whatever the pipeline does."""
    content = results.get("content")
    if not isinstance(content, list) or not any(
        b.get("type") == "tool_result" and is_blank_content(b.get("content")) for b in content
    ):
        return results
    names: dict[str, str] = {}
    _note_names(assistant, names)
    blocks = [
        {**b, "content": empty_marker(names.get(b["tool_use_id"], "Tool"))}  # type: ignore[typeddict-item]
        if b.get("type") == "tool_result" and is_blank_content(b.get("content"))
        else b
        for b in content
    ]
    return {**results, "content": blocks}  # type: ignore[typeddict-item]


class _Fresh:
    __slots__ = ("index", "tid", "name", "text", "size", "limit", "spilled", "sent")

    def __init__(self, index: int, tid: str, name: str, text: str, limit: float):
        self.index, self.tid, self.name, self.text, self.limit = index, tid, name, text, limit
        self.size = text_units(text)  # units: a CJK result weighs what it costs in tokens
        self.spilled: str | None = None
        self.sent = self.size


def apply_tool_result_budget(
    messages: list[Message], state: ContentReplacementState, opts: CompactOptions, env: PipelineEnv
) -> StageResult:
    names: dict[str, str] = {}
    out: list[Message] | None = None
    result = StageResult(messages)
    counts = _counts()
    over = False
    for mi, m in enumerate(messages):
        if m.get("role") == "assistant":
            _note_names(m, names)
            continue
        new_m, total = _budget_message(m, names, state, opts, env, result, counts)
        over = over or total > opts.max_turn_tool_result_chars
        if new_m is not m:
            if out is None:
                out = list(messages)
            out[mi] = new_m
    if counts["spilled"] or counts["reapplied"] or over:
        trace(f"compact.run stage={STAGE}", **counts)
    if out is not None:
        result.messages = out
    return result


def decide_new_results(
    assistant: Message,
    results: Message,
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
) -> StageResult:
    """Stage 1's decisions for one fresh tool-results message, taken as it arrives.

    The loop calls this before the message enters the history and the transcript, so both hold the
    replacement, not the spilled original (a resumed session never reloads megabytes the model will
    not see again). The pipeline's stage 1 then finds these ids decided and re-applies them; it would
    take the same decisions itself, since they depend only on this message and the state.
    """
    names: dict[str, str] = {}
    _note_names(assistant, names)
    result = StageResult([results])
    counts = _counts()
    new_m, total = _budget_message(results, names, state, opts, env, result, counts)
    if counts["spilled"] or total > opts.max_turn_tool_result_chars:
        trace(f"compact.run stage={STAGE}", **counts)
    result.messages = [new_m]
    return result


def _counts() -> dict[str, int]:
    return {"spilled": 0, "reapplied": 0, "frozen": 0, "total_before": 0, "total_after": 0}


def _note_names(m: Message, names: dict[str, str]) -> None:
    content = m.get("content")
    if isinstance(content, list):
        for b in content:
            if b.get("type") == "tool_use":
                names[b["id"]] = b["name"]  # type: ignore[typeddict-item]


@dataclass
class _BlockBudget:
    """One tool_result's share of stage 1: its size before and as sent, its replacement, or a fresh candidate."""

    before: int = 0
    sent: int = 0
    replaced: Any = None
    fresh: _Fresh | None = None


def _budget_block(
    bi: int, b: Any, names: dict[str, str], state: ContentReplacementState, opts: CompactOptions,
    env: PipelineEnv, counts: dict[str, int],
) -> _BlockBudget:
    tid = b["tool_use_id"]
    c = b["content"]
    rep = state.replacements.get(tid)
    if rep is not None:
        counts["reapplied"] += 1
        replaced = {**b, "content": rep} if c is not rep and c != rep else None
        return _BlockBudget(text_units(c if isinstance(c, str) else result_text(c)), text_units(rep), replaced)
    if is_blank_content(c):
        marker = empty_marker(names.get(tid, "Tool"))
        return _BlockBudget(0, len(marker), {**b, "content": marker})  # ASCII
    if not isinstance(c, str) and has_image(c):  # image-bearing results are never spilled; measured by their text
        size = text_units(result_text(c))
        return _BlockBudget(size, size)
    text = c if isinstance(c, str) else result_text(c)
    size = text_units(text)
    if tid in state.seen:
        counts["frozen"] += 1
        return _BlockBudget(size, size)
    if is_persisted(text):
        return _BlockBudget(size, size)
    name = names.get(tid, "")
    # A self-bounded tool (Read) is never spilled for its own size, but it is a candidate for the
    # per-message budget: a parallel batch of big Reads the model has not seen cannot be cleared
    # (seen before cleared), so spilling is the only way that turn fits.
    return _BlockBudget(size, size, fresh=_Fresh(bi, tid, name, text, result_threshold(name, opts, env)))


def _budget_message(
    m: Message,
    names: dict[str, str],
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
    result: StageResult,
    counts: dict[str, int],
) -> tuple[Message, int]:
    """One user message through stage 1: (the message, copied only if changed; what it sends)."""
    content = m.get("content")
    if not isinstance(content, list):
        return m, 0
    new_blocks: dict[int, Any] = {}
    fresh: list[_Fresh] = []
    total = 0  # what this message sends, as decided so far (fresh at full size)
    before = 0
    for bi, b in enumerate(content):
        if b.get("type") != "tool_result":
            continue
        block = _budget_block(bi, b, names, state, opts, env, counts)
        before += block.before
        total += block.sent
        if block.replaced is not None:
            new_blocks[bi] = block.replaced
        if block.fresh is not None:
            fresh.append(block.fresh)
    counts["total_before"] += before

    if fresh and env.spill_dir is not None:
        total = _decide(fresh, total, state, opts, env, result.records, result.notices, counts)
        for f in fresh:
            if f.spilled is not None:
                new_blocks[f.index] = {**content[f.index], "content": f.spilled}
    counts["total_after"] += total
    if not new_blocks:
        return m, total
    blocks = list(content)
    for bi, nb in new_blocks.items():
        blocks[bi] = nb
    return {**m, "content": blocks}, total


def _decide(
    fresh: list[_Fresh],
    total: int,
    state: ContentReplacementState,
    opts: CompactOptions,
    env: PipelineEnv,
    records: list[dict[str, Any]],
    notices: list[tuple[str, str]],
    counts: dict[str, int],
) -> int:
    failed: set[str] = set()

    def spill(f: _Fresh) -> bool:
        nonlocal total
        try:
            path, nbytes = write_spill(Path(env.spill_dir), f.tid, f.text)  # type: ignore[arg-type]
        except OSError as exc:
            failed.add(f.tid)
            notices.append(
                ("warning", f"Could not save the output of {f.name or 'a tool'} to disk ({exc.strerror or exc}); sent whole")
            )
            trace("compact.spill_failed", id=f.tid, tool=f.name, error=str(exc))
            return False
        rep = build_replacement(path, nbytes, f.text, env.previewers.get(f.name))
        f.spilled = rep
        f.sent = text_units(rep)
        total += f.sent - f.size
        records.append(state.record(STAGE, f.tid, rep))
        counts["spilled"] += 1
        size = format_size(nbytes)
        notices.append(("spill", f"Output of {f.name or 'tool'} ({size}) saved to {path}"))
        trace("compact.spill", id=f.tid, tool=f.name, size=nbytes, path=str(path))
        return True

    # Per result: over the tool's own threshold.
    for f in fresh:
        if f.size > f.limit:
            spill(f)
    # Per message: the largest remaining fresh results until the total fits.
    if total > opts.max_turn_tool_result_chars:
        pool = sorted(
            (
                f
                for f in fresh
                if f.spilled is None
                and f.tid not in failed
                and f.size >= min(MIN_AGGREGATE_SPILL_CHARS, opts.max_turn_tool_result_chars // 4)
            ),
            key=lambda f: f.size,
            reverse=True,
        )
        for f in pool:
            if total <= opts.max_turn_tool_result_chars:
                break
            spill(f)
        if total > opts.max_turn_tool_result_chars:
            trace(
                "compact.budget_over",
                total=total,
                limit=opts.max_turn_tool_result_chars,
                reason="exempt, small or failed results remain",
            )
    # Everything fresh that was not replaced is frozen from now on.
    for f in fresh:
        if f.spilled is None:
            records.append(state.record(STAGE, f.tid, None))
    return total
