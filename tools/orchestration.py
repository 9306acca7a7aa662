"""Running one assistant message's tool calls.

Every tool_use gets exactly one tool_result, in the order of the tool_use blocks, whatever happens.
Consecutive concurrency-safe calls run in parallel (bounded); the others run one by one. Unknown
tools, invalid input and exceptions become `is_error` results; the loop goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.events import ToolEndEvent, ToolStartEvent
from services.hooks import NO_HOOKS, Hooks
from services.messages import (
    INTERRUPTED_TOOL_RESULT_MESSAGE,
    MAX_INPUT_DEPTH,
    SKIPPED_TOOL_RESULT_MESSAGE,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    clean_text,
    tool_result_block,
)
from services.trace import trace
from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error
from tools.checkpoints import BASH_TOOL, checkpoint_store
from tools.diff_preview import diff_lines
from tools.instruction_context import instruction_reminders
from tools.permissions import PermissionGate
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
        tool = self.tools.get(name)
        started = time.monotonic()
        limit_error = input_limit_error(name, raw_input)
        shown_input = raw_input if isinstance(raw_input, dict) and limit_error is None else {}
        checkpoints = checkpoint_store(self.ctx.session)
        if checkpoints is not None:  # the file as it is before anything of this call runs
            checkpoints.before_write(name, shown_input, Path(self.ctx.cwd))
        diff = None
        if name in DIFFED_TOOLS:
            try:
                diff = diff_lines(name, shown_input, self.ctx.cwd)
            except Exception:
                diff = None
        await events.put(ToolStartEvent(tid, name, shown_input, diff))
        trace("tool.start", name=name, id=tid)
        end_turn = False
        output: ToolOutput | None = None
        try:
            if tool is None:
                raise ToolError(tool_use_error(f"Error: No such tool available: {name}"))
            if isinstance(raw_input, dict) and limit_error is None:
                raw_input = tool.normalize_input(raw_input)
            error = limit_error or validate_input(tool, raw_input)
            if error:
                raise ToolError(tool_use_error(error))
            assert isinstance(raw_input, dict)
            verdict = await self.gate.authorize(tool, raw_input, self.ctx.for_call(tid))
            if verdict.allowed and verdict.updated_input is not None:
                error = validate_input(tool, verdict.updated_input)  # the host's input is checked too
                if error:
                    raise ToolError(error)
                raw_input = verdict.updated_input
            if not verdict.allowed:
                end_turn = verdict.end_turn
                output = ToolOutput(verdict.message, is_error=True, summary="denied")
            else:
                decision = await self.hooks.pre_tool_use(name, raw_input, tid)
                if decision is not None and decision.action == "deny":
                    output = ToolOutput(
                        f"PreToolUse hook denied this tool call: {decision.reason or 'no reason given'}",
                        is_error=True,
                        summary="denied by hook",
                    )
                else:
                    if checkpoints is not None and name == BASH_TOOL:
                        # A shell can change any file: snapshot the tree once per turn, as late as possible
                        # (allowed, not denied by a hook), right before it runs; background runs too.
                        await checkpoints.before_bash(Path(self.ctx.cwd))
                    output = await tool.call(raw_input, self.ctx.for_call(tid))
                    if not isinstance(output, ToolOutput):
                        output = ToolOutput(json.dumps(output, ensure_ascii=False, default=str))
                    if checkpoints is not None:  # what the agent left in the files (a shell may change any)
                        if name == BASH_TOOL:
                            checkpoints.after_bash()
                        elif not output.is_error:
                            checkpoints.after_write(name, raw_input, Path(self.ctx.cwd))
                    await self.hooks.post_tool_use(name, raw_input, tid, output.content, output.is_error)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            output = ToolOutput(str(exc), is_error=True)
        except Exception as exc:  # a failing tool never escapes the loop
            output = ToolOutput(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        block = tool_result_block(tid, _content_of(output), is_error=output.is_error)
        duration = time.monotonic() - started
        err = _first_line(output.content) if output.is_error and isinstance(output.content, str) else ""
        text = output.content if isinstance(output.content, str) else ""
        await events.put(ToolEndEvent(tid, name, not output.is_error, output.summary, duration, err,
                                      preview="\n".join(text.splitlines()[:PREVIEW_LINES]), lines=text.count("\n") + 1 if text else 0))
        trace("tool.end", name=name, id=tid, ok=not output.is_error)
        return block, output, end_turn

    async def run(self, uses: list[ToolUseBlock]) -> AsyncIterator[ToolStartEvent | ToolEndEvent | BatchOutcome]:
        """Yields tool start/end events as they happen, then one BatchOutcome."""
        # Keyed by the call itself, not its id: two calls with one id each keep their own result.
        results: dict[int, ToolResultBlock] = {}
        new_messages: list[Message] = []
        end_turn = False
        aborted = False
        events: asyncio.Queue[Any] = asyncio.Queue()
        sem = asyncio.Semaphore(self.max_parallel)

        async def guarded(use: ToolUseBlock) -> tuple[ToolResultBlock, ToolOutput | None, bool]:
            async with sem:
                return await self._run_one(use, events)

        for group in _partition(uses, self.tools):
            if end_turn or self.ctx.abort.is_set():
                break
            tasks = [asyncio.ensure_future(guarded(u)) for u in group]
            abort_wait = asyncio.ensure_future(self.ctx.abort.wait())
            pending = set(tasks)
            try:
                while pending:
                    getter = asyncio.ensure_future(events.get())
                    done, _ = await asyncio.wait(
                        pending | {getter, abort_wait}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if getter in done:
                        yield getter.result()
                    else:
                        getter.cancel()
                    pending -= done
                    if abort_wait in done:
                        aborted = True
                        for t in pending:
                            t.cancel()
                        await asyncio.gather(*pending, return_exceptions=True)
                        pending = set()
            finally:
                abort_wait.cancel()
                for t in tasks:
                    if not t.done():
                        t.cancel()
            while not events.empty():
                yield events.get_nowait()
            for use, task in zip(group, tasks, strict=True):
                if task.cancelled() or task.exception() is not None:
                    if task.done() and not task.cancelled() and task.exception() is not None:
                        exc = task.exception()
                        results[id(use)] = tool_result_block(
                            use["id"], f"{use['name']} failed: {exc}", is_error=True
                        )
                    else:
                        results[id(use)] = tool_result_block(
                            use["id"], INTERRUPTED_TOOL_RESULT_MESSAGE, is_error=True
                        )
                        yield ToolEndEvent(use["id"], use["name"], False, "interrupted", 0.0, "Interrupted")
                    continue
                block, output, deny_end = task.result()
                results[id(use)] = block
                if output is not None:
                    new_messages.extend(output.new_messages)
                    new_messages.extend(instruction_reminders(self.ctx, use, block))
                end_turn = end_turn or deny_end
            if aborted:
                break
        ordered = [
            results.get(id(u)) or tool_result_block(u["id"], SKIPPED_TOOL_RESULT_MESSAGE, is_error=True)
            for u in uses
        ]
        yield BatchOutcome(ordered, new_messages, end_turn=end_turn or aborted, aborted=aborted)
