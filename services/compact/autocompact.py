"""Stage 0: LLM autocompact. Summarise the older part of the history with one model call and write it back.

When the whole request (system prompt, tools, messages: `request_tokens`) reaches the autocompact level
(`CompactOptions.autocompact_tokens`, derived from the window so the summary call fits), the messages before
the recent tail are summarised and the history becomes

    user `[compact boundary]`, user <summary message> (Claude Code's text, `cc_texts.summary_message_text`),
    the user's own messages verbatim (the task, and the most recent ones up to 20k tokens), the recent tail,
    the most recently read files re-read from disk and the todo list (`reattach.py`)

The summary request is the request the loop would send for the summarised part (the same system prompt,
tools and messages, so the prompt cache serves them), with Claude Code's compaction prompt appended as the
last user text. Its usage is added to the session's (`add_usage`) and recorded. The tail is aligned so it
never starts with an orphaned tool_result. A failing summary opens the breaker for the session with a notice
(retain then cuts when a request no longer fits); `/compact` resets it. After a summary the next one needs
`min_new_units` of new content (never twice in a row, never a loop), also after a resume.
The engine writes the new history to the transcript (HistoryReplacedEvent).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.compact.cc_texts import (
    CONTINUE_TEXT,
    SUMMARY_HEADER,
    TAIL_NOTE,
    TRANSCRIPT_TEMPLATE,
    compact_prompt,
    summary_message_text,
)
from services.compact.estimate import estimate_outbound_chars
from services.compact.options import SUMMARY_PROMPT_TOKENS, UNITS_PER_TOKEN, CompactOptions
from services.compact.pipeline import Microcompact, run_outbound_pipeline
from services.compact.reattach import file_attachments, todo_attachment
from services.compact.retain import COMPACT_BOUNDARY_TEXT, is_user_own
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.messages import Message, is_user_text_message, to_api, tool_results, tool_uses, user_message
from services.model_types import ModelRequest, ModelResponse, TextDelta
from services.models import max_output_tokens
from services.request_check import ensure_valid
from services.trace import trace

# The start of every summary message (tests and the economy bench recognise summaries by it).
SUMMARY_PREFIX = SUMMARY_HEADER
SUMMARY_SYSTEM = "You summarize conversations for context compaction. Reply with a concise summary only."
# One failure opens the breaker: the provider has already retried the call, and a summary that cannot be
# made would otherwise cost one failed call per turn.
MAX_AUTOCOMPACT_FAILURES = 1
DEFAULT_KEEP_RECENT = 4
USAGE_RECORD = "agent_usage"  # the sub-agents' usage record: resume adds it back to the session's totals


@dataclass
class AutocompactContext:
    system: str
    model: str
    call_model: Any
    options: CompactOptions
    # Per-session breaker state and anything else the stage keeps between calls.
    state: dict[str, Any] = field(default_factory=dict)
    keep_recent: int = DEFAULT_KEEP_RECENT
    # The request's tool schemas: the summary request sends the same ones (the same cached prefix).
    tools: list[dict[str, Any]] = field(default_factory=list)
    # The loop's pipeline state, so the summary request carries what the loop would send (None: as is).
    replacement_state: ContentReplacementState | None = None
    env: PipelineEnv | None = None
    microcompact: Microcompact | None = None
    # Re-attaching: the working directory, the real paths Read recorded (None: no files), the todo list.
    cwd: Path | None = None
    read_paths: Collection[str] | None = None
    todos: list[dict[str, Any]] | None = None
    transcript_path: str | None = None
    # Adds the summary call's usage to the session's totals: (usage, model).
    add_usage: Callable[[dict[str, Any], str], None] | None = None


@dataclass
class AutocompactResult:
    messages: list[Message]
    records: list[dict[str, Any]] = field(default_factory=list)
    notices: list[tuple[str, str]] = field(default_factory=list)
    before_tokens: int = 0
    after_tokens: int = 0
    before_percent: int = 0
    after_percent: int = 0
    # False: no new history (the summary failed); only the notices and records are news.
    replaced: bool = True
    usage: dict[str, Any] = field(default_factory=dict)
    summarised: int = 0  # how many earlier messages the summary replaced


class CompactError(Exception):
    pass


def token_count(messages: list[Message]) -> int:
    """The context size: the last real usage report plus an estimate of what came after it."""
    from services.tokens import token_count_with_estimation

    return int(token_count_with_estimation(messages))


def _has_usage(messages: list[Message]) -> bool:
    return any(m.get("role") == "assistant" and m.get("usage") for m in messages)


def request_tokens(messages: list[Message], ctx: AutocompactContext) -> int:
    """The next request's size in tokens. A usage report counts the system prompt and tools; without one
    (the first call, a resumed summary) they are added from their estimate."""
    fixed = (ctx.env.fixed_units if ctx.env is not None else 0) // UNITS_PER_TOKEN
    return token_count(messages) + (0 if _has_usage(messages) else fixed)


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


def summary_fit_units(opts: CompactOptions) -> int:
    """The whole summary request's messages may be this big: the window less its prompt and its reply."""
    room = opts.context_window_tokens - SUMMARY_PROMPT_TOKENS - opts.summary_max_tokens
    return max(1, room) * UNITS_PER_TOKEN


def _summary_messages(source: list[Message], ctx: AutocompactContext) -> list[dict[str, Any]]:
    """What the loop would send for `source` (its recorded decisions; a cut only if it would not fit),
    computed on a copy of the pipeline's state: nothing is recorded for a request that is never stored."""
    opts = dataclasses.replace(ctx.options, retain_units=summary_fit_units(ctx.options))
    state = ctx.replacement_state.preview_copy() if ctx.replacement_state is not None else ContentReplacementState()
    kwargs = {"microcompact": ctx.microcompact} if ctx.microcompact is not None else {}
    out = run_outbound_pipeline(source, state, opts, ctx.env or PipelineEnv(), **kwargs).messages
    return [dict(m) for m in to_api(out)]


def summary_request(source: list[Message], ctx: AutocompactContext, instructions: str | None = None) -> ModelRequest:
    """The summary call: the same system prompt, tools and messages, Claude Code's prompt appended."""
    msgs = _summary_messages(source, ctx)
    prompt = {"type": "text", "text": compact_prompt(instructions)}
    if msgs and msgs[-1].get("role") == "user":
        msgs[-1] = {**msgs[-1], "content": [*msgs[-1]["content"], prompt]}
    else:
        msgs.append({"role": "user", "content": [prompt]})
    system = ctx.system or SUMMARY_SYSTEM
    msgs = ensure_valid(msgs, system, ctx.tools)
    max_tokens = min(ctx.options.summary_max_tokens, max_output_tokens(ctx.model))  # some models write less
    return ModelRequest(msgs, system, list(ctx.tools), ctx.model, max_tokens)


async def summary_call(
    source: list[Message], ctx: AutocompactContext, instructions: str | None = None
) -> tuple[str, dict[str, Any]]:
    """(the summary's text, the call's usage). Raises CompactError on an empty summary."""
    final: ModelResponse | None = None
    deltas: list[str] = []
    async for event in ctx.call_model(summary_request(source, ctx, instructions)):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, ModelResponse):
            final = event
    # Once: the final message's text if there is one, else the streamed text (never both).
    if final is not None:
        text = "".join(b["text"] for b in final.message["content"] if b.get("type") == "text")  # type: ignore[typeddict-item]
        usage = dict(final.message.get("usage") or {})
    else:
        text, usage = "".join(deltas), {}
    if ctx.add_usage is not None and usage:
        ctx.add_usage(usage, ctx.model)
    if not text.strip():
        raise CompactError("the summary came back empty")
    return text.strip(), usage


async def summarize(messages: list[Message], ctx: AutocompactContext, instructions: str | None = None) -> str:
    return (await summary_call(messages, ctx, instructions))[0]


def tools_used(messages: list[Message]) -> list[str]:
    names: list[str] = []
    for m in messages:
        for u in tool_uses(m):
            if u["name"] not in names:
                names.append(u["name"])
    return names


def _split(messages: list[Message], keep: int) -> tuple[list[Message], list[Message]]:
    start = align_tail_start(messages, len(messages) - keep) if len(messages) > keep else 0
    source, tail = messages[:start], messages[start:]
    if not source:  # nothing older than the tail: summarise everything (a forced /compact)
        return messages, []
    return source, tail


def _marked_end(out: list[Message]) -> list[Message]:
    """The last message of a compaction's output carries `compact_end`: what follows it is new content."""
    last: dict[str, Any] = dict(out[-1])
    meta: dict[str, Any] = dict(last.get("meta") or {})
    meta["compact_end"] = True
    last["meta"] = meta
    return [*out[:-1], last]  # type: ignore[list-item]


async def compact_conversation(
    messages: list[Message], ctx: AutocompactContext, instructions: str | None = None
) -> AutocompactResult:
    """Summarise all but the aligned recent tail. Raises on failure; the input is never mutated."""
    source, tail = _split(messages, max(0, ctx.keep_recent))
    summary, usage = await summary_call(source, ctx, instructions)
    boundary = user_message(COMPACT_BOUNDARY_TEXT, meta={"compact_boundary": True})
    text = summary_message_text(summary, tools_used(source), ctx.transcript_path, bool(tail))
    summary_msg = user_message(text, meta={"compact_summary": True})
    extra = [*file_attachments(source, tail, ctx.options, ctx.cwd, ctx.read_paths), *todo_attachment(ctx.todos)]
    out = _marked_end([boundary, summary_msg, *kept_user_messages(source, user_budget_units(ctx.options)), *tail, *extra])
    window = ctx.options.context_window_tokens
    before = request_tokens(messages, ctx)
    fixed = (ctx.env.fixed_units if ctx.env is not None else 0) // UNITS_PER_TOKEN
    after = estimate_outbound_chars(out) // UNITS_PER_TOKEN + fixed
    result = AutocompactResult(out, before_tokens=before, after_tokens=after, before_percent=percent_of(before, window),
                               after_percent=percent_of(after, window), usage=usage, summarised=len(source))
    if usage:
        result.records.append({"type": USAGE_RECORD, "usage": usage, "requests": 1, "model": ctx.model, "source": "compact"})
    files = sum(1 for m in extra if (m.get("meta") or {}).get("post_compact") == "file")
    reattached = f"; re-attached {files} recently read file{'s' if files != 1 else ''}" if files else ""
    result.notices.append(
        ("summarised", f"Summarised {len(source)} earlier messages ({format_compact_feedback(result)}){reattached}.")
    )
    trace("compact.llm", summarized=len(source), kept=len(tail), summaryChars=len(summary), files=files,
          usage=usage)
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


def _is_boundary(m: Message) -> bool:
    return is_user_text_message(m) and m["content"][0].get("text") == COMPACT_BOUNDARY_TEXT


def _nothing_older_than_tail(messages: list[Message], keep: int) -> bool:
    """True when what precedes the recent tail is only a previous compaction's output (boundary,
    summary, the user's messages kept verbatim): summarising it again would gain nothing."""
    start = align_tail_start(messages, len(messages) - max(0, keep))
    if start == 0:
        return True
    head = messages[:start]
    if not _is_boundary(head[0]):
        return False
    return all((m.get("meta") or {}).get("compact_summary") or is_user_own(m) for m in head[1:])


def new_since_summary(messages: list[Message]) -> list[Message] | None:
    """The messages after the last compaction's output (`compact_end`), None when there was none."""
    for i in range(len(messages) - 1, -1, -1):
        meta = messages[i].get("meta") or {}
        if meta.get("compact_end"):
            return messages[i + 1 :]
        if _is_boundary(messages[i]):
            return messages[i + 1 :]  # a compaction written before `compact_end` existed
    return None


def format_compact_feedback(result: AutocompactResult) -> str:
    if result.before_percent == result.after_percent:  # react-agent-mini: no fake "change" when usage is the same
        return f"usage unchanged: ctx ~{result.after_percent}%"
    return f"ctx ~{result.before_percent}% -> ctx ~{result.after_percent}%"


def should_autocompact(messages: list[Message], ctx: AutocompactContext) -> bool:
    opts = ctx.options
    if not opts.enabled or not opts.autocompact or ctx.state.get("circuit_open") or len(messages) <= 2:
        return False
    if request_tokens(messages, ctx) < opts.autocompact_tokens:
        return False
    # Never twice in a row: after a summary, the next one needs new content of a minimum size.
    new = new_since_summary(messages)
    if new is not None and estimate_outbound_chars(new) < opts.min_new_units:
        trace("compact.auto_skip", reason="not enough new content since the last summary",
              new=estimate_outbound_chars(new), needed=opts.min_new_units)
        return False
    return not _nothing_older_than_tail(messages, ctx.keep_recent)


def _failed(messages: list[Message], ctx: AutocompactContext, exc: Exception) -> AutocompactResult:
    failures = int(ctx.state.get("consecutive_failures", 0)) + 1
    ctx.state["consecutive_failures"] = failures
    trace("compact.auto_fail", failures=failures, error=type(exc).__name__)
    result = AutocompactResult(messages, replaced=False)
    if failures >= MAX_AUTOCOMPACT_FAILURES:
        ctx.state["circuit_open"] = True
        result.notices.append(("compact_failed", (
            f"Summarising the conversation failed ({type(exc).__name__}: {str(exc)[:200]}); automatic summaries "
            "are off for this session. When a request no longer fits, the oldest messages will be dropped "
            "instead; /compact tries again.")))
    return result


async def autocompact(messages: list[Message], ctx: AutocompactContext) -> AutocompactResult | None:
    if not should_autocompact(messages, ctx):
        return None
    try:
        result = await compact_conversation(messages, ctx)
    except Exception as exc:  # the model call or an empty summary: the breaker opens, the history stays
        return _failed(messages, ctx, exc)
    ctx.state["consecutive_failures"] = 0
    trace("compact.auto", before=result.before_tokens, after=result.after_tokens)
    return result


async def compact_now(
    messages: list[Message], ctx: AutocompactContext, instructions: str | None = None
) -> AutocompactResult:
    """/compact: summarise now, whatever the level or AUTOCOMPACT say (COMPACT=0 still refuses). The same
    path as autocompact; success closes the breaker."""
    if not ctx.options.enabled:
        raise CompactError("compaction is disabled (COMPACT=0)")
    if not messages:
        raise CompactError("nothing to compact")
    result = await compact_conversation(messages, ctx, instructions)
    ctx.state["consecutive_failures"] = 0
    ctx.state["circuit_open"] = False
    return result


def summary_of(messages: list[Message]) -> str:
    """The summary a compaction wrote (PostCompact hooks get it): the summary message, its fixed header dropped."""
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for b in blocks:
            text = b.get("text") if isinstance(b, dict) else None
            if isinstance(text, str) and text.startswith(SUMMARY_HEADER):
                return _summary_body(text[len(SUMMARY_HEADER):])
    return ""


def _summary_body(text: str) -> str:
    """The summary message's body without the fixed texts around it (summary_message_text's parts)."""
    if text.startswith("<system-reminder>\n<tools-used-before-summary>"):
        text = text.split("</system-reminder>\n", 1)[-1]
    for tail in (TRANSCRIPT_TEMPLATE.split("{path}")[0], CONTINUE_TEXT, TAIL_NOTE):
        cut = text.find(tail)
        if cut >= 0:
            text = text[:cut]
    return text.strip()


def messages_after_boundary(messages: list[Message]) -> list[Message]:
    """The messages after the last compact boundary (all of them when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if _is_boundary(messages[i]):
            return messages[i + 1 :]
    return messages
