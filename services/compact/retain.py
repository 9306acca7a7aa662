"""Stage 3: retain the tail, the last resort when micro could not get under the threshold.

Re-estimates after stage 2: at or under the threshold it is a no-op ("what came before was enough, so
nothing more is dropped"). Still over and longer than `max_messages`: the outbound copy becomes

    first user message (the task; after a summary, the boundary and the summary)
    + one user text message `[N earlier messages omitted]`
    + the tail, starting at a user text message,

so no tool_result is ever orphaned. When there is no user text message to cut at (one long agentic
turn, react-agent-mini's bug B5), the tail starts at an assistant message whose tool round is complete
(every tool_result in the tail has its tool_use in the tail). History is never touched.
"""

from __future__ import annotations

from agent.messages import Message, is_user_text_message, message_text, tool_results, tool_uses, user_message
from agent.trace import trace
from services.compact.estimate import estimate_outbound_chars
from services.compact.options import CompactOptions
from services.compact.types import StageResult

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
    start = max(head, n - max(1, tail_budget))
    for i in range(start, n):
        if is_user_text_message(messages[i]):
            return i if i > head else None
    # One long agentic turn: cut at an assistant message whose tool round is complete.
    for i in range(start, n):
        if messages[i].get("role") == "assistant" and _tail_is_closed(messages, i):
            return i if i > head else None
    return None


def apply_retain_tail_if_needed(messages: list[Message], opts: CompactOptions) -> StageResult:
    estimated = estimate_outbound_chars(messages)
    if estimated <= opts.threshold or len(messages) <= opts.max_messages:
        return StageResult(messages)
    head = _head_length(messages)
    # The head and the marker count against max_messages.
    cut = find_cut(messages, head, opts.max_messages - head - (1 if head else 0))
    if cut is None:
        return StageResult(messages)
    dropped = cut - head
    kept_head = messages[:head]
    out = [*kept_head, omitted_marker(dropped), *messages[cut:]] if head else list(messages[cut:])
    trace(
        "compact.run stage=retain",
        droppedMessages=dropped,
        estimated=estimated,
        overThreshold=True,
        strategy="retain",
    )
    notice = ("omitted", f"{dropped} earlier messages omitted from this request (still over the threshold).")
    return StageResult(out, [], [notice])
