"""The ReAct loop: call the model, run the tools it asks for, repeat until it answers without tools.

`query(params, deps)` is an async generator of events; it ends with a `Terminal`. It never writes the
caller's history: the engine applies the assistant / tool-result events it yields. Before every model
call the history passes through stage 0 (autocompact) and the outbound pipeline (budget, micro, retain).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.loop.compact_context import build_autocompact_context, pipeline_env
from agent.loop.deps import QueryDeps
from services.compact.autocompact import (
    AutocompactContext,
    AutocompactResult,
    compact_now,
    should_autocompact,
    summary_of,
)
from services.compact.budget import decide_new_results, mark_empty_results
from services.compact.options import CompactOptions
from services.compact.pipeline import run_outbound_pipeline, sent_whole_ids
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.events import (
    AssistantEvent,
    Event,
    HistoryReplacedEvent,
    NoticeEvent,
    RecordEvent,
    RetryEvent,
    StreamEvent,
    Terminal,
    TerminalReason,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolResultsEvent,
    UserMessageEvent,
)
from services.hooks import NO_HOOKS, Hooks
from services.loop_guard import LoopGuard, LoopGuardOptions
from services.messages import (
    Message,
    ToolUseBlock,
    assistant_message,
    message_text,
    sanitize_assistant,
    text_block,
    to_api,
    tool_uses,
    user_message,
)
from services.model_types import (
    ModelError,
    ModelRequest,
    ModelResponse,
    RawStreamEvent,
    Retrying,
    TextDelta,
    ThinkingDelta,
)
from services.models import default_max_tokens, max_output_tokens
from services.request_check import ensure_valid
from services.scrub import scrub
from services.server_tools import replaced_client_tools, server_tool_specs
from services.thinking import ThinkingOptions, thinking_request
from services.trace import trace
from tools.base import Tool, ToolContext
from tools.orchestration import BatchOutcome, ToolRunner
from tools.permissions import PermissionGate
from tools.tool_search import plan_request

INTERRUPTED_NOTE = "[Request interrupted by user]"


@dataclass
class QueryParams:
    messages: list[Message]
    system: str
    tools: list[Tool]
    tool_context: ToolContext
    model: str
    max_tokens: int = 0  # 0: the model's default (services/models.default_max_tokens)
    max_output_tokens: int = 0  # CLAUDE_CODE_MAX_OUTPUT_TOKENS: used when max_tokens is 0, capped per model
    max_turns: int = 100
    gate: PermissionGate = field(default_factory=PermissionGate)
    hooks: Hooks = NO_HOOKS
    compact: CompactOptions = field(default_factory=CompactOptions)
    replacement_state: ContentReplacementState = field(default_factory=ContentReplacementState)
    autocompact_state: dict = field(default_factory=dict)
    thinking: ThinkingOptions | None = None
    server_tools: list[str] = field(default_factory=list)  # names from services/server_tools.py
    # Called before every model call: may change `tools` in place (MCP servers that became ready append
    # theirs at the end) and returns notices [(kind, text)] to show. None: the tool list is fixed.
    refresh_tools: Callable[[], list[tuple[str, str]]] | None = None
    loop_guard: LoopGuardOptions = field(default_factory=LoopGuardOptions)


class _Aborted(Exception):
    pass


_END = object()


class _ModelStream:
    """Consumes a provider's stream in one task of its own, so that an abort cancels it cleanly
    (the SDK's context managers are entered and exited in the same task)."""

    def __init__(self, stream: AsyncIterator, abort: asyncio.Event):
        self.queue: asyncio.Queue = asyncio.Queue()
        self.abort = abort
        self.task = asyncio.ensure_future(self._pump(stream))

    async def _pump(self, stream: AsyncIterator) -> None:
        try:
            async for event in stream:
                await self.queue.put(event)
            await self.queue.put(_END)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # delivered to the loop, which decides
            await self.queue.put(exc)

    async def next(self):
        getter = asyncio.ensure_future(self.queue.get())
        waiter = asyncio.ensure_future(self.abort.wait())
        try:
            done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if getter not in done:
            getter.cancel()
            await self.close()
            raise _Aborted
        item = getter.result()
        if item is _END:
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item

    async def close(self) -> None:
        if not self.task.done():
            self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def _autocompact_context(params: QueryParams, deps: QueryDeps, tool_specs: list[dict[str, Any]],
                         env: PipelineEnv) -> AutocompactContext:
    return build_autocompact_context(
        params.system, params.model, deps.call_model, params.compact, params.autocompact_state, tool_specs,
        params.replacement_state, env, deps.microcompact, params.tool_context,
    )


@dataclass
class Exchange:
    """One turn of the loop, filled in by its steps in order: the request, the reply, the tool round.

    A step that ends the task sets `terminal` (the driver yields it); one that wants the next turn
    without the later steps sets `next_turn` (a paused reply, a Stop hook's feedback)."""

    turn: int
    max_tokens: int  # raised once when the output limit fell inside a tool call
    escalated: bool = False
    compacted_for_window: bool = False
    request_max: int = 0  # the max_tokens the last request was sent with
    streamed: list[str] = field(default_factory=list)  # text streamed since the last retry
    response: ModelResponse | None = None
    assistant: Message | None = None
    uses: list[ToolUseBlock] = field(default_factory=list)
    outcome: BatchOutcome | None = None
    looping: str = ""  # the loop guard's stop message: the turn ends once the results are kept
    terminal: Terminal | None = None
    next_turn: bool = False


Step = Callable[[Exchange], AsyncIterator[Event]]


async def query(params: QueryParams, deps: QueryDeps) -> AsyncIterator[Event]:
    """The ReAct loop: each turn runs the steps below until one of them ends the task."""
    loop = _Loop(params, deps)
    steps: list[Step] = [loop.begin_turn, loop.compact_history, loop.call_model, loop.handle_stop,
                         loop.run_tools, loop.guard_repeats, loop.after_batch, loop.record_turn]
    while True:
        x = loop.new_exchange()
        for step in steps:
            async for ev in step(x):
                yield ev
            if x.terminal is not None:
                yield x.terminal
                return
            if x.next_turn:
                break


class _Loop:
    """The loop's state across turns (the history as sent, the tools, a paused reply) and its steps."""

    def __init__(self, params: QueryParams, deps: QueryDeps) -> None:
        self.params, self.deps = params, deps
        self.messages = list(params.messages)
        self.ctx = params.tool_context
        # Server tools (web_search / web_fetch run by the API) replace their client-side counterparts.
        self.replaced = replaced_client_tools(params.server_tools)
        self.tool_ids: list[int] = []
        self.tool_specs: list[dict[str, Any]] = []  # as sent: deferred tools by name only
        self.all_specs: list[dict[str, Any]] = []
        self.env = pipeline_env(params.tools, self.ctx, params.system, [])
        self.runner = ToolRunner({}, self.ctx, params.gate, params.hooks)
        self._tools_changed()
        self.stop_hook_active = False
        self.paused: Message | None = None  # a pause_turn reply waiting for its continuation
        self.repeats = LoopGuard(params.loop_guard)  # one per query: a turn's calls
        self.turn = 0

    def _tools_changed(self) -> None:
        params = self.params
        self.tool_ids = [id(t) for t in params.tools]
        self.all_specs = ([t.to_api() for t in params.tools if t.name not in self.replaced]
                          + server_tool_specs(params.server_tools))
        self._offer(self.all_specs)
        self.runner.tools = {t.name: t for t in params.tools}

    def _offer(self, specs: list[dict[str, Any]]) -> None:
        self.tool_specs = specs
        self.env = pipeline_env(self.params.tools, self.ctx, self.params.system, specs)

    def _plan_tools(self) -> list[Message]:
        """Deferred MCP tools (tools/tool_search.py): the announcement the history needs, and the
        request's tools (whole ones, ToolSearch and the loaded deferred ones)."""
        params = self.params
        news, specs = plan_request(params.tools, self.all_specs, self.messages, self.ctx,
                                   params.compact.context_window_tokens)
        self.messages.extend(news)
        if specs != self.tool_specs:
            self._offer(specs)
        return news

    def new_exchange(self) -> Exchange:
        self.turn += 1
        params = self.params
        return Exchange(self.turn, params.max_tokens or default_max_tokens(params.model, params.max_output_tokens))

    async def begin_turn(self, x: Exchange) -> AsyncIterator[Event]:
        """Past max_turns the task ends (a paused reply is stored first)."""
        if x.turn <= self.params.max_turns:
            trace("query.turn_start", turn=x.turn)
            return
        x.turn -= 1
        for ev in _flush(self.paused):
            yield ev
        trace("query.turn_end", reason="max_turns", turn=x.turn)
        x.terminal = Terminal("max_turns", x.turn)

    def _end(self, x: Exchange, terminal: Terminal) -> list[Event]:
        """End the task: a paused reply still waiting is stored first, not lost."""
        x.terminal = terminal
        return _flush(self.paused)

    async def compact_history(self, x: Exchange) -> AsyncIterator[Event]:
        """Stage 0: autocompact may write back a summarised history."""
        params = self.params
        if not (params.compact.enabled and params.compact.autocompact):
            return
        actx = _autocompact_context(params, self.deps, self.tool_specs, self.env)
        auto = should_autocompact(self.messages, actx)
        if auto:  # Claude Code's PreCompact/PostCompact hooks, trigger "auto"
            await params.hooks.pre_compact("auto", None)
        compacted = await self.deps.autocompact(self.messages, actx)
        if compacted is not None:
            for ev in self._replace_history(compacted):
                yield ev
            if auto and getattr(compacted, "replaced", True):
                await params.hooks.post_compact("auto", summary_of(compacted.messages))
                async for ev in self._session_start_after_compact():
                    yield ev

    async def _session_start_after_compact(self) -> AsyncIterator[Event]:
        """SessionStart hooks with source "compact" right after an automatic summary (as Claude Code runs
        them); what they add follows the summary. (/compact's run at the next prompt: Engine.compacted.)"""
        started = await self.params.hooks.session_start("compact")
        if started is not None and started.additional_context:
            note = user_message(f"SessionStart hook additional context: {started.additional_context}",
                                meta={"hook": "SessionStart"})
            self.messages.append(note)
            yield UserMessageEvent(note)

    def _replace_history(self, compacted: AutocompactResult) -> list[Event]:
        if getattr(compacted, "replaced", True):  # a failed summary keeps the history (retain may cut)
            self.messages = list(compacted.messages)
            self.params.replacement_state.history_replaced()
        return _compaction_events(compacted)

    async def call_model(self, x: Exchange) -> AsyncIterator[Event]:
        """Stages 1-3 and the model call; made again (without recording the first reply) only when the
        output limit fell inside a tool call or the context window was exceeded."""
        while True:
            request: list[ModelRequest] = []
            async for ev in self.prepare_request(x, request):
                yield ev
            async for ev in self.stream_reply(x, request[0]):
                yield ev
            if x.terminal is not None:
                return
            again = False
            async for ev in self.retry_if_needed(x):
                again = True
                yield ev
            if x.terminal is not None or not again:
                return

    async def prepare_request(self, x: Exchange, out: list[ModelRequest]) -> AsyncIterator[Event]:
        """The outbound pipeline, the tools that joined since the last call, the checked request."""
        params, ctx = self.params, self.ctx
        if params.refresh_tools is not None:  # tools that joined (or left) since the last model call
            for kind, text in params.refresh_tools():
                yield NoticeEvent(kind, text)
            if [id(t) for t in params.tools] != self.tool_ids:
                self._tools_changed()
        for message in self._plan_tools():
            yield UserMessageEvent(message)
        piped = run_outbound_pipeline(
            self.messages, params.replacement_state, params.compact, self.env, microcompact=self.deps.microcompact
        )
        for rec in piped.records:
            yield RecordEvent(rec)
        for kind, text in piped.notices:
            yield NoticeEvent(kind, text)
        visible = sent_whole_ids(piped.messages, params.replacement_state)
        ctx.is_visible = visible.__contains__
        # The last line of defence: a request that breaks the API's rules is repaired (and traced), never
        # sent broken; under AGENT_STRICT_REQUESTS=1 (the test suite) it fails loudly instead.
        outbound = ensure_valid(to_api(piped.messages), params.system, self.tool_specs)
        if self.paused is not None:
            # pause_turn: the paused reply goes back as is, as the last message, and the model goes on.
            outbound = [*outbound, *to_api([self.paused])]
        thinking, output_config, x.request_max = thinking_request(params.model, x.max_tokens, params.thinking)
        out.append(ModelRequest(outbound, params.system, self.tool_specs, params.model, x.request_max, thinking,
                                output_config, cache_anchors=piped.cache_anchors))
        trace("api.request", messages=len(outbound), tools=len(self.tool_specs), model=params.model,
              max_tokens=x.request_max)

    async def stream_reply(self, x: Exchange, request: ModelRequest) -> AsyncIterator[Event]:
        """The model's reply, its deltas yielded as they arrive; an abort or a failure ends the task."""
        x.response, x.streamed = None, []
        stream = _ModelStream(self.deps.call_model(request), self.ctx.abort)
        try:
            while True:
                try:
                    event = await stream.next()
                except StopAsyncIteration:
                    break
                for ev in _stream_events(x, event):
                    yield ev
        except _Aborted:
            for ev in [*self._end(x, Terminal("aborted", x.turn)), *_interrupted(x.streamed)]:
                yield ev
            trace("query.turn_end", reason="aborted", turn=x.turn)
            return
        except asyncio.CancelledError:
            await stream.close()
            raise
        except Exception as exc:  # a provider bug still ends the turn cleanly
            await stream.close()
            text = str(exc) if isinstance(exc, ModelError) else scrub(
                f"Model call failed: {type(exc).__name__}: {exc}")
            x.response = None
            for ev in self._failed(x, text):
                yield ev
            return
        if x.response is None:
            for ev in self._failed(x, "The model stream ended without a message."):
                yield ev

    def _failed(self, x: Exchange, text: str) -> list[Event]:
        trace("query.turn_end", reason="error", turn=x.turn)
        return self._end(x, Terminal("error", x.turn, text))

    async def retry_if_needed(self, x: Exchange) -> AsyncIterator[Event]:
        """Yields only when the call must be made again: a tool call cut by max_tokens (once, with the
        model's maximum output, as Claude Code does) or a full context window (once, after compacting)."""
        response = x.response
        assert response is not None
        limit = max_output_tokens(self.params.model)
        if response.cut_tool_use and response.stop_reason == "max_tokens" and not x.escalated and x.max_tokens < limit:
            x.escalated = True
            trace("query.max_tokens_retry", old=x.max_tokens, new=limit)
            x.max_tokens = limit
            yield RetryEvent(0, 0.0, "max_tokens")
            yield NoticeEvent("retry", f"The reply hit the output limit inside a tool call; asking again "
                                       f"with max_tokens {limit}.")
            return
        if response.stop_reason == "model_context_window_exceeded" and not x.compacted_for_window:
            x.compacted_for_window = True
            yield RetryEvent(0, 0.0, "model_context_window_exceeded")
            await self.params.hooks.pre_compact("auto", None)  # an emergency summary is an automatic one
            compacted = await _compact_for_window(
                self.messages, _autocompact_context(self.params, self.deps, self.tool_specs, self.env))
            if compacted is None:
                x.terminal = Terminal("context_window_exceeded", x.turn, CONTEXT_EXCEEDED, response.stop_reason)
                return
            for ev in self._replace_history(compacted):
                yield ev
            if getattr(compacted, "replaced", True):
                await self.params.hooks.post_compact("auto", summary_of(compacted.messages))
            yield NoticeEvent("compact", "The context window was full; compacted the conversation and retrying.")

    async def handle_stop(self, x: Exchange) -> AsyncIterator[Event]:
        """The reply kept in the history, and what its stop reason does: pause, end, or ask for tools."""
        response = x.response
        assert response is not None
        stop = response.stop_reason
        assistant = response.message
        if self.paused is not None:  # the continuation of a paused turn is the same message
            assistant, self.paused = _continued(self.paused, assistant), None
        if stop == "pause_turn" and assistant["content"]:
            # A long server-tool turn paused: it is sent back as is and the model goes on; it is stored
            # (one message) when the turn is done.
            trace("query.pause_turn", turn=x.turn)
            self.paused, x.next_turn = assistant, True
            return
        # Duplicate tool_use ids renamed, over-deep inputs refused: every output kept, no recursion.
        assistant = sanitize_assistant(assistant, {u["id"] for m in self.messages for u in tool_uses(m)})
        if assistant["content"]:
            # An empty message (a refusal, a reply with nothing in it) is never stored: sent back, it is a 400.
            assistant.setdefault("meta", {})["model"] = self.params.model  # usage is priced by its model
            self.messages.append(assistant)
            yield AssistantEvent(assistant)
        ending = _stop_outcome(response, x.request_max)
        if ending is not None:
            reason, text = ending
            trace("query.turn_end", reason=reason, turn=x.turn, stop_reason=stop)
            x.terminal = Terminal(reason, x.turn, text, stop)
            return
        x.assistant, x.uses = assistant, tool_uses(assistant)
        if x.uses:
            trace("api.assistant", kind="tool_use", tool_uses=len(x.uses))
            return
        async for ev in self._answered(x, assistant, stop):
            yield ev

    async def _answered(self, x: Exchange, assistant: Message, stop: str | None) -> AsyncIterator[Event]:
        """A reply without tool calls completes the task, unless a Stop hook sends feedback."""
        trace("api.assistant", kind="text", text_len=len(message_text(assistant)))
        decision = await self.params.hooks.stop(message_text(assistant), self.stop_hook_active)
        if decision is not None and decision.action == "block":
            self.stop_hook_active = True
            feedback = user_message(f"Stop hook feedback:\n{decision.reason}")
            self.messages.append(feedback)
            yield UserMessageEvent(feedback)
            x.next_turn = True
            return
        trace("query.turn_end", reason="completed", turn=x.turn)
        x.terminal = Terminal("completed", x.turn, "", stop)

    async def run_tools(self, x: Exchange) -> AsyncIterator[Event]:
        """The tool calls, through the gate and hooks; their events as they happen."""
        async for item in self.runner.run(x.uses):
            if isinstance(item, BatchOutcome):
                x.outcome = item
            else:
                yield item

    async def guard_repeats(self, x: Exchange) -> AsyncIterator[Event]:
        """Identical calls with identical results: the model is told on the result, then the turn ends."""
        outcome = x.outcome
        assert outcome is not None
        by_id = {u["id"]: u for u in x.uses}
        for i, block in enumerate(outcome.results):
            use = by_id.get(block.get("tool_use_id", ""))
            if use is None:
                continue
            verdict = self.repeats.observe(use["name"], use.get("input"), block.get("content"),
                                           bool(block.get("is_error")))
            if verdict.note:
                outcome.results[i] = with_note(block, verdict.note)
                yield NoticeEvent("loop", verdict.note)
            if verdict.stop and not x.looping:
                x.looping = verdict.stop

    async def after_batch(self, x: Exchange) -> AsyncIterator[Event]:
        """PostToolBatch hooks, once per batch (Claude Code's event); what they add follows the results."""
        outcome = x.outcome
        assert outcome is not None
        if outcome.end_turn:
            return
        by_id = {u["id"]: u for u in x.uses}
        calls = [{"tool_name": use["name"], "tool_input": use.get("input"), "tool_use_id": use["id"],
                  "tool_response": block.get("content")}
                 for block in outcome.results if (use := by_id.get(block.get("tool_use_id", ""))) is not None]
        decision = await self.params.hooks.post_tool_batch(calls)
        if decision is not None and decision.additional_context:
            outcome.new_messages.append(user_message(
                f"PostToolBatch hook additional context: {decision.additional_context}",
                meta={"hook": "PostToolBatch"}))
        return
        yield  # an async generator like the other steps

    async def record_turn(self, x: Exchange) -> AsyncIterator[Event]:
        """The results message (stage 1 decided on arrival) and any messages the tools added, into the history."""
        params, outcome, assistant = self.params, x.outcome, x.assistant
        assert outcome is not None and assistant is not None
        results_msg = mark_empty_results(assistant, user_message(list(outcome.results)))
        if params.compact.enabled:
            # Stage 1 decides now, so the history and the transcript keep the pointer, not the original.
            decided = decide_new_results(assistant, results_msg, params.replacement_state, params.compact, self.env)
            results_msg = decided.messages[0]
            for rec in decided.records:
                yield RecordEvent(rec)
            for kind, text in decided.notices:
                yield NoticeEvent(kind, text)
        self.messages.append(results_msg)
        self.messages.extend(outcome.new_messages)
        yield ToolResultsEvent(results_msg, list(outcome.new_messages))
        if outcome.end_turn:
            trace("query.turn_end", reason="aborted", turn=x.turn)
            x.terminal = Terminal("aborted", x.turn, "" if outcome.aborted else "Tool use rejected by the user.")
        elif x.looping:
            trace("query.turn_end", reason="loop_detected", turn=x.turn)
            x.terminal = Terminal("loop_detected", x.turn, x.looping)


def with_note(block: Any, note: str) -> Any:
    """A tool_result with one more line for the model (a text block when its content is blocks)."""
    content = block.get("content")
    if isinstance(content, list):
        return {**block, "content": [*content, {"type": "text", "text": note}]}
    return {**block, "content": f"{content}\n\n{note}" if content else note}


def _stream_events(x: Exchange, event: object) -> list[Event]:
    """What one provider event becomes for front ends; the final message is kept on the exchange."""
    if isinstance(event, TextDelta):
        x.streamed.append(event.text)
        return [TextDeltaEvent(event.text)]
    if isinstance(event, ThinkingDelta):
        return [ThinkingDeltaEvent(event.text)]
    if isinstance(event, Retrying):
        x.streamed.clear()
        return [RetryEvent(event.attempt, event.delay, event.reason, event.max_retries, event.status),
                NoticeEvent("retry", retry_notice(event))]
    if isinstance(event, ModelResponse):
        x.response = event
    elif isinstance(event, RawStreamEvent):
        return [StreamEvent(event.event)]
    return []


def retry_notice(event: Retrying) -> str:
    """The line every front end shows for a retry: what failed, the wait, which attempt of how many."""
    if not event.max_retries:  # not an API retry (a fallback model): the reason says it all
        return event.reason
    wait = f"{event.delay:.1f} s" if event.delay >= 0.1 else f"{event.delay * 1000:.0f} ms"
    return f"API error ({event.reason}); retrying in {wait} (attempt {event.attempt}/{event.max_retries})"


CONTEXT_EXCEEDED = (
    "The conversation no longer fits the model's context window, even after compacting it; "
    "start a new one (/clear) or compact with instructions (/compact ...)."
)
REFUSAL = "The model declined to answer this request (stop_reason: refusal); nothing was run."


def _stop_outcome(response: ModelResponse, max_tokens: int) -> tuple[TerminalReason, str] | None:
    """How a stop reason ends the turn, or None when the loop goes on (tool_use, pause_turn) or the
    turn completes normally (end_turn, stop_sequence)."""
    stop = response.stop_reason
    if stop == "refusal":
        details = response.stop_details or {}
        why = "; ".join(str(details[k]) for k in ("category", "explanation") if details.get(k))
        return "refusal", f"{REFUSAL[:-1]} ({why})." if why else REFUSAL
    if stop == "model_context_window_exceeded":
        return "context_window_exceeded", CONTEXT_EXCEEDED
    if stop == "max_tokens" and response.cut_tool_use:
        return "max_tokens", (
            f"The reply hit the output limit ({max_tokens} tokens) inside a tool call, also after a retry "
            "with more room; the unfinished call was not run. Ask for smaller steps (e.g. write the file in parts)."
        )
    if stop == "max_tokens" and not tool_uses(response.message):
        return "max_tokens", f"The reply was cut at the output limit ({max_tokens} tokens)."
    return None


def _continued(paused: Message, more: Message) -> Message:
    """A paused reply and its continuation as one assistant message (usage added up)."""
    usage = dict(paused.get("usage") or {})
    for k, v in (more.get("usage") or {}).items():
        usage[k] = usage.get(k, 0) + v if isinstance(v, int) else v
    return assistant_message([*paused["content"], *more["content"]], usage=usage)


def _flush(paused: Message | None) -> list[Event]:
    """A paused reply still waiting when the turn ends another way: stored, not lost."""
    return [] if paused is None else [AssistantEvent(paused)]


def _compaction_events(compacted: AutocompactResult) -> list[Event]:
    """What a compaction tells the engine: its records, the new history (unless it failed), its notices."""
    replaced = [HistoryReplacedEvent(list(compacted.messages))] if getattr(compacted, "replaced", True) else []
    return [*(RecordEvent(rec) for rec in compacted.records), *replaced,
            *(NoticeEvent(kind, text) for kind, text in compacted.notices)]


async def _compact_for_window(messages: list[Message], actx: AutocompactContext) -> AutocompactResult | None:
    """A forced compaction after model_context_window_exceeded, or None when it is not possible."""
    try:
        return await compact_now(list(messages), actx, None)
    except Exception as exc:  # any failure ends in the one clear line of the Terminal
        trace("query.compact_failed", error=f"{type(exc).__name__}: {exc}")
        return None


def _interrupted(streamed: list[str]) -> list[Event]:
    """Events that record an interruption mid-stream: the partial text (not lost) and a note."""
    events: list[Event] = []
    partial = "".join(streamed)
    if partial.strip():
        events.append(AssistantEvent(assistant_message([text_block(partial)])))
    events.append(UserMessageEvent(user_message(INTERRUPTED_NOTE, meta={"interrupted": True})))
    return events
