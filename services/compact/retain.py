"""Stage 3: retain the tail, the last resort when micro could not get under the threshold.

Re-estimates after stage 2: at or under the threshold it is a no-op ("what came before was enough, so
nothing more is dropped"). Still over and longer than `max_messages`: the outbound copy becomes

    the head: after a compaction its boundary and summary; the task, i.e. the user's own first message
    (by origin: injected @resource/hook/skill context before it is not the task and may be omitted)
    + one user text message `[N earlier messages omitted]`
    + the tail, starting at a user text message or at an assistant message whose tail orphans nothing,

so no tool_result is ever orphaned. The cut point moves in steps of half the tail budget, so
consecutive requests keep sharing their prefix; each move is a `decision` record (stage `retain`)
keyed by the anchor message's identity, so a resumed session omits the same messages, and a cut made
on another history (any compaction) is never applied. History is never touched.
"""

from __future__ import annotations

from services.compact.estimate import estimate_outbound_chars
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState, RetainMemo, message_key
from services.compact.types import StageResult
from services.messages import (
    Message,
    is_user_text_message,
    message_text,
    tool_results,
    tool_uses,
    user_message,
)
from services.trace import trace

OMITTED_TEMPLATE = "[{n} earlier messages omitted]"
COMPACT_BOUNDARY_TEXT = "[compact boundary]"


def omitted_marker(n: int) -> Message:
    return user_message(OMITTED_TEMPLATE.format(n=n), meta={"omitted": n})


def is_boundary(message: Message) -> bool:
    return is_user_text_message(message) and message_text(message) == COMPACT_BOUNDARY_TEXT


def is_user_own(message: Message) -> bool:
    """The user's own words (a prompt they typed), by origin, not position: the engine marks them
    `meta.origin = "user"`; injected context (hook output, @resource expansions, skills, MCP prompts,
    notes, markers, summaries) always carries another meta key. A user text message without any meta
    is a prompt from a caller that predates the origin mark."""
    if not is_user_text_message(message):
        return False
    meta = message.get("meta")
    if meta:
        return meta.get("origin") == "user"
    return not is_boundary(message)


def head_indices(messages: list[Message]) -> tuple[int, ...]:
    """The history messages retain always sends: the boundary and summary of a compaction, and the
    task, the user's own first message (wherever injected context put it)."""
    keep: list[int] = []
    if messages and is_boundary(messages[0]):
        keep.append(0)
        if len(messages) > 1 and (messages[1].get("meta") or {}).get("compact_summary"):
            keep.append(1)
    for i in range(len(keep), len(messages)):
        if is_user_own(messages[i]):
            keep.append(i)
            break
        if i > len(keep) + 64:  # the task is near the start; never scan a long history for it
            break
    return tuple(keep)


def closed_from(messages: list[Message]) -> list[bool]:
    """closed[i]: every tool_result in messages[i:] answers a tool_use in messages[i:] (a tail that
    starts at i orphans nothing). One backward pass."""
    n = len(messages)
    closed = [False] * n
    need: set[str] = set()
    for i in range(n - 1, -1, -1):
        m = messages[i]
        for r in tool_results(m):
            need.add(r["tool_use_id"])
        for u in tool_uses(m):
            need.discard(u["id"])
        closed[i] = not need
    return closed


def find_cut(messages: list[Message], after: int, tail_budget: int) -> int | None:
    """Index where the kept tail starts (> `after`), or None when no safe cut drops anything.

    The cut moves on a grid of half the tail budget, not one message per call: between moves the
    outbound prefix stays byte-identical for the prompt cache. It lands on the first safe message at or
    past the grid point: a user text message when one is within a step, else any message whose tail
    orphans nothing. (Snapping to the next user text message wherever it is dropped the whole
    conversation when a new prompt followed one long agentic turn.)"""
    n = len(messages)
    budget = max(1, tail_budget)
    step = max(1, budget // 2)
    start = max(after + 1, -(-(n - budget) // step) * step)
    if start >= n:
        return None
    for i in range(start, min(n, start + step)):
        if is_user_text_message(messages[i]):
            return i
    closed = closed_from(messages[start:])
    for k, ok in enumerate(closed):
        if ok and (messages[start + k].get("role") == "assistant" or is_user_text_message(messages[start + k])):
            return start + k
    return None


def _worth_it(dropped: list[Message], estimated: int, opts: CompactOptions) -> bool:
    """A cut changes the request's prefix (a prompt-cache miss for all of it), so it must buy room:
    get under the threshold, or free at least a batch (threshold minus the low-water mark). Dropping a
    few placeholders while one huge recent result keeps the request over would only lose history."""
    freed = estimate_outbound_chars(dropped)
    batch = opts.threshold - opts.threshold * opts.micro_low_water_percent // 100
    return estimated - freed <= opts.threshold or freed >= batch


def valid_memo(state: ContentReplacementState | None, messages: list[Message]) -> RetainMemo | None:
    """The recorded cut when it still applies to `messages`: the anchor message is still at the cut."""
    memo = state.retain_memo if state is not None else None
    if memo is None or memo.cut >= len(messages) or any(k >= memo.cut for k in memo.keep):
        return None
    if memo.anchor is not None and message_key(messages[memo.cut]) != memo.anchor:
        return None
    return memo


def _dropped(messages: list[Message], keep: tuple[int, ...], cut: int) -> list[Message]:
    kept = set(keep)
    return [m for i, m in enumerate(messages[:cut]) if i not in kept]


def _assemble(messages: list[Message], keep: tuple[int, ...], cut: int) -> list[Message]:
    n = cut - len(keep)
    return [*(messages[k] for k in keep), omitted_marker(n), *messages[cut:]]


def apply_retain_tail_if_needed(
    messages: list[Message], opts: CompactOptions, state: ContentReplacementState | None = None
) -> StageResult:
    """`state` (the session's ContentReplacementState, optional) remembers the cut: once messages are
    omitted they stay omitted, and the cut only moves forward, on a grid, when still over."""
    memo = valid_memo(state, messages)
    if state is not None and state.retain_memo is not None and memo is None:
        state.retain_memo = None  # made on another history (a compaction, a rewind): void for good
    estimated = estimate_outbound_chars(messages)
    if memo is None and (estimated <= opts.threshold or len(messages) <= opts.max_messages):
        return StageResult(messages)
    keep = memo.keep if memo is not None else head_indices(messages)
    after = max(keep) if keep else -1
    budget = opts.max_messages - len(keep) - 1
    if memo is not None:
        cut = memo.cut
        current = _assemble(messages, keep, cut)
        estimated = estimate_outbound_chars(current)
        if estimated > opts.threshold and len(messages) - cut > budget:
            moved = find_cut(messages, max(after, cut), budget)
            if moved is not None and moved > cut and _worth_it(messages[cut:moved], estimated, opts):
                cut = moved
    else:
        found = find_cut(messages, after, budget)
        if found is None or not _worth_it(_dropped(messages, keep, found), estimated, opts):
            return StageResult(messages)
        cut = found
    records = []
    if state is not None and (memo is None or memo.cut != cut):
        records.append(state.record_retain(RetainMemo(cut, keep, message_key(messages[cut]))))
    out = _assemble(messages, keep, cut)
    dropped = cut - len(keep)
    notices = []
    if memo is None or memo.cut != cut:
        trace(
            "compact.run stage=retain",
            droppedMessages=dropped,
            estimated=estimated,
            overThreshold=True,
            strategy="retain",
        )
        notices.append(("omitted", f"{dropped} earlier messages omitted from this request (still over the threshold)."))
    return StageResult(out, records, notices)
