"""The ReAct loop: call the model, run the tools it asks for, repeat until it answers without tools.

`query(params, deps)` is an async generator of events; it ends with a `Terminal`. It never writes the
caller's history: the engine applies the assistant / tool-result events it yields. Before every model
call the history passes through stage 0 (autocompact) and the outbound pipeline (budget, micro, retain).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from agent.compact_context import build_autocompact_context, pipeline_env
from agent.deps import QueryDeps
from services.compact.autocompact import AutocompactContext, compact_now
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
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolResultsEvent,
    UserMessageEvent,
)
from services.hooks import NO_HOOKS, Hooks
from services.messages import (
    Message,
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

INTERRUPTED_NOTE = "[Request interrupted by user]"


@dataclass
class QueryParams:
    messages: list[Message]
    system: str
    tools: list[Tool]
    tool_context: ToolContext
    model: str
    max_tokens: int = 0  # 0: the model's default (services/models.default_max_tokens)
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


def _autocompact_context(
    params: QueryParams, deps: QueryDeps, tool_specs: list[dict], env: PipelineEnv
) -> AutocompactContext:
    return build_autocompact_context(
        params.system, params.model, deps.call_model, params.compact, params.autocompact_state, tool_specs,
        params.replacement_state, env, deps.microcompact, params.tool_context,
    )


async def query(params: QueryParams, deps: QueryDeps) -> AsyncIterator[Event]:
    messages = list(params.messages)
    ctx = params.tool_context
    tools = {t.name: t for t in params.tools}
    # Server tools (web_search / web_fetch run by the API) replace their client-side counterparts.
    replaced = replaced_client_tools(params.server_tools)

    def specs() -> list[dict]:
        return [t.to_api() for t in params.tools if t.name not in replaced] + server_tool_specs(params.server_tools)

    tool_specs = specs()
    tool_ids = [id(t) for t in params.tools]
    env = pipeline_env(params.tools, ctx, params.system, tool_specs)
    runner = ToolRunner(tools, ctx, params.gate, params.hooks)
    stop_hook_active = False
    paused: Message | None = None  # a pause_turn reply waiting for its continuation
    turn = 0
    while True:
        turn += 1
        if turn > params.max_turns:
            for ev in _flush(paused):
                yield ev
            trace("query.turn_end", reason="max_turns", turn=turn - 1)
            yield Terminal("max_turns", turn - 1)
            return
        trace("query.turn_start", turn=turn)

        # Stage 0: autocompact may write back a summarised history.
        if params.compact.enabled and params.compact.autocompact:
            actx = _autocompact_context(params, deps, tool_specs, env)
            compacted = await deps.autocompact(messages, actx)
            if compacted is not None:
                if getattr(compacted, "replaced", True):
                    messages = list(compacted.messages)
                    params.replacement_state.history_replaced()
                for ev in _compaction_events(compacted):
                    yield ev

        # Stages 1-3 and the model call; made again (without recording the first reply) only when the
        # output limit fell inside a tool call or the context window was exceeded.
        max_tokens = params.max_tokens or default_max_tokens(params.model)
        escalated = compacted_for_window = False
        while True:
            piped = run_outbound_pipeline(
                messages, params.replacement_state, params.compact, env, microcompact=deps.microcompact
            )
            for rec in piped.records:
                yield RecordEvent(rec)
            for kind, text in piped.notices:
                yield NoticeEvent(kind, text)
            visible = sent_whole_ids(piped.messages, params.replacement_state)
            ctx.is_visible = visible.__contains__

            if params.refresh_tools is not None:  # tools that joined (or left) since the last model call
                for kind, text in params.refresh_tools():
                    yield NoticeEvent(kind, text)
                if [id(t) for t in params.tools] != tool_ids:
                    tool_ids = [id(t) for t in params.tools]
                    tools = {t.name: t for t in params.tools}
                    tool_specs = specs()
                    env = pipeline_env(params.tools, ctx, params.system, tool_specs)
                    runner.tools = tools

            # The last line of defence: a request that breaks the API's rules is repaired (and traced), never
            # sent broken; under AGENT_STRICT_REQUESTS=1 (the test suite) it fails loudly instead.
            outbound = ensure_valid(to_api(piped.messages), params.system, tool_specs)
            if paused is not None:
                # pause_turn: the paused reply goes back as is, as the last message, and the model goes on.
                outbound = [*outbound, *to_api([paused])]
            thinking, output_config, request_max = thinking_request(params.model, max_tokens, params.thinking)
            request = ModelRequest(
                outbound, params.system, tool_specs, params.model, request_max, thinking, output_config,
                cache_anchors=piped.cache_anchors,
            )
            trace("api.request", messages=len(request.messages), tools=len(tool_specs), model=params.model,
                  max_tokens=request_max)
            response: ModelResponse | None = None
            streamed: list[str] = []
            stream = _ModelStream(deps.call_model(request), ctx.abort)
            try:
                while True:
                    try:
                        event = await stream.next()
                    except StopAsyncIteration:
                        break
                    if isinstance(event, TextDelta):
                        streamed.append(event.text)
                        yield TextDeltaEvent(event.text)
                    elif isinstance(event, ThinkingDelta):
                        yield ThinkingDeltaEvent(event.text)
                    elif isinstance(event, Retrying):
                        streamed.clear()
                        yield RetryEvent(event.attempt, event.delay, event.reason)
                        yield NoticeEvent(
                            "retry", f"Model call failed ({event.reason}); retry {event.attempt} in {event.delay:.1f} s"
                        )
                    elif isinstance(event, ModelResponse):
                        response = event
                    elif isinstance(event, RawStreamEvent):
                        yield StreamEvent(event.event)
            except _Aborted:
                for ev in [*_flush(paused), *_interrupted(streamed)]:
                    yield ev
                trace("query.turn_end", reason="aborted", turn=turn)
                yield Terminal("aborted", turn)
                return
            except ModelError as exc:
                await stream.close()
                trace("query.turn_end", reason="error", turn=turn)
                for ev in _flush(paused):
                    yield ev
                yield Terminal("error", turn, str(exc))
                return
            except asyncio.CancelledError:
                await stream.close()
                raise
            except Exception as exc:  # a provider bug still ends the turn cleanly
                await stream.close()
                trace("query.turn_end", reason="error", turn=turn)
                for ev in _flush(paused):
                    yield ev
                yield Terminal("error", turn, scrub(f"Model call failed: {type(exc).__name__}: {exc}"))
                return
            if response is None:
                trace("query.turn_end", reason="error", turn=turn)
                for ev in _flush(paused):
                    yield ev
                yield Terminal("error", turn, "The model stream ended without a message.")
                return
            limit = max_output_tokens(params.model)
            if response.cut_tool_use and response.stop_reason == "max_tokens" and not escalated and max_tokens < limit:
                # Claude Code's answer to a tool call cut by max_tokens: the same request with more room.
                escalated = True
                trace("query.max_tokens_retry", old=max_tokens, new=limit)
                max_tokens = limit
                yield RetryEvent(0, 0.0, "max_tokens")
                yield NoticeEvent("retry", f"The reply hit the output limit inside a tool call; asking again "
                                           f"with max_tokens {limit}.")
                continue
            if response.stop_reason == "model_context_window_exceeded" and not compacted_for_window:
                compacted_for_window = True
                yield RetryEvent(0, 0.0, "model_context_window_exceeded")
                compacted = await _compact_for_window(messages, _autocompact_context(params, deps, tool_specs, env))
                if compacted is None:
                    yield Terminal("context_window_exceeded", turn, CONTEXT_EXCEEDED, response.stop_reason)
                    return
                messages = list(compacted.messages)
                params.replacement_state.history_replaced()
                for ev in _compaction_events(compacted):
                    yield ev
                yield NoticeEvent("compact", "The context window was full; compacted the conversation and retrying.")
                continue
            break

        stop = response.stop_reason
        assistant = response.message
        if paused is not None:  # the continuation of a paused turn is the same message
            assistant, paused = _continued(paused, assistant), None
        if stop == "pause_turn" and assistant["content"]:
            # A long server-tool turn paused: it is sent back as is and the model goes on; it is stored
            # (one message) when the turn is done.
            trace("query.pause_turn", turn=turn)
            paused = assistant
            continue
        # Duplicate tool_use ids renamed, over-deep inputs refused (issue 21): every output kept, no recursion.
        assistant = sanitize_assistant(assistant, {u["id"] for m in messages for u in tool_uses(m)})
        if assistant["content"]:
            # An empty message (a refusal, a reply with nothing in it) is never stored: sent back, it is a 400.
            assistant.setdefault("meta", {})["model"] = params.model  # usage is priced by the model that served it
            messages.append(assistant)
            yield AssistantEvent(assistant)
        ending = _stop_outcome(response, request_max)
        if ending is not None:
            reason, text = ending
            trace("query.turn_end", reason=reason, turn=turn, stop_reason=stop)
            yield Terminal(reason, turn, text, stop)
            return
        uses = tool_uses(assistant)
        if uses:
            trace("api.assistant", kind="tool_use", tool_uses=len(uses))
        else:
            trace("api.assistant", kind="text", text_len=len(message_text(assistant)))
            decision = await params.hooks.stop(message_text(assistant), stop_hook_active)
            if decision is not None and decision.action == "block":
                stop_hook_active = True
                feedback = user_message(f"Stop hook feedback:\n{decision.reason}")
                messages.append(feedback)
                yield UserMessageEvent(feedback)
                continue
            trace("query.turn_end", reason="completed", turn=turn)
            yield Terminal("completed", turn, "", stop)
            return

        outcome: BatchOutcome | None = None
        async for item in runner.run(uses):
            if isinstance(item, BatchOutcome):
                outcome = item
            else:
                yield item
        assert outcome is not None
        results_msg = mark_empty_results(assistant, user_message(list(outcome.results)))
        if params.compact.enabled:
            # Stage 1 decides now, so the history and the transcript keep the pointer, not the original.
            decided = decide_new_results(assistant, results_msg, params.replacement_state, params.compact, env)
            results_msg = decided.messages[0]
            for rec in decided.records:
                yield RecordEvent(rec)
            for kind, text in decided.notices:
                yield NoticeEvent(kind, text)
        messages.append(results_msg)
        messages.extend(outcome.new_messages)
        yield ToolResultsEvent(results_msg, list(outcome.new_messages))
        if outcome.end_turn:
            trace("query.turn_end", reason="aborted", turn=turn)
            yield Terminal("aborted", turn, "" if outcome.aborted else "Tool use rejected by the user.")
            return


CONTEXT_EXCEEDED = (
    "The conversation no longer fits the model's context window, even after compacting it; "
    "start a new one (/clear) or compact with instructions (/compact ...)."
)
REFUSAL = "The model declined to answer this request (stop_reason: refusal); nothing was run."


def _stop_outcome(response: ModelResponse, max_tokens: int) -> tuple[str, str] | None:
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


def _compaction_events(compacted) -> list[Event]:
    """What a compaction tells the engine: its records, the new history (unless it failed), its notices."""
    replaced = [HistoryReplacedEvent(list(compacted.messages))] if getattr(compacted, "replaced", True) else []
    return [*(RecordEvent(rec) for rec in compacted.records), *replaced,
            *(NoticeEvent(kind, text) for kind, text in compacted.notices)]


async def _compact_for_window(messages: list[Message], actx: AutocompactContext):
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
