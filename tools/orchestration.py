"""Running one assistant message's tool calls.

Every tool_use gets exactly one tool_result, in the order of the tool_use blocks, whatever happens.
Consecutive concurrency-safe calls run in parallel (bounded); the others run one by one. Unknown
tools, invalid input and exceptions become `is_error` results; the loop goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.events import ToolEndEvent, ToolStartEvent
from services.hooks import NO_HOOKS, Hooks, hook_denial
from services.messages import (
    INTERRUPTED_TOOL_RESULT_MESSAGE,
    MAX_INPUT_DEPTH,
    SKIPPED_TOOL_RESULT_MESSAGE,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    clean_text,
    result_text,
    tool_result_block,
    user_message,
)
from services.session_caps import over_cap
from services.trace import trace
from tools.ask_user_question import DISABLED_RESULT
from tools.ask_user_question import NAME as ASK_NAME
from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error
from tools.checkpoints import BASH_TOOL, checkpoint_store
from tools.diff_preview import diff_lines
from tools.instruction_context import instruction_reminders
from tools.permissions import ANSWERED_BY_USER, PermissionGate
from tools.validation import validate_input

PREVIEW_LINES = 8  # of a result, carried on ToolEndEvent for front ends that show output
DIFFED_TOOLS = ("Edit", "Write")  # their start events carry the diff, taken before they run

MAX_PARALLEL_TOOLS = 10
# Bounded work: an input nested deeper or larger than this is refused with an is_error result
# before anything walks it (validation, hooks, the renderers' JSON). 16 MiB is far beyond any real call.
MAX_INPUT_BYTES = 16 * 1024 * 1024

def input_limit_error(name: str, value: Any) -> str | None:
    """Why `value` is too deep or too large for a tool input, or None; counted without recursion."""
    size = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict | list):
            if depth > MAX_INPUT_DEPTH:
                return (f"Invalid input for {name}: nested deeper than {MAX_INPUT_DEPTH} levels. "
                        "Send a flatter input.")
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            for k, x in items:
                size += 2 + (len(k) if isinstance(k, str) else 0)
                stack.append((x, depth + 1))
        elif isinstance(v, str):
            size += len(v) + 2
        else:
            size += 8
        if size > MAX_INPUT_BYTES:
            return (f"Invalid input for {name}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB. "
                    "Write large content to a file in smaller steps.")
    return None


@dataclass
class BatchOutcome:
    results: list[ToolResultBlock]
    new_messages: list[Message] = field(default_factory=list)
    # Set when a user denial (or abort) must end the turn after this batch.
    end_turn: bool = False
    aborted: bool = False


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


def _content_of(output: ToolOutput) -> str | list[dict[str, Any]]:
    """Tool output as tool_result content that is always valid JSON text (tools may return anything)."""
    content = output.content
    if isinstance(content, str):
        return clean_text(content)
    if isinstance(content, list):
        return [
            {**b, "text": clean_text(b["text"])} if isinstance(b, dict) and isinstance(b.get("text"), str) else b
            for b in content
        ]
    return clean_text(json.dumps(content, ensure_ascii=False, default=str))


def _partition(uses: list[ToolUseBlock], tools: dict[str, Tool]) -> list[list[ToolUseBlock]]:
    """Consecutive concurrency-safe calls form one parallel group; every other call is its own group."""
    groups: list[list[ToolUseBlock]] = []
    last_safe = False
    for use in uses:
        tool = tools.get(use["name"])
        safe = False
        if tool is not None and isinstance(use.get("input"), dict):
            try:
                safe = bool(tool.is_concurrency_safe(use["input"]))
            except Exception:
                safe = False
        if safe and last_safe:
            groups[-1].append(use)
        else:
            groups.append([use])
        last_safe = safe
    return groups


@dataclass
class _Batch:
    """What one `ToolRunner.run` has gathered so far."""

    # Keyed by the call itself, not its id: two calls with one id each keep their own result.
    results: dict[int, ToolResultBlock] = field(default_factory=dict)
    new_messages: list[Message] = field(default_factory=list)
    end_turn: bool = False
    aborted: bool = False
    # Events for the hooks that only look (event, matcher target, fields), told once the group is collected.
    observed: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def _end_event(tid: str, name: str, output: ToolOutput, duration: float) -> ToolEndEvent:
    err = _first_line(output.content) if output.is_error and isinstance(output.content, str) else ""
    text = result_text(output.content) if isinstance(output.content, str | list) else ""
    return ToolEndEvent(tid, name, not output.is_error, output.summary, duration, err,
                        preview="\n".join(text.splitlines()[:PREVIEW_LINES]), lines=text.count("\n") + 1 if text else 0)


class ToolRunner:
    def __init__(
        self,
        tools: dict[str, Tool],
        ctx: ToolContext,
        gate: PermissionGate,
        hooks: Hooks = NO_HOOKS,
        max_parallel: int = MAX_PARALLEL_TOOLS,
    ):
        self.tools = tools
        self.ctx = ctx
        self.gate = gate
        self.hooks = hooks
        self.max_parallel = max_parallel

    async def _run_one(self, use: ToolUseBlock, events: asyncio.Queue[Any]) -> tuple[ToolResultBlock, ToolOutput | None, bool]:
        """Returns (result block, output, end_turn)."""
        name, tid = use["name"], use["id"]
        raw_input = use.get("input")
        started = time.monotonic()
        limit_error = input_limit_error(name, raw_input)
        shown_input = raw_input if isinstance(raw_input, dict) and limit_error is None else {}
        checkpoints = checkpoint_store(self.ctx.session)
        if checkpoints is not None:  # the file as it is before anything of this call runs
            checkpoints.before_write(name, shown_input, Path(self.ctx.cwd))
        await events.put(ToolStartEvent(tid, name, shown_input, self._diff(name, shown_input)))
        trace("tool.start", name=name, id=tid)
        end_turn = False
        try:
            output, end_turn = await self._execute(use, limit_error, checkpoints, started)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            output = ToolOutput(str(exc), is_error=True)
        except Exception as exc:  # a failing tool never escapes the loop
            output = ToolOutput(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        block = tool_result_block(tid, _content_of(output), is_error=output.is_error)
        await events.put(_end_event(tid, name, output, time.monotonic() - started))
        trace("tool.end", name=name, id=tid, ok=not output.is_error)
        return block, output, end_turn

    def _diff(self, name: str, shown_input: Any) -> Any:
        if name not in DIFFED_TOOLS:
            return None
        try:
            return diff_lines(name, shown_input, self.ctx.cwd)
        except Exception:  # a preview never stops the call
            return None

    def _checked_input(self, tool: Tool | None, name: str, raw_input: Any, limit_error: str | None) -> dict[str, Any]:
        """The call's input, normalised and validated; a ToolError the model can act on otherwise."""
        if tool is None:
            raise ToolError(DISABLED_RESULT if name == ASK_NAME
                            else tool_use_error(f"Error: No such tool available: {name}"))
        if isinstance(raw_input, dict) and limit_error is None:
            raw_input = tool.normalize_input(raw_input)
        error = limit_error or validate_input(tool, raw_input)
        if error:
            raise ToolError(tool_use_error(error))
        assert isinstance(raw_input, dict)
        return raw_input

    async def _execute(self, use: ToolUseBlock, limit_error: str | None,
                       checkpoints: Any, started: float) -> tuple[ToolOutput, bool]:
        """Check, authorize, run the hooks and call the tool: (its output, whether the turn must end)."""
        name, tid = use["name"], use["id"]
        tool = self.tools.get(name)
        raw_input = self._checked_input(tool, name, use.get("input"), limit_error)
        assert tool is not None
        # PreToolUse runs before the gate (as in Claude Code): it may deny, answer the question, or
        # rewrite the input, which the gate then judges as what will actually run.
        decision = await self.hooks.pre_tool_use(name, raw_input, tid)
        if decision is not None and decision.action == "deny":
            return ToolOutput(hook_denial(name, decision.reason), is_error=True, summary="denied by hook"), False
        if decision is not None and decision.updated_input is not None:
            raw_input = self._checked_input(tool, name, decision.updated_input, None)
        hook = (decision.permission, decision.reason) if decision is not None and decision.permission else None
        if hook is not None and hook[0] == "allow" and name in ANSWERED_BY_USER:
            hook = None  # the question is the tool: a hook cannot answer it for the user
        verdict = await self.gate.authorize(tool, raw_input, self.ctx.for_call(tid), hook)
        if not verdict.allowed:
            return ToolOutput(verdict.message, is_error=True, summary="denied"), verdict.end_turn
        if verdict.updated_input is not None:
            error = validate_input(tool, verdict.updated_input)  # the host's input is checked too
            if error:
                raise ToolError(error)
            raw_input = verdict.updated_input
        refused = over_cap(name, self.ctx.session.capped_calls, raw_input, self.gate.headless)
        if refused is not None:
            return ToolOutput(refused[0], is_error=refused[1], summary="over the session's cap"), False
        output = await self._call(tool, raw_input, tid, checkpoints)
        if decision is not None and decision.additional_context:  # after the result, with Claude Code's label
            output.new_messages.append(user_message(f"PreToolUse:{name} hook additional context: "
                                                    f"{decision.additional_context}", meta={"hook": "PreToolUse"}))
        await self._after_hooks(name, raw_input, tid, output, started)
        return output, False

    async def _call(self, tool: Tool, raw_input: dict[str, Any], tid: str, checkpoints: Any) -> ToolOutput:
        """The call itself, with the checkpoints around it and CwdChanged when a shell's `cd` moved the session."""
        name = tool.name
        if checkpoints is not None and name == BASH_TOOL:
            # A shell can change any file: snapshot the tree once per turn, as late as possible
            # (allowed, not denied by a hook), right before it runs; background runs too.
            await checkpoints.before_bash(Path(self.ctx.cwd))
        cwd_before = str(self.ctx.session.cwd)
        try:
            output = await tool.call(raw_input, self.ctx.for_call(tid))
        except ToolError as exc:  # a failure the model can act on: PostToolUseFailure runs for it too
            output = ToolOutput(str(exc), is_error=True)
        if str(self.ctx.session.cwd) != cwd_before:  # the next call runs there
            await self.hooks.observe("CwdChanged", "", {"old_cwd": cwd_before, "new_cwd": str(self.ctx.session.cwd)})
        await self.hooks.poll_files()  # a watched file the call changed: its FileChanged hooks run now
        if not isinstance(output, ToolOutput):
            output = ToolOutput(json.dumps(output, ensure_ascii=False, default=str))
        if checkpoints is not None:  # what the agent left in the files (a shell may change any)
            if name == BASH_TOOL:
                checkpoints.after_bash()
            elif not output.is_error:
                checkpoints.after_write(name, raw_input, Path(self.ctx.cwd))
        return output

    async def _after_hooks(self, name: str, input: dict[str, Any], tid: str, output: ToolOutput,
                           started: float) -> None:
        """PostToolUse after a success, PostToolUseFailure after an is_error result (as Claude Code runs
        them); what they add for the model follows the result."""
        if output.is_error:
            error = output.content if isinstance(output.content, str) else json.dumps(output.content, default=str)
            after = await self.hooks.post_tool_use_failure(name, input, tid, error, False,
                                                           int((time.monotonic() - started) * 1000))
        else:
            after = await self.hooks.post_tool_use(name, input, tid, output.content, False,
                                                   int((time.monotonic() - started) * 1000))
        if after is not None and after.additional_context:
            output.new_messages.append(user_message(after.additional_context, meta={"hook": "PostToolUse"}))

    async def run(self, uses: list[ToolUseBlock]) -> AsyncIterator[ToolStartEvent | ToolEndEvent | BatchOutcome]:
        """Yields tool start/end events as they happen, then one BatchOutcome."""
        batch = _Batch()
        events: asyncio.Queue[Any] = asyncio.Queue()
        sem = asyncio.Semaphore(self.max_parallel)

        async def guarded(use: ToolUseBlock) -> tuple[ToolResultBlock, ToolOutput | None, bool]:
            async with sem:
                return await self._run_one(use, events)

        for group in _partition(uses, self.tools):
            if batch.end_turn or self.ctx.abort.is_set():
                break
            tasks = [asyncio.ensure_future(guarded(u)) for u in group]
            async for event in self._wait_group(tasks, events, batch):
                yield event
            while not events.empty():
                yield events.get_nowait()
            for end in self._collect(group, tasks, batch):
                yield end
            observed, batch.observed = batch.observed, []
            for event, target, fields in observed:
                await self.hooks.observe(event, target, fields)
            if batch.aborted:
                break
        ordered = [
            batch.results.get(id(u)) or tool_result_block(u["id"], SKIPPED_TOOL_RESULT_MESSAGE, is_error=True)
            for u in uses
        ]
        yield BatchOutcome(ordered, batch.new_messages, end_turn=batch.end_turn or batch.aborted, aborted=batch.aborted)

    async def _wait_group(self, tasks: Sequence[asyncio.Future[Any]], events: asyncio.Queue[Any],
                          batch: _Batch) -> AsyncIterator[Any]:
        """Yields the group's events as they come until its calls end; an abort cancels the rest."""
        abort_wait = asyncio.ensure_future(self.ctx.abort.wait())
        pending: set[asyncio.Future[Any]] = set(tasks)
        try:
            while pending:
                getter = asyncio.ensure_future(events.get())
                done, _ = await asyncio.wait(pending | {getter, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    yield getter.result()
                else:
                    getter.cancel()
                pending -= done
                if abort_wait in done:
                    batch.aborted = True
                    for t in pending:
                        t.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    pending = set()
        finally:
            abort_wait.cancel()
            for t in tasks:
                if not t.done():
                    t.cancel()

    def _collect(self, group: list[ToolUseBlock], tasks: Sequence[asyncio.Future[Any]],
                 batch: _Batch) -> Iterator[ToolEndEvent]:
        """Each call's result into the batch; an interrupted call gets its result and end event here."""
        for use, task in zip(group, tasks, strict=True):
            if not task.cancelled() and task.exception() is not None:
                batch.results[id(use)] = tool_result_block(
                    use["id"], f"{use['name']} failed: {task.exception()}", is_error=True)
                continue
            if task.cancelled():
                batch.results[id(use)] = tool_result_block(use["id"], INTERRUPTED_TOOL_RESULT_MESSAGE, is_error=True)
                yield ToolEndEvent(use["id"], use["name"], False, "interrupted", 0.0, "Interrupted")
                continue
            block, output, deny_end = task.result()
            batch.results[id(use)] = block
            if output is not None:
                batch.new_messages.extend(output.new_messages)
                touched = instruction_reminders(self.ctx, use, block)
                batch.new_messages.extend(touched.reminders)
                batch.observed += [("InstructionsLoaded", reason, f) for reason, f in touched.loaded]
            batch.end_turn = batch.end_turn or deny_end
