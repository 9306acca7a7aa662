"""QueryEngine: owns a session (history, decisions, read state, usage, transcript) and runs turns.

Only the engine writes the history: it applies the loop's events and appends each message and each
decision to the transcript as it happens. Front ends (CLI, REPL) talk to the engine, never to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.loop.deps import QueryDeps
from agent.loop.query import QueryParams, query
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.events import (
    AssistantEvent,
    Event,
    HistoryReplacedEvent,
    RecordEvent,
    Terminal,
    ToolResultsEvent,
    UserMessageEvent,
)
from services.hooks import DEFAULT_DENY_REASON, NO_HOOKS, Hooks, error_category
from services.loop_guard import LoopGuardOptions
from services.messages import Message, message_text, repair_pairing, text_block, user_message
from services.model_switch import CANNOT_ASK, SWITCH_BLOCKED, switch_fields
from services.model_types import CallModel
from services.private_fs import ensure_private_dir
from services.session import (
    FORMAT_VERSION,
    LoadedSession,
    SessionPaths,
    Transcript,
    new_session_id,
    repair_record,
    touch_index,
)
from services.thinking import ThinkingOptions
from services.trace import trace
from services.usage import Usage
from tools.agent_tool import replay_usage_records
from tools.base import SessionState, Tool, ToolContext
from tools.permissions import PermissionGate
from tools.todo import latest_todos


@dataclass
class EngineConfig:
    cwd: Path
    model: str
    max_turns: int = 100
    max_tokens: int = 0  # 0: the model's default (services/models.default_max_tokens)
    max_output_tokens: int = 0  # CLAUDE_CODE_MAX_OUTPUT_TOKENS (the setting, from the environment or a trusted .env)
    system_prompt: str = ""
    compact: CompactOptions = field(default_factory=CompactOptions)
    thinking: ThinkingOptions | None = None
    server_tools: list[str] = field(default_factory=list)
    loop_guard: LoopGuardOptions = field(default_factory=LoopGuardOptions)  # settings' `loopGuard`
    setup_trigger: str | None = None  # --init / --maintenance: Setup hooks before the first SessionStart


# Notices [(kind, text)] to show before a model call; may change the tool list in place (MCP).
ToolRefresher = Callable[[], list[tuple[str, str]]]


class QueryEngine:
    """A session: history, transcript, decisions, read state, usage; everything it is made of is
    passed in here (`agent/app.build_engine` is the one production factory)."""

    def __init__(
        self,
        config: EngineConfig,
        tools: list[Tool],
        deps: QueryDeps,
        gate: PermissionGate | None = None,
        hooks: Hooks = NO_HOOKS,
        session_id: str | None = None,
        persist: bool = True,
        *,
        prompt_for: Callable[[str], str] | None = None,
        refresh_tools: ToolRefresher | None = None,
        skills: list[Any] | None = None,
        prompt_builder: Any = None,
        custom_commands: list[Any] | None = None,
        agent_defs: list[Any] | None = None,
        notices_at_start: list[str] | None = None,
    ):
        self.config = config
        self.tools = tools
        self.deps = deps
        self.gate = gate or PermissionGate()
        self.hooks = hooks
        self.state = SessionState(cwd=config.cwd)
        self.usage = Usage()
        # Tools reach the session's usage (sub-agents add theirs) and its transcript (plans, usage records).
        self.state.usage = self.usage
        self.state.record = self.record
        self.last_usage: dict[str, int] = {}
        self.last_terminal: Terminal | None = None
        self._abort = asyncio.Event()
        self._running = False
        # The system prompt of a session id, rebuilt before each task (its inputs may have changed).
        self._prompt_for = prompt_for
        # A slash command's expansion, set by the front end that expanded it, for the prompt's hooks.
        self.pending_expansion: dict[str, Any] | None = None
        self.skills: list[Any] = list(skills or [])
        self.prompt_builder = prompt_builder
        tracker = getattr(prompt_builder, "tracker", None)
        if tracker is not None:  # instruction files that join on first touch: the tools announce them
            self.state.instructions = tracker
            tracker.history = lambda: self.messages
        # Keeps `tools` in step between model calls when MCP servers are configured.
        self.refresh_tools: ToolRefresher | None = refresh_tools
        # Claude Code's project files: .claude/commands (`/name args`), .claude/agents, and what was refused.
        self.custom_commands: list[Any] = list(custom_commands or [])
        self.agent_defs: list[Any] = list(agent_defs or [])
        self.notices_at_start: list[str] = list(notices_at_start or [])
        self._session_start_source: str | None = "startup"
        self._ended = ""  # the session whose SessionEnd hooks ran
        self._pending_hook_messages: list[Message] = []  # SessionStart context, kept past a denied prompt
        self._last_response_at: float | None = None  # when the last reply came (is the prompt cache warm?)
        self.persist = persist
        self._start_session(session_id or new_session_id())
        if prompt_for is not None:
            self.config.system_prompt = self.prompt_source()

    def prompt_source(self) -> str:
        """The system prompt for the current session (the configured one when no builder was given)."""
        return self._prompt_for(self.session_id) if self._prompt_for is not None else self.config.system_prompt

    def attach_mcp(self, refresher: ToolRefresher, instructions: Callable[[], str]) -> None:
        """MCP servers started after the engine (the REPL starts them once its screen is up): their tools
        join before each model call, their instructions follow the system prompt."""
        base = self._prompt_for or (lambda _sid: self.config.system_prompt)

        def with_instructions(session_id: str) -> str:
            system, extra = base(session_id), instructions()
            return f"{system}\n\n{extra}" if extra else system

        self._prompt_for, self.refresh_tools = with_instructions, refresher

    def wrap_model(self, wrap: Callable[[CallModel], CallModel]) -> None:
        """The provider seen through `wrap` (the headless run's timing and budget meter)."""
        self.deps = replace(self.deps, call_model=wrap(self.deps.call_model))

    def set_model(self, model: str, compact: CompactOptions | None = None) -> None:
        """`/model`: the model, and the compaction thresholds derived from its window."""
        self.config.model = model
        if compact is not None:
            self.config.compact = compact

    async def switch_model(self, to_model: str, requested: str | None, source: str,
                           compact: CompactOptions | None = None,
                           confirm: Callable[[str], Awaitable[bool]] | None = None) -> str | None:
        """A model switch with Claude Code's PreModelSwitch/PostModelSwitch hooks: None when switched, else
        why not (a hook denied it, or asked and nobody confirmed). `source`: "command" or "sdk"."""
        since = time.monotonic() - self._last_response_at if self._last_response_at is not None else None
        fields = switch_fields(self.config.model, to_model, requested, source, self.last_usage, since)
        decision = await self.hooks.pre_model_switch(fields)
        if decision is not None and decision.action == "deny":
            return SWITCH_BLOCKED + (decision.reason or DEFAULT_DENY_REASON)
        if decision is not None and decision.permission == "ask":
            if confirm is None:
                return SWITCH_BLOCKED + CANNOT_ASK
            if not await confirm(decision.reason):
                return SWITCH_BLOCKED + "not confirmed"
        self.set_model(to_model, compact)
        after = await self.hooks.post_model_switch(fields)
        if after is not None and after.additional_context:  # joins the next prompt, for the new model
            note = f"PostModelSwitch hook additional context: {after.additional_context}"
            self._pending_hook_messages.append(user_message(note, meta={"hook": "PostModelSwitch"}))
        return None

    # -- session lifecycle -------------------------------------------------------------------
    def _start_session(self, session_id: str) -> None:
        self.session_id = session_id
        self.paths = SessionPaths.for_session(self.config.cwd, session_id)
        self.transcript = Transcript(self.paths.transcript, lock=True, persist=self.persist)
        self.messages: list[Message] = []
        self.replacement_state = ContentReplacementState()
        self.autocompact_state: dict[str, Any] = {}
        self.state.read_state.clear()
        self.state.todos = None
        self._header_written = False

    def _write(self, record: dict[str, Any], sync: bool = False) -> None:
        if not self._header_written:
            header = {
                "type": "session",
                "version": FORMAT_VERSION,
                "session_id": self.session_id,
                "cwd": str(self.config.cwd),
                "model": self.config.model,
                "created_at": time.time(),
                "pid": os.getpid(),
            }
            self.transcript.append(header)
            self._header_written = True
            touch_index(self.paths.transcript)
        self.transcript.append(record, sync=sync)

    def record(self, record: dict[str, Any]) -> None:
        """Append a non-message record (a decision, a plan update...) to the transcript."""
        self._write(record)

    def append_message(self, message: Message) -> None:
        self.messages.append(message)
        # Messages are the turn boundaries: each is on disk (fsync) before the front end shows it.
        self._write({"type": "message", "message": message}, sync=True)

    def replace_history(self, messages: list[Message]) -> None:
        self.messages = list(messages)
        self.replacement_state.history_replaced()  # a compaction boundary voids position-based decisions
        self._write({"type": "history_replaced", "messages": self.messages})

    def compacted(self, messages: list[Message]) -> None:
        """/compact's summary in place of the history: the summarised reads and the last usage report
        no longer describe what the model sees, except the files re-attached from disk."""
        self.replace_history(messages)
        self._session_start_source = "compact"  # SessionStart hooks run again, with source "compact"
        attached = {(m.get("meta") or {}).get("path") for m in messages}
        for path in [p for p in self.state.read_state if p not in attached]:
            del self.state.read_state[path]
        self.last_usage = {}

    async def end_session(self, reason: str) -> None:
        """SessionEnd hooks, once per session (reason "clear", "prompt_input_exit" or "other");
        a failing hook never stops the session from ending."""
        if self._ended == self.session_id:
            return
        self._ended = self.session_id
        try:
            await self.hooks.session_end(reason)
        except Exception as exc:  # noqa: BLE001 - hooks report their own failures; this is a last resort
            trace("hooks.session_end", error=f"{type(exc).__name__}: {exc}"[:200])

    def clear(self) -> None:
        """A new, empty conversation (a new session); session permission rules are kept."""
        self.transcript.close()
        self._start_session(new_session_id())
        self._session_start_source, self._pending_hook_messages = "clear", []

    def resume(self, loaded: LoadedSession, fork: bool | str = False) -> None:
        """Continue `loaded`: appending to its transcript under its lock (SessionLocked when another
        process holds it), or with `fork` (`--fork-session`; a string is the new id) as a new session that
        starts with a copy of its history, leaving the original as it was."""
        if not fork:
            # Take the lock before anything changes, so a refusal leaves this engine as it was.
            path = SessionPaths.for_session(self.config.cwd, loaded.session_id).transcript
            probe = Transcript(path, lock=True, persist=self.persist)
            probe.open()
        self.transcript.close()
        new_id = fork if isinstance(fork, str) else new_session_id()
        self._start_session(new_id if fork else loaded.session_id)
        self._session_start_source, self._pending_hook_messages = "resume", []
        self.messages = list(loaded.messages)
        self.replacement_state = ContentReplacementState.from_records(loaded.records)
        if fork:
            self._copy_for_fork(loaded)
        else:
            self.transcript = probe
            self._header_written = True  # appending to an existing transcript
            fix = repair_record(loaded)
            if fix is not None:
                self._write(fix, sync=True)
            touch_index(self.paths.transcript)
        for m in self.messages:
            if m.get("role") == "assistant":
                self.usage.add(m.get("usage"), model=(m.get("meta") or {}).get("model"))
                self.last_usage = m.get("usage") or self.last_usage
        replay_usage_records(self.usage, loaded.records)
        todos = latest_todos(self.messages, loaded.records)
        if todos is not None:
            self.state.todos = todos

    def _copy_for_fork(self, loaded: LoadedSession) -> None:
        """The fork's transcript starts as a byte copy of the whole lines the load read (the original is
        never touched, nor locked), then says where it came from and what the load repaired."""
        if not self.persist:
            return
        src = SessionPaths.for_session(self.config.cwd, loaded.session_id).transcript
        with open(src, "rb") as fh:
            data = fh.read(loaded.size)
        data = data[: data.rfind(b"\n") + 1]
        ensure_private_dir(self.paths.transcript.parent)
        fd = os.open(self.paths.transcript, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        self._header_written = bool(data)
        self._write({"type": "forked", "from": loaded.session_id, "at": time.time()}, sync=True)
        fix = repair_record(loaded)
        if fix is not None:
            self._write(fix, sync=True)
        touch_index(self.paths.transcript)

    @property
    def session_dir(self) -> Path:
        return self.paths.directory

    def abort(self) -> bool:
        if not self._running:
            return False
        self._abort.set()
        return True

    # -- turns -----------------------------------------------------------------------------
    def tool_context(self) -> ToolContext:
        return ToolContext(
            session=self.state,
            project_root=self.config.cwd,
            abort=self._abort,
            session_id=self.session_id,
            session_dir=self.paths.directory,
            run_loop=self._run_subloop,
        )

    def _run_subloop(self, **params: Any) -> AsyncIterator[Event]:
        """The loop with this engine's deps, for tools that run a sub-loop (the Agent tool)."""
        return query(QueryParams(**params), self.deps)

    async def run_turn(self, text: str, inject_before: list[Message] | None = None,
                       images: list[Any] | None = None) -> AsyncIterator[Event]:
        """Append the user's message (after any injected ones) and run the loop until it stops.

        `images` (API `image` blocks, pasted into the REPL's input) go in the user's message after its text,
        as Claude Code sends them."""
        if not text and not inject_before and not images:
            raise ValueError("run_turn needs user text or messages to inject")
        self._abort = asyncio.Event()
        self._running = True
        hook_context = self._pending_hook_messages
        try:
            blocked = await self._prompt_hooks(text, hook_context)
            await self.hooks.poll_files()  # files watched for FileChanged hooks, changed between turns
        except BaseException:
            self._running = False
            raise
        if blocked is not None:
            self.last_terminal = blocked
            self._running = False
            yield blocked
            return
        self._pending_hook_messages = []
        if self._prompt_for is not None:
            self.config.system_prompt = self.prompt_source()
        for m in [*hook_context, *(inject_before or [])]:
            self.append_message(m)
        if text or images:
            # No meta: the user's own words (every injected message carries a meta key saying where it came
            # from), which retain and autocompact keep verbatim (services/compact/retain.py: is_user_own).
            self.append_message(user_message([*([text_block(text)] if text else []), *(images or [])]))
            touch_index(self.paths.transcript, text)
        async with contextlib.aclosing(self._drive(self._query_params())) as events:  # closed with us
            async for event in events:
                yield event

    async def _prompt_hooks(self, text: str, hook_context: list[Message]) -> Terminal | None:
        """SessionStart once per session, then UserPromptSubmit (the typed text) and, for a command the front
        end expanded (`pending_expansion`), UserPromptExpansion; what they add joins `hook_context`. A
        Terminal when a hook blocks the prompt."""
        expansion, self.pending_expansion = self.pending_expansion, None
        if expansion is not None and expansion.pop("for_text", None) != text:
            expansion = None  # expanded for a prompt that was never sent (a refused turn)
        if self._session_start_source is not None:
            source, self._session_start_source = self._session_start_source, None
            await self._instructions_loaded()
            if self.config.setup_trigger and source == "startup":
                await self.hooks.setup(self.config.setup_trigger)
            started = await self.hooks.session_start(source)
            if started is not None and started.additional_context:
                note = f"SessionStart hook additional context: {started.additional_context}"  # Claude Code's label
                hook_context.append(user_message(note, meta={"hook": "SessionStart"}))
        if not text:
            return None
        decisions = [("UserPromptSubmit", await self.hooks.user_prompt_submit(
            str(expansion["prompt"]) if expansion else text))]
        if expansion:
            decisions.append(("UserPromptExpansion", await self.hooks.user_prompt_expansion(expansion)))
        for event, decision in decisions:
            if decision is not None and decision.action in ("deny", "stop"):
                return Terminal("aborted", 0, decision.reason or "Prompt blocked by a hook.")
            if decision is not None and decision.additional_context:
                label = "UserPromptSubmit hook context:\n" if event == "UserPromptSubmit" else \
                    "UserPromptExpansion hook additional context: "
                hook_context.append(user_message(label + decision.additional_context, meta={"hook": event}))
        return None

    async def init_only(self) -> None:
        """`--init-only`: the start of a session's hooks (Setup, then SessionStart), and nothing else."""
        await self._prompt_hooks("", [])

    async def _instructions_loaded(self) -> None:
        """Claude Code's InstructionsLoaded for each instruction file in the prompt from the start (an
        imported one names its importer); files met later are told by the tools' orchestration."""
        loaded = getattr(self.prompt_builder, "loaded", None)
        for f in loaded.files if loaded is not None else []:
            await self.hooks.observe("InstructionsLoaded", *f.hook_input())

    def _query_params(self) -> QueryParams:
        return QueryParams(
            messages=self.messages,
            system=self.config.system_prompt,
            tools=self.tools,
            tool_context=self.tool_context(),
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            max_output_tokens=self.config.max_output_tokens,
            max_turns=self.config.max_turns,
            gate=self.gate,
            hooks=self.hooks,
            compact=self.config.compact,
            replacement_state=self.replacement_state,
            autocompact_state=self.autocompact_state,
            refresh_tools=self.refresh_tools,
            thinking=self.config.thinking,
            loop_guard=self.config.loop_guard,
            server_tools=list(self.config.server_tools),
        )

    async def _drive(self, params: QueryParams) -> AsyncGenerator[Event, None]:
        """The loop over the history; whatever stops it, the history stays well-formed."""
        terminal: Terminal | None = None
        try:
            async for event in query(params, self.deps):
                self._apply(event)
                if isinstance(event, Terminal):
                    terminal = event
                    if event.reason == "error":  # Claude Code's StopFailure, before the error is reported
                        await self._stop_failure(event.error)
                yield event
        finally:
            # Whatever stopped us (cancellation included), every tool_use keeps its tool_result.
            fix = repair_pairing(self.messages)
            if fix is not None:
                self.append_message(fix)
            self._running = False
            if terminal is None:
                terminal = Terminal("aborted", 0, "interrupted")
            self.last_terminal = terminal

    async def _stop_failure(self, error: str) -> None:
        last = next((message_text(m) for m in reversed(self.messages) if m.get("role") == "assistant"), "")
        try:
            await self.hooks.stop_failure(error_category(error), error, last)
        except Exception as exc:  # noqa: BLE001 - a hook never hides the error itself
            trace("hooks.stop_failure", error=f"{type(exc).__name__}: {exc}"[:200])

    def _apply(self, event: Event) -> None:
        if isinstance(event, AssistantEvent):
            self.append_message(event.message)
            usage = event.message.get("usage")
            if usage:
                self.usage.add(usage, model=(event.message.get("meta") or {}).get("model") or self.config.model)
                self.last_usage = usage
                self._last_response_at = time.monotonic()
        elif isinstance(event, ToolResultsEvent):
            self.append_message(event.message)
            for m in event.extra_messages:
                self.append_message(m)
        elif isinstance(event, UserMessageEvent):
            self.append_message(event.message)
        elif isinstance(event, HistoryReplacedEvent):
            self.replace_history(event.messages)
        elif isinstance(event, RecordEvent):
            self.record(event.record)

    def close(self) -> None:
        """The session ends: background tasks are killed, the transcript is closed."""
        tasks = self.state.background_tasks
        if tasks is not None:
            tasks.kill_all()
        self.transcript.close()
