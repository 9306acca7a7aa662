"""Stage 3: retain the tail, the last resort when a request would not fit the context window.

With the derived levels (`CompactOptions.derive`) it acts only over the retain level (the window less the
room for the reply, system prompt and tools included): after micro cleared what it could and autocompact
summarised, or could not (the summary failed, the breaker is open, AUTOCOMPACT=0, one huge turn). Every
cut is announced (a notice) and traced. Options built by hand without `retain_units` keep the older
contract: it acts over `threshold`. Re-estimates after stage 2: under the level it is a no-op. Over it
(whatever the message count): the outbound copy becomes

    the head: after a compaction its boundary and summary; the task, i.e. the user's own first message
    (by origin: injected @resource/hook/skill context before it is not the task and may be omitted);
    the user's own messages of the omitted stretch, verbatim (newest first, ~20k tokens)
    + one user text message `[N earlier messages omitted]`
    + the tail, starting at a user text message or at an assistant message whose tail orphans nothing,

so no tool_result is ever orphaned. A cut goes down to the low-water mark (hysteresis: the next cut
is many calls away, and consecutive requests keep sharing their prefix); so does a cut in a call where
micro rewrote the prefix but could not reach the mark (one cache miss instead of one per call). Each
move is a `decision` record (stage `retain`) keyed by the anchor message's identity, so a resumed session omits the same messages, and a cut made
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
    """The user's own words (a prompt they typed), by origin, not position: the engine stores them
    without meta, while injected context (hook output, @resource expansions, skills, MCP prompts,
    interruption notes, markers, summaries) always carries a meta key naming its origin. An explicit
    `meta.origin = "user"` counts as the user's too."""
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


# The user's own messages inside the omitted stretch are kept too (newest first, within this many units,
# ~20k tokens, as Codex keeps recent user messages through a compaction): the diary goes last.
KEEP_USER_UNITS = 80_000


def user_keep_budget(opts: CompactOptions) -> int:
    """Units of the user's own messages a cut keeps: ~20k tokens, at most a quarter of the mark the cut
    aims under (it aims there with them)."""
    return min(KEEP_USER_UNITS, cut_target(opts) // 4)


def cut_target(opts: CompactOptions, fixed: int = 0) -> int:
    """Where a cut aims (messages' units): the low-water mark of the level retain acts at."""
    if opts.retain_units:
        return max(1, opts.retain_low_water - fixed)
    return opts.low_water


def with_user_messages(
    messages: list[Message], base: tuple[int, ...], cut: int, budget: int = KEEP_USER_UNITS
) -> tuple[int, ...]:
    """`base` plus the user's own messages between the head and `cut`, newest first within budget."""
    after = max(base) if base else -1
    used = 0
    extra = []
    for i in range(cut - 1, after, -1):
        if is_user_own(messages[i]):
            size = estimate_outbound_chars([messages[i]])
            if used + size > budget:
                break
            used += size
            extra.append(i)
    return tuple(sorted((*base, *extra)))


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


def find_cut(
    messages: list[Message], keep: tuple[int, ...], lower: int, opts: CompactOptions, fixed: int = 0
) -> int | None:
    """Where the kept tail starts: the first safe index >= `lower` after which head + marker + tail
    fit under the low-water mark (so the next cut is many calls away: each cut is a prompt-cache
    miss), else the last safe index. Never inside a tool round (the tail orphans no tool_result);
    the user's own messages it passes are kept in the head (`with_user_messages`).
    None when no safe index drops anything."""
    n = len(messages)
    after = max(keep) if keep else -1
    lower = max(lower, after + 2)  # a tail starting at after + 1 would omit nothing
    # The newest message stays (the request must end with it); the user's own messages before the cut
    # are kept verbatim by `with_user_messages`, so a cut may pass them.
    last_prompt = n - 1
    if lower > last_prompt:
        return None
    closed = closed_from(messages[lower:])
    sizes = [estimate_outbound_chars([m]) for m in messages[lower:]]
    suffix = 0
    suffixes = [0] * len(sizes)
    for k in range(len(sizes) - 1, -1, -1):
        suffix += sizes[k]
        suffixes[k] = suffix
    head = estimate_outbound_chars([messages[k] for k in keep]) + len(OMITTED_TEMPLATE) + 8
    target = cut_target(opts, fixed) - user_keep_budget(opts)
    best = None
    for k in range(0, last_prompt - lower + 1):
        m = messages[lower + k]
        if not closed[k] or not (m.get("role") == "assistant" or is_user_text_message(m)):
            continue
        best = lower + k
        if head + suffixes[k] <= target:
            break
    return best


def _worth_it(dropped: list[Message], estimated: int, opts: CompactOptions, limit: int) -> bool:
    """A cut changes the request's prefix (a prompt-cache miss for all of it), so it must buy room:
    get under the threshold, or free at least a batch (threshold minus the low-water mark). Dropping a
    few placeholders while one huge recent result keeps the request over would only lose history."""
    freed = estimate_outbound_chars(dropped)
    level = opts.retain_limit
    batch = level - opts.retain_low_water if opts.retain_units else level - opts.low_water
    return estimated - freed <= limit or freed >= batch


def valid_memo(state: ContentReplacementState | None, messages: list[Message]) -> RetainMemo | None:
    """The recorded cut when it still applies to `messages`: the anchor message is still at the cut."""
    memo = state.retain_memo if state is not None else None
    if memo is None or not 1 <= memo.cut < len(messages) or any(k >= memo.cut for k in memo.keep):
        return None
    # A memo read back from a transcript may name any cut: it must not split a call from its result.
    if _has_block(messages[memo.cut], "tool_result") or any(
            _has_block(messages[k], "tool_use") or _has_block(messages[k], "tool_result") for k in memo.keep):
        return None
    if memo.anchor is not None and message_key(messages[memo.cut]) != memo.anchor:
        return None
    return memo


def _has_block(message: Message, kind: str) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == kind for b in content)


def _base(keep: tuple[int, ...], messages: list[Message]) -> tuple[int, ...]:
    """The head part of a recorded keep (boundary, summary, task), without the kept user messages."""
    head = head_indices(messages)
    return tuple(k for k in keep if k in head)


def _dropped(messages: list[Message], keep: tuple[int, ...], cut: int) -> list[Message]:
    kept = set(keep)
    return [m for i, m in enumerate(messages[:cut]) if i not in kept]


def _assemble(messages: list[Message], keep: tuple[int, ...], cut: int) -> list[Message]:
    n = cut - len(keep)
    return [*(messages[k] for k in keep), omitted_marker(n), *messages[cut:]]


def apply_retain_tail_if_needed(
    messages: list[Message],
    opts: CompactOptions,
    state: ContentReplacementState | None = None,
    rewritten: bool = False,
    fixed: int = 0,
) -> StageResult:
    """`state` (the session's ContentReplacementState, optional) remembers the cut: once messages are
    omitted they stay omitted, and the cut only moves forward, when the request is over again.

    `rewritten`: micro changed the prefix in this call (a cache miss already). If it could not get
    down to the low-water mark, retain cuts to it now, in the same miss, instead of leaving the
    request just under the threshold where every next call would clear a little (a miss each).
    With the derived levels (`opts.retain_units`) retain acts only when the request (messages + `fixed`,
    the system prompt and tools) would not fit: the model's words are summarised (stage 0) before that,
    never dropped for micro's sake, so `rewritten` changes nothing then."""
    if opts.retain_units:
        limit = max(1, opts.retain_units - fixed)
    else:
        limit = opts.low_water if rewritten else opts.threshold
    memo = valid_memo(state, messages)
    if state is not None and state.retain_memo is not None and memo is None:
        state.retain_memo = None  # made on another history (a compaction, a rewind): void for good
    if memo is None:
        estimated = estimate_outbound_chars(messages)
        if estimated <= limit:
            return StageResult(messages)
        keep = head_indices(messages)
        lower = 0
    else:
        keep = memo.keep
        estimated = estimate_outbound_chars(_assemble(messages, keep, memo.cut))
        lower = memo.cut + 1
    # No message-count cap (react-agent-mini's max_messages): the cut is sized by the estimate alone.
    if memo is None or estimated > limit:
        found = find_cut(messages, keep, lower, opts, fixed)
        if memo is not None and (found is None or not _worth_it(messages[memo.cut : found], estimated, opts, limit)):
            found = None
        elif memo is None and (found is None or not _worth_it(_dropped(messages, keep, found), estimated, opts, limit)):
            return StageResult(messages)
    else:
        found = None
    cut = found if found is not None else memo.cut  # type: ignore[union-attr]
    if memo is None and cut - len(with_user_messages(messages, keep, cut, user_keep_budget(opts))) <= 0:
        return StageResult(messages)  # everything before the cut would be kept anyway
    if memo is None or memo.cut != cut:
        keep = with_user_messages(
            messages, head_indices(messages) if memo is None else _base(memo.keep, messages), cut, user_keep_budget(opts)
        )
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
            limit=limit,
            overThreshold=True,
            strategy="retain",
        )
        notices.append(("omitted", f"{dropped} earlier messages omitted from this request: it would not fit the "
                                   "context window otherwise (no summary available)."))
    return StageResult(out, records, notices)
