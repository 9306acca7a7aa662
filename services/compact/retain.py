"""Stage 3: retain the tail, the last resort when micro could not get under the threshold.

Re-estimates after stage 2: at or under the threshold it is a no-op ("what came before was enough, so
nothing more is dropped"). Still over and longer than `max_messages`: the outbound copy becomes

    first user message (the task; after a summary, the boundary and the summary)
    + one user text message `[N earlier messages omitted]`
    + the tail, starting at a user text message,

so no tool_result is ever orphaned. When there is no user text message to cut at (one long agentic
turn, react-agent-mini's bug B5), the tail starts at an assistant message whose tool round is complete
(every tool_result in the tail has its tool_use in the tail). The cut point moves in steps of half
the tail budget, so consecutive requests keep sharing their prefix; each move is a `decision` record
(stage `retain`), so a resumed session omits the same messages. History is never touched.
"""

from __future__ import annotations

from services.compact.estimate import estimate_outbound_chars
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState, RetainMemo
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


def _head_length(messages: list[Message]) -> int:
    """How many leading messages are the task that must be kept (0 when the first is not a user message)."""
    if not messages or messages[0].get("role") != "user":
        return 0
    if message_text(messages[0]) == COMPACT_BOUNDARY_TEXT and len(messages) > 1 and is_user_text_message(messages[1]):
        return 2
    return 1


def _tail_is_closed(messages: list[Message], start: int) -> bool:
    """Every tool_result from `start` on answers a tool_use from `start` on."""
    seen: set[str] = set()
    for m in messages[start:]:
        for u in tool_uses(m):
            seen.add(u["id"])
        for r in tool_results(m):
            if r["tool_use_id"] not in seen:
                return False
    return True


def find_cut(messages: list[Message], head: int, tail_budget: int) -> int | None:
    """Index where the kept tail starts, or None when no safe cut drops anything."""
    n = len(messages)
    budget = max(1, tail_budget)
    # The cut moves on a grid of half the budget, not one message per call: between moves the
    # outbound prefix (head, marker, tail start) stays byte-identical for the prompt cache.
    step = max(1, budget // 2)
    start = max(head, -(-(n - budget) // step) * step)
    for i in range(start, n):
        if is_user_text_message(messages[i]):
            return i if i > head else None
    # One long agentic turn: cut at an assistant message whose tool round is complete.
    for i in range(start, n):
        if messages[i].get("role") == "assistant" and _tail_is_closed(messages, i):
            return i if i > head else None
    return None


def _worth_it(dropped: list[Message], estimated: int, opts: CompactOptions) -> bool:
    """A cut changes the request's prefix (a prompt-cache miss for all of it), so it must buy room:
    get under the threshold, or free at least a batch (threshold minus the low-water mark). Dropping a
    few placeholders while one huge recent result keeps the request over would only lose history."""
    freed = estimate_outbound_chars(dropped)
    batch = opts.threshold - opts.threshold * opts.micro_low_water_percent // 100
    return estimated - freed <= opts.threshold or freed >= batch


def valid_memo(state: ContentReplacementState | None, messages: list[Message]) -> RetainMemo | None:
    """The recorded cut when it still applies to `messages` (same history, not replaced)."""
    memo = state.retain_memo if state is not None else None
    if memo is None or not messages or memo.cut > len(messages):
        return None
    if memo.first is None:  # rebuilt from the transcript: it applies to the history loaded with it
        memo.first = messages[0]
    elif messages[0] is not memo.first and messages[0] != memo.first:
        return None
    return memo


def apply_retain_tail_if_needed(
    messages: list[Message], opts: CompactOptions, state: ContentReplacementState | None = None
) -> StageResult:
    """`state` (the session's ContentReplacementState, optional) remembers the cut: once messages are
    omitted they stay omitted, and the cut only moves forward, on a grid, when still over."""
    memo = valid_memo(state, messages)
    estimated = estimate_outbound_chars(messages)
    if memo is None and (estimated <= opts.threshold or len(messages) <= opts.max_messages):
        return StageResult(messages)
    head = memo.head if memo is not None else _head_length(messages)
    budget = opts.max_messages - head - (1 if head else 0)
    cut = memo.cut if memo is not None else None
    if cut is not None:
        current = [*messages[:head], omitted_marker(cut - head), *messages[cut:]] if head else messages[cut:]
        estimated = estimate_outbound_chars(current)
        if estimated > opts.threshold and len(messages) - cut > budget:
            moved = find_cut(messages, max(head, cut), budget)
            if moved is not None and moved > cut and _worth_it(messages[cut:moved], estimated, opts):
                cut = moved
    else:
        cut = find_cut(messages, head, budget)
        if cut is None or not _worth_it(messages[head:cut], estimated, opts):
            return StageResult(messages)
    records = []
    if state is not None and (memo is None or memo.cut != cut or memo.head != head):
        records.append(state.record_retain(RetainMemo(cut, head, messages[0])))
    dropped = cut - head
    out = [*messages[:head], omitted_marker(dropped), *messages[cut:]] if head else list(messages[cut:])
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
