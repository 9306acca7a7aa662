"""Stage 2: microcompact. Clear old, re-obtainable tool results, with recorded, monotonic decisions.

react-agent-mini re-derived "every compactable result but the last N" on each call, so the cleared set
moved every turn and the request prefix (hence the provider's prompt cache) changed every turn. Here:

- A clearing decision is per tool_use id, recorded in `ContentReplacementState.cleared` (and the
  transcript through `StageResult.records`), and re-applied byte for byte on every later call, under the
  threshold too. A cleared result never comes back and its placeholder never changes.
- New clearing only starts when the estimate is over the threshold, and then clears oldest-first until
  the estimate is below the low-water mark (`micro_low_water_percent` of the threshold): one batch, then
  many turns of a stable prefix before the next one (hysteresis). It never declines to clear while
  over: stage 3 (which drops the user's messages) runs only after micro cleared all it could.
- Only results the model has already answered with in view are cleared (an assistant message follows).
- The `micro_keep_recent` most recent compactable results and results of `micro_min_chars` or less
  are never cleared; results of tools outside COMPACTABLE_TOOLS (and not `mcp__*`) are never cleared.

Blocks and messages that do not change are the same objects as in the input (the loop uses identity
to tell which results the model saw whole).
"""

from __future__ import annotations

from typing import Any, cast

from services.compact.estimate import estimate_outbound_chars, result_chars
from services.compact.options import CompactOptions
from services.compact.retain import valid_memo
from services.compact.state import ContentReplacementState
from services.compact.types import StageResult
from services.messages import Message, blocks_of, tool_use_index
from services.trace import trace

MICROCOMPACT_NOTE = "[Old tool result content cleared]"
COMPACTABLE_TOOLS = frozenset({"Read", "Write", "Edit", "Bash", "Grep", "Glob"})


def is_compactable_tool_name(name: str) -> bool:
    return name in COMPACTABLE_TOOLS or name.startswith("mcp__")


def placeholder_for(name: str, tool_input: dict[str, Any] | None) -> str:
    """`[Old tool result content cleared] tool=<Name> <file_path or path>`."""
    parts = [MICROCOMPACT_NOTE, f"tool={name}"]
    inp = tool_input if isinstance(tool_input, dict) else {}
    where = inp.get("file_path") or inp.get("path")
    if isinstance(where, str) and where:
        parts.append(where)
    return " ".join(parts)


def _cleared_block(block: dict[str, Any], text: str) -> dict[str, Any]:
    new = {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": text}
    if block.get("is_error"):
        new["is_error"] = True
    return new


def _replace(messages: list[Message], cleared: dict[str, str]) -> list[Message]:
    """Messages with every result whose id is in `cleared` replaced; untouched ones kept as-is."""
    out: list[Message] | None = None
    for i, m in enumerate(messages):
        if m.get("role") != "user":
            continue
        new_content: list[dict[str, Any]] | None = None
        for j, b in enumerate(blocks_of(m)):
            if b.get("type") != "tool_result":
                continue
            text = cleared.get(b["tool_use_id"])
            if text is None or b.get("content") == text:
                continue
            if new_content is None:
                new_content = list(blocks_of(m))
            new_content[j] = _cleared_block(b, text)
        if new_content is not None:
            if out is None:
                out = list(messages)
            out[i] = cast(Message, {**m, "content": new_content})
    return messages if out is None else out


def _visible_region(messages: list[Message], state: ContentReplacementState) -> list[Message]:
    memo = valid_memo(state, messages)
    if memo is None:
        return messages
    return [*(messages[k] for k in memo.keep), *messages[memo.cut :]]


def next_pass_at(state: ContentReplacementState, opts: CompactOptions) -> int:
    """The estimate over which a new clearing pass starts: the threshold, or, when the last pass could
    not reach the low-water mark (what is left is mostly not clearable: the model's and the user's words,
    recent results), a batch (threshold - low-water) past where it ended. Without this, such a session
    would clear a result or two on every call, each a prompt-cache miss; with it, a pass is many calls
    away (the order of loss is kept: the pipeline forces a pass before retain may cut). Only with the
    derived levels (`retain_units`): the older contract has retain acting at the threshold."""
    if not opts.retain_units or not state.micro_floor:
        return opts.threshold
    return max(opts.threshold, state.micro_floor + opts.threshold - opts.low_water)


def _eligible(
    region: list[Message], uses: dict[str, Any], state: ContentReplacementState, opts: CompactOptions
) -> list[tuple[str, str, int]]:
    """(id, placeholder, units saved) of every result a pass may clear, oldest first."""
    # Seen before cleared: a result is clearable only once the model has answered with it in view,
    # i.e. an assistant message follows it. A fresh batch too big to keep is stage 1's to spill.
    last_answer = max((i for i, m in enumerate(region) if m.get("role") == "assistant"), default=-1)
    refs: list[tuple[dict[str, Any], str]] = []  # (result block, tool name), compactable only, in order
    for m in region[: last_answer + 1]:
        if m.get("role") != "user":
            continue
        for b in m["content"]:
            if b.get("type") != "tool_result":
                continue
            use = uses.get(b["tool_use_id"])  # type: ignore[typeddict-item]
            if use is None or not is_compactable_tool_name(use["name"]):
                continue
            refs.append((b, use["name"]))  # type: ignore[arg-type]
    # The recent window: the `micro_keep_recent` newest compactable results, as far as they fit under
    # the threshold together (the newest one always stays whole). A bigger window would keep the
    # request over the threshold on every call, and the stages would never hand over.
    keep, kept_chars = 0, 0
    for block, _ in reversed(refs):
        if keep >= opts.micro_keep_recent:
            break
        size = result_chars(block["content"])
        if keep and kept_chars + size > opts.threshold:
            break
        keep += 1
        kept_chars += size
    candidates = refs[: len(refs) - keep] if keep else refs

    # What a pass can clear: uncleared, outside the recent window, big enough, placeholder shorter.
    eligible: list[tuple[str, str, int]] = []  # (id, placeholder, units saved)
    for block, name in candidates:
        tid = block["tool_use_id"]
        if tid in state.cleared:
            continue
        size = result_chars(block["content"])
        if size <= opts.micro_min_chars:
            continue
        text = placeholder_for(name, uses[tid].get("input"))
        if len(text) < size:
            eligible.append((tid, text, size - len(text)))
    return eligible


def microcompact_messages(
    messages: list[Message], state: ContentReplacementState, opts: CompactOptions, force: bool = False
) -> StageResult:
    """`force`: clear now whatever the floor says (the request would not fit otherwise)."""
    # Re-apply every recorded decision first (decisions are monotonic).
    current = _replace(messages, state.cleared) if state.cleared else messages
    # When stage 3 already omits a stretch of history (its recorded cut), only what is sent counts.
    region = _visible_region(current, state)
    estimated = estimate_outbound_chars(region)
    if estimated <= (opts.threshold if force else next_pass_at(state, opts)):
        return StageResult(current)

    low_water = opts.threshold * opts.micro_low_water_percent // 100
    uses = tool_use_index(current)
    eligible = _eligible(region, uses, state, opts)
    # The order of loss: whatever the totals, micro clears everything it can (down to the low-water
    # mark) before stage 3 may omit a single message. One pass clears oldest-first to the low-water
    # mark, so the next pass is many calls away (hysteresis: each pass is one prompt-cache rewrite).
    new: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    freed = 0
    remaining = estimated
    for tid, text, saved in eligible:
        if remaining < low_water:
            break
        new[tid] = text
        records.append(state.record("micro", tid, text))
        remaining -= saved
        freed += saved

    trace("compact.micro", replaced=len(new))
    trace("compact.run stage=micro", estimated=estimated, overThreshold=True, strategy="micro")
    if not new:
        return StageResult(current)
    if opts.retain_units:  # where this pass ended: the next one waits for a batch past it if over low-water
        floor = remaining if remaining >= low_water else 0
        if floor != state.micro_floor:
            records.append(state.record_micro_floor(floor))
    out = _replace(current, new)
    notice = (
        "cleared",
        f"Cleared {len(new)} old tool result{'s' if len(new) != 1 else ''} (~{freed:,} chars) "
        "from the request; re-run the tool to see one again.",
    )
    return StageResult(out, records, [notice])
