"""The ReAct loop: call the model, run the tools it asks for, repeat until it answers without tools.

`query(params, deps)` is an async generator of events; it ends with a `Terminal`. It never writes the
caller's history: the engine applies the assistant / tool-result events it yields. Before every model
call the history passes through stage 0 (autocompact) and the outbound pipeline (budget, micro, retain).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agent.deps import QueryDeps
from services.compact.autocompact import AutocompactContext
from services.compact.budget import decide_new_results
from services.compact.options import CompactOptions
from services.compact.pipeline import run_outbound_pipeline, visible_result_ids
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.events import (
    AssistantEvent,
    Event,
    HistoryReplacedEvent,
    NoticeEvent,
    RecordEvent,
    StreamEvent,
    Terminal,
    TextDeltaEvent,
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
from services.model_types import ModelError, ModelRequest, ModelResponse, RawStreamEvent, Retrying, TextDelta
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
    max_tokens: int = 16384
    max_turns: int = 100
    gate: PermissionGate = field(default_factory=PermissionGate)
    hooks: Hooks = NO_HOOKS
    compact: CompactOptions = field(default_factory=CompactOptions)
    replacement_state: ContentReplacementState = field(default_factory=ContentReplacementState)
    autocompact_state: dict = field(default_factory=dict)


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


def _pipeline_env(tools: list[Tool], ctx: ToolContext) -> PipelineEnv:
    return PipelineEnv(
        max_result_chars={t.name: t.max_result_chars for t in tools},
        previewers={t.name: t.spill_preview for t in tools},
        spill_dir=(ctx.session_dir / "tool-results") if ctx.session_dir else None,
    )


async def query(params: QueryParams, deps: QueryDeps) -> AsyncIterator[Event]:
    messages = list(params.messages)
    ctx = params.tool_context
    tools = {t.name: t for t in params.tools}
    tool_specs = [t.to_api() for t in params.tools]
    env = _pipeline_env(params.tools, ctx)
    runner = ToolRunner(tools, ctx, params.gate, params.hooks)
    stop_hook_active = False
    turn = 0
    while True:
        turn += 1
        if turn > params.max_turns:
            trace("query.turn_end", reason="max_turns", turn=turn - 1)
            yield Terminal("max_turns", turn - 1)
            return
        trace("query.turn_start", turn=turn)

        # Stage 0: autocompact may write back a summarised history.
        if params.compact.enabled and params.compact.autocompact:
            actx = AutocompactContext(
                params.system, params.model, deps.call_model, params.compact, params.autocompact_state
            )
            compacted = await deps.autocompact(messages, actx)
            if compacted is not None:
                messages = list(compacted.messages)
                for rec in compacted.records:
                    yield RecordEvent(rec)
                yield HistoryReplacedEvent(list(messages))
                for kind, text in compacted.notices:
                    yield NoticeEvent(kind, text)

        # Stages 1-3: the outbound copy.
        piped = run_outbound_pipeline(
            messages, params.replacement_state, params.compact, env, microcompact=deps.microcompact
        )
        for rec in piped.records:
            yield RecordEvent(rec)
        for kind, text in piped.notices:
            yield NoticeEvent(kind, text)
        visible = visible_result_ids(messages, piped.messages)
        ctx.is_visible = visible.__contains__

        request = ModelRequest(to_api(piped.messages), params.system, tool_specs, params.model, params.max_tokens)
        trace("api.request", messages=len(request.messages), tools=len(tool_specs), model=params.model)
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
                elif isinstance(event, Retrying):
                    streamed.clear()
                    yield NoticeEvent(
                        "retry", f"Model call failed ({event.reason}); retry {event.attempt} in {event.delay:.1f} s"
                    )
                elif isinstance(event, ModelResponse):
                    response = event
                elif isinstance(event, RawStreamEvent):
                    yield StreamEvent(event.event)
        except _Aborted:
            for ev in _interrupted(streamed):
                yield ev
            trace("query.turn_end", reason="aborted", turn=turn)
            yield Terminal("aborted", turn)
            return
        except ModelError as exc:
            await stream.close()
            trace("query.turn_end", reason="error", turn=turn)
            yield Terminal("error", turn, str(exc))
            return
        except asyncio.CancelledError:
            await stream.close()
            raise
        except Exception as exc:  # a provider bug still ends the turn cleanly
            await stream.close()
            trace("query.turn_end", reason="error", turn=turn)
            yield Terminal("error", turn, f"Model call failed: {type(exc).__name__}: {exc}")
            return
        if response is None:
            trace("query.turn_end", reason="error", turn=turn)
            yield Terminal("error", turn, "The model stream ended without a message.")
            return

        # Duplicate tool_use ids renamed, over-deep inputs refused (issue 21): every output kept, no recursion.
        assistant = sanitize_assistant(response.message, {u["id"] for m in messages for u in tool_uses(m)})
        messages.append(assistant)
        yield AssistantEvent(assistant)
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
            yield Terminal("completed", turn)
            return

        outcome: BatchOutcome | None = None
        async for item in runner.run(uses):
            if isinstance(item, BatchOutcome):
                outcome = item
            else:
                yield item
        assert outcome is not None
        results_msg = user_message(list(outcome.results))
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


def _interrupted(streamed: list[str]) -> list[Event]:
    """Events that record an interruption mid-stream: the partial text (not lost) and a note."""
    events: list[Event] = []
    partial = "".join(streamed)
    if partial.strip():
        events.append(AssistantEvent(assistant_message([text_block(partial)])))
    events.append(UserMessageEvent(user_message(INTERRUPTED_NOTE, meta={"interrupted": True})))
    return events
