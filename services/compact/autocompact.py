"""Stage 0: LLM autocompact. Summarise older history with one model call and write it back.

When the context (`token_count_with_estimation`) reaches `autocompact_percent` of the context window,
the older messages are summarised by one model call without tools and the history becomes

    user `[compact boundary]`, user `Conversation summary (compacted):\\n<summary>`,
    the user's own messages verbatim (the task, and the most recent ones up to 20k tokens), recent tail

The tail is aligned so it never starts with an orphaned tool_result. The summary is taken once, from the
final message (joining the streamed deltas and the final text would repeat it). Three consecutive failures open a circuit breaker for the session (kept in `ctx.state`).
The engine writes the new history to the transcript (HistoryReplacedEvent).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from services.compact.estimate import estimate_outbound_chars
from services.compact.options import UNITS_PER_TOKEN, CompactOptions
from services.compact.retain import COMPACT_BOUNDARY_TEXT, is_user_own
from services.compact.state import message_key
from services.messages import (
    Message,
    is_user_text_message,
    result_text,
    tool_results,
    tool_uses,
    user_message,
)
from services.model_types import ModelRequest, ModelResponse, TextDelta
from services.trace import trace

SUMMARY_PREFIX = "Conversation summary (compacted):\n"
MAX_AUTOCOMPACT_FAILURES = 3
DEFAULT_KEEP_RECENT = 4
SUMMARY_MAX_TOKENS = 4096
SUMMARY_SYSTEM = "You summarize conversations for context compaction. Reply with a concise summary only."
SUMMARY_INSTRUCTION = (
    "Summarize the following conversation so a coding agent can continue the task. Keep the user's "
    "task and requirements, key decisions, file paths, errors, and open questions."
)
# Per-item caps of the transcript sent to the summariser (characters).
RESULT_PREVIEW_CHARS = 500
TEXT_CAP_CHARS = 8000
INPUT_CAP_CHARS = 300


@dataclass
class AutocompactContext:
    system: str
    model: str
    call_model: Any
    options: CompactOptions
    # Per-session breaker state and anything else the stage keeps between calls.
    state: dict[str, Any] = field(default_factory=dict)
    keep_recent: int = DEFAULT_KEEP_RECENT


@dataclass
class AutocompactResult:
    messages: list[Message]
    records: list[dict[str, Any]] = field(default_factory=list)
    notices: list[tuple[str, str]] = field(default_factory=list)
    before_tokens: int = 0
    after_tokens: int = 0
    before_percent: int = 0
    after_percent: int = 0


class CompactError(Exception):
    pass


def token_count(messages: list[Message]) -> int:
    """The last real usage report plus an estimate of what came after it."""
    from services.tokens import token_count_with_estimation

    return int(token_count_with_estimation(messages))


def percent_of(tokens: int, window: int) -> int:
    if window <= 0:
        return 100
    return max(0, min(100, round(tokens * 100 / window)))


def align_tail_start(messages: list[Message], start: int) -> int:
    """Move `start` back until the tail holds the tool_use of every tool_result in it."""
    start = max(0, min(start, len(messages)))
    while start > 0:
        ids = {u["id"] for m in messages[start:] for u in tool_uses(m)}
        orphan = any(r["tool_use_id"] not in ids for m in messages[start:] for r in tool_results(m))
        if not orphan:
            break
        start -= 1
    return start


def _fit(lines: list[str], budget: int) -> list[str]:
    """Keep the start (the task) and the most recent lines within `budget` characters."""
    if sum(len(x) + 1 for x in lines) <= budget:
        return lines
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget // 5:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > budget:
            break
        tail.append(line)
        used += len(line) + 1
    skipped = len(lines) - len(head) - len(tail)
    return [*head, f"[... {skipped} lines of the conversation not shown ...]", *reversed(tail)]


def _render(messages: list[Message], budget: int | None = None) -> str:
    lines = []
    for m in messages:
        role = m.get("role", "?")
        for b in m.get("content") or []:
            t = b.get("type")
            if t == "text":
                text = b["text"]  # type: ignore[typeddict-item]
                if len(text) > TEXT_CAP_CHARS:
                    text = text[:TEXT_CAP_CHARS] + "…"
                lines.append(f"{role}: {text}")
            elif t == "tool_use":
                inp = json.dumps(b.get("input"), ensure_ascii=False)
                if len(inp) > INPUT_CAP_CHARS:
                    inp = inp[:INPUT_CAP_CHARS] + "…"
                lines.append(f"{role}: [tool_use {b['name']}] {inp}")  # type: ignore[typeddict-item]
            elif t == "tool_result":
                text = result_text(b["content"])  # type: ignore[typeddict-item]
                more = "…" if len(text) > RESULT_PREVIEW_CHARS else ""
                err = " error" if b.get("is_error") else ""
                lines.append(f"{role}: [tool_result{err}] {text[:RESULT_PREVIEW_CHARS]}{more}")
            elif t == "image":
                lines.append(f"{role}: [image]")
    return "\n".join(_fit(lines, budget) if budget else lines)


def _render_budget(ctx: AutocompactContext) -> int:
    """Characters of conversation the summary request may carry: half the window, in chars."""
    return max(20_000, ctx.options.context_window_tokens * 4 // 2)


async def summarize(messages: list[Message], ctx: AutocompactContext, instructions: str | None = None) -> str:
    prompt = SUMMARY_INSTRUCTION
    if instructions:
        prompt += f"\nAdditional instructions: {instructions}"
    request = ModelRequest(
        messages=[{"role": "user", "content": [{"type": "text", "text": prompt + "\n\n" + _render(messages, _render_budget(ctx))}]}],
        system=ctx.system or SUMMARY_SYSTEM,
        tools=[],
        model=ctx.model,
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    final: ModelResponse | None = None
    deltas: list[str] = []
    async for event in ctx.call_model(request):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, ModelResponse):
            final = event
    # Once: the final message's text if there is one, else the streamed text (never both).
    if final is not None:
        text = "".join(b["text"] for b in final.message["content"] if b.get("type") == "text")  # type: ignore[typeddict-item]
    else:
        text = "".join(deltas)
    text = text.strip()
    if not text:
        raise CompactError("compact summary is empty")
    return text


async def compact_conversation(
    messages: list[Message], ctx: AutocompactContext, instructions: str | None = None
) -> AutocompactResult:
    """Summarise all but the aligned recent tail. Raises on failure; the input is never mutated."""
    keep = max(0, ctx.keep_recent)
    start = align_tail_start(messages, len(messages) - keep) if len(messages) > keep else 0
    source, tail = messages[:start], messages[start:]
    if not source:  # nothing older than the tail: summarise everything (a forced /compact)
        source, tail = messages, []
    summary = await summarize(source, ctx, instructions)
    boundary = user_message(COMPACT_BOUNDARY_TEXT, meta={"compact_boundary": True})
    summary_msg = user_message(SUMMARY_PREFIX + summary, meta={"compact_summary": True})
    out = [boundary, summary_msg, *kept_user_messages(source, user_budget_units(ctx.options)), *tail]
    window = ctx.options.context_window_tokens
    before = token_count(messages)
    from services.tokens import estimate_tokens

    after = estimate_tokens(out)
    result = AutocompactResult(
        out,
        before_tokens=before,
        after_tokens=after,
        before_percent=percent_of(before, window),
        after_percent=percent_of(after, window),
    )
    result.notices.append(
        (
            "summarised",
            f"Summarised {len(source)} earlier messages ({format_compact_feedback(result)}).",
        )
    )
    trace("compact.llm", summarized=len(source), kept=len(tail), summaryChars=len(summary))
    return result


# Codex keeps the most recent user messages verbatim through a compaction, up to 20k tokens; so do we
# (and a tenth of the window at most, for small windows), plus always the task.
USER_MESSAGES_MAX_TOKENS = 20_000


def user_budget_units(opts: CompactOptions) -> int:
    return min(USER_MESSAGES_MAX_TOKENS, opts.context_window_tokens // 10) * UNITS_PER_TOKEN


def kept_user_messages(source: list[Message], budget_units: int) -> list[Message]:
    """The user's own messages of `source` that a compaction keeps verbatim, in order: the task (the
    first one, always) and the most recent ones, newest first, while they fit in `budget_units`.
    Only the user's own words (by origin); injected context is the summary's to describe."""
    own = [m for m in source if is_user_own(m)]
    if not own:
        return []
    task, rest = own[0], own[1:]
    used = estimate_outbound_chars([task])
    recent: list[Message] = []
    for m in reversed(rest):
        size = estimate_outbound_chars([m])
        if used + size > budget_units:
            break
        recent.append(m)
        used += size
    return [task, *reversed(recent)]


def _nothing_older_than_tail(messages: list[Message], keep: int) -> bool:
    """True when what precedes the recent tail is only a previous compaction's output (boundary,
    summary, the user's messages kept verbatim): summarising it again would gain nothing."""
    start = align_tail_start(messages, len(messages) - max(0, keep))
    if start == 0:
        return True
    head = messages[:start]
    if not (is_user_text_message(head[0]) and head[0]["content"][0].get("text") == COMPACT_BOUNDARY_TEXT):
        return False
    return all((m.get("meta") or {}).get("compact_summary") or is_user_own(m) for m in head[1:])


def format_compact_feedback(result: AutocompactResult) -> str:
    if result.before_percent == result.after_percent:  # react-agent-mini: no fake "change" when usage is the same
        return f"usage unchanged: ctx ~{result.after_percent}%"
    return f"ctx ~{result.before_percent}% -> ctx ~{result.after_percent}%"


async def autocompact(messages: list[Message], ctx: AutocompactContext) -> AutocompactResult | None:
    opts = ctx.options
    if not opts.enabled or not opts.autocompact:
        return None
    failures = int(ctx.state.get("consecutive_failures", 0))
    if failures >= MAX_AUTOCOMPACT_FAILURES:
        return None
    used = token_count(messages)
    percent = used * 100 / max(1, opts.context_window_tokens)
    if percent < opts.autocompact_percent or len(messages) <= 2:
        return None
    # Never twice in a row without new content: the history is still the one the last compaction wrote.
    last = ctx.state.get("compacted_to")
    if last is not None and last == (len(messages), message_key(messages[-1])):
        trace("compact.auto_skip", reason="no new content since the last compaction")
        return None
    if _nothing_older_than_tail(messages, ctx.keep_recent):
        return None  # already summarised; what is left is the recent tail (retain handles the rest)
    try:
        result = await compact_conversation(messages, ctx)
    except Exception as exc:  # the model call or an empty summary: count it, keep the history
        failures += 1
        ctx.state["consecutive_failures"] = failures
        trace("compact.auto_fail", failures=failures, error=type(exc).__name__)
        if failures >= MAX_AUTOCOMPACT_FAILURES:
            ctx.state["circuit_open"] = True
        return None
    ctx.state["consecutive_failures"] = 0
    ctx.state["compacted_to"] = (len(result.messages), message_key(result.messages[-1]))
    trace("compact.auto", before=result.before_tokens, after=result.after_tokens)
    return result


async def compact_now(
    messages: list[Message], ctx: AutocompactContext, instructions: str | None = None
) -> AutocompactResult:
    """/compact: summarise now, whatever the threshold or AUTOCOMPACT say (COMPACT=0 still refuses)."""
    if not ctx.options.enabled:
        raise CompactError("compaction is disabled (COMPACT=0)")
    if not messages:
        raise CompactError("nothing to compact")
    result = await compact_conversation(messages, ctx, instructions)
    ctx.state["consecutive_failures"] = 0
    return result


def messages_after_boundary(messages: list[Message]) -> list[Message]:
    """The messages after the last compact boundary (all of them when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if is_user_text_message(m) and m["content"][0].get("text") == COMPACT_BOUNDARY_TEXT:
            return messages[i + 1 :]
    return messages

