"""Claude Code's headless mode: the `-p` output shapes and the SDK's stream-json control protocol.

`HeadlessRun` drives an engine for one or more prompts and turns loop events into Claude Code's events
(`system`/`init`, `assistant` one per content block, `user`, `stream_event`, `result`); the one-shot front
end (`agent/headless/oneshot.py`) uses it for a single prompt, `run_headless` for `--input-format stream-json`, where
stdin carries user messages and control requests (initialize, interrupt, set_permission_mode, set_model,
mcp_status) and the agent sends its own (can_use_tool for permission questions, hook_callback for the SDK's
hooks). Shapes were recorded from Claude Code 2.1 driven by the `claude-agent-sdk` package.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from agent import __version__
from agent.errors import silence_stdout
from agent.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from agent.headless.retry_events import api_retry_record
from agent.headless.thinking_events import ThinkingMeter, reports_thinking, with_updates
from agent.loop.factory import ResumeError, build_engine, load_resume_target, start_mcp
from agent.message_display import MessageDisplay
from agent.output_style import style_name, style_names
from agent.slash.output_style import output_style_answer, output_style_args
from services.budget import Budget
from services.config import agent_environ
from services.events import (
    AssistantEvent,
    NoticeEvent,
    RetryEvent,
    StreamEvent,
    Terminal,
    ToolEndEvent,
    ToolResultsEvent,
    ToolStartEvent,
    UserMessageEvent,
)
from services.hooks import ForwardingHooks, HookDecision, Hooks
from services.hooks.command import merge_pre, pre_tool_decision
from services.messages import Block, Message, message_text, to_api, user_message
from services.model_types import CallModel, ModelError, ModelRequest, TextDelta, ThinkingDelta
from services.models import resolve_model
from services.session import SessionLocked
from tools.permissions import PermissionRequest, PermissionResult

SUBTYPES = {
    "completed": "success",
    "max_turns": "error_max_turns",
    "error": "error_during_execution",
    "aborted": "error_during_execution",
    "budget": "error_max_budget_usd",
    # Stop reasons that end a turn: a refusal and a context window that stayed full are
    # errors; a reply cut at max_tokens keeps its text as `result` but says it is incomplete.
    "refusal": "error_during_execution",
    "context_window_exceeded": "error_during_execution",
    "max_tokens": "error_max_tokens",
    "loop_detected": "error_loop_detected",  # this agent's: Claude Code has no loop guard
}
TERMINAL_REASONS = {"completed": "completed", "max_turns": "max_turns", "error": "model_error",
                    "aborted": "aborted_streaming", "budget": "max_budget_usd", "refusal": "refusal",
                    "context_window_exceeded": "context_window_exceeded", "max_tokens": "max_tokens",
                    "loop_detected": "loop_detected"}
INTERRUPTED_TEXT = "[Request interrupted by user]"
SDK_SERVER_WAIT_S = 30.0  # at most, for the SDK host's own MCP servers before the first request


def new_uuid() -> str:
    return str(uuid.uuid4())


class JsonOut:
    """JSON lines on stdout; a closed pipe ends output quietly (the run itself goes on and is saved)."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stdout
        self.closed = False

    def __call__(self, obj: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.stream.write(json.dumps(obj, ensure_ascii=False) + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self.closed = True
            if self.stream is sys.stdout:
                silence_stdout()  # no "Exception ignored" from the exit-time flush


def _model_limits(model: str) -> tuple[int, int]:
    """(context window, max output tokens) from the model catalog."""
    from services import models
    from services.config import agent_environ

    return models.context_window(model, agent_environ()), models.max_output_tokens(model)


@dataclass
class _Tally:
    """What the result line says about a turn: its last text and stop reason, and its tool results
    (Claude Code's num_turns is 1 + the tool results of the task)."""

    last_text: str = ""
    last_stop: Any = None
    tool_results: int = 0


class HeadlessRun:
    """An engine driven without a terminal, reporting as Claude Code's `-p` mode does."""

    def __init__(self, inv: Any, engine: Any, mcp: Any, emit: Callable[[dict[str, Any]], None] | None):
        self.inv = inv
        self.engine = engine
        self.mcp = mcp
        self.emit = emit  # None: text or json output (nothing streamed)
        self.api_seconds = 0.0
        self.cost_before_turn = 0.0
        self.usage_before: dict[str, int] = {}
        self.budget_hit = False
        self.budget_meter: Budget | None = None  # the 80% warning, said once
        self._time_model_calls()
        # Thinking reported as Claude Code does in json/stream-json with --verbose (thinking_events.py).
        self.thinking: ThinkingMeter | None = None
        if reports_thinking(getattr(inv, "output_format", ""), bool(getattr(inv, "verbose", False))):
            self.thinking = ThinkingMeter()
            engine.config.thinking = with_updates(engine.config.thinking)

    # -- plumbing ---------------------------------------------------------------------------------
    def _time_model_calls(self) -> None:
        """Wrap the provider: time spent in model calls (`duration_api_ms`), raw events when asked."""
        self.engine.wrap_model(self._timed)

    def _timed(self, call: CallModel) -> CallModel:
        raw = self.inv.include_partial

        def timed(request: ModelRequest) -> AsyncIterator[Any]:
            async def gen() -> AsyncIterator[Any]:
                budget = self.inv.max_budget_usd
                if budget is not None and self.cost() >= budget:  # checked before each call: none is wasted
                    self.budget_hit = True
                    raise ModelError(f"Reached maximum budget (${budget})")
                self._budget_warning()
                started = time.monotonic()
                try:
                    async for event in call(replace(request, raw_events=True) if raw else request):
                        self._thinking(event)
                        yield event
                finally:
                    self.api_seconds += time.monotonic() - started

            return gen()

        return timed

    @property
    def session_id(self) -> str:
        return self.engine.session_id

    def _base(self) -> dict[str, Any]:
        return {"parent_tool_use_id": None, "session_id": self.session_id, "uuid": new_uuid()}

    def init_event(self) -> dict[str, Any]:
        mcp_servers = []
        if self.mcp is not None:
            # Servers start in the background: one still starting is "pending", as in Claude Code.
            mcp_servers = [{"name": name, "status": state if state in ("connected", "pending") else "failed"}
                           for name, state, _ in self.mcp.status()]
        return {
            "type": "system",
            "subtype": "init",
            "cwd": str(self.engine.config.cwd),
            "session_id": self.session_id,
            "tools": [t.name for t in self.engine.tools],
            "mcp_servers": mcp_servers,
            "model": self.engine.config.model,
            "permissionMode": self.engine.gate.mode,
            "slash_commands": [c.name for c in self.engine.custom_commands]
            + [s.name for s in self.engine.skills if s.name not in {c.name for c in self.engine.custom_commands}],
            "apiKeySource": "ANTHROPIC_API_KEY" if not self.inv.settings.mock else "none",
            "claude_code_version": __version__,
            "output_style": style_name(self.engine),
            "agents": [],
            "skills": [s.name for s in self.engine.skills],
            "plugins": [],
            "uuid": new_uuid(),
        }

    # -- one prompt ---------------------------------------------------------------------------------
    async def run(self, text: str, inject: list[Any] | None = None,
                  blocks: list[Any] | None = None) -> tuple[Terminal, dict[str, Any]]:
        started = time.monotonic()
        self.api_seconds = 0.0
        self.engine.gate.denials.clear()
        usage_before = self.engine.usage.as_dict()
        tally = _Tally()
        self.budget_hit = False
        terminal: Terminal | None = None
        try:
            display = MessageDisplay(self.engine.hooks)  # a hook may rewrite what is printed, per message
            async for ev in self.engine.run_turn(text, inject_before=inject or None, images=blocks or None):
                if isinstance(ev, AssistantEvent) and display.active():
                    ev = AssistantEvent(await display.whole(ev.message))
                if isinstance(ev, Terminal):
                    terminal = ev
                else:
                    self._event(ev, tally)
        except OSError:
            raise  # disk full, read-only home...: the entry-point guard names the path (agent/errors.py)
        except Exception as exc:  # a bug in a stage still ends with one result, not a traceback
            if self.inv.debug:
                import traceback

                traceback.print_exc()
            terminal = Terminal("error", 0, f"internal error: {type(exc).__name__}: {exc}")
        terminal = terminal or self.engine.last_terminal or Terminal("error", 0, "no result")
        reason = terminal.reason
        if self.budget_hit:
            reason = "budget"
        elif reason == "aborted" and self.emit is not None:
            self.emit({"type": "user", "message": {"role": "user", "content": [{"type": "text",
                       "text": INTERRUPTED_TEXT}]}, **self._base()})
        result = self._result(reason, terminal, tally.last_text, tally.last_stop, usage_before, started,
                              1 + tally.tool_results)
        return terminal, result

    def _event(self, ev: Any, tally: _Tally) -> None:
        """One event of the turn: written out (as Claude Code's stream-json does) and counted."""
        if isinstance(ev, AssistantEvent):
            t = message_text(ev.message)
            if t:
                tally.last_text = t
            tally.last_stop = ev.message.get("stop_reason") or tally.last_stop
            self._assistant(ev.message)
            if isinstance(self.emit, JsonOut) and self.emit.closed:
                self.engine.abort()  # nobody reads on: the reply is kept, no more is run
        elif isinstance(ev, ToolResultsEvent):
            tally.tool_results += sum(1 for b in ev.message.get("content") or [] if b.get("type") == "tool_result")
            for m in [ev.message, *ev.extra_messages]:
                self._user(m)
        elif isinstance(ev, UserMessageEvent):
            self._user(ev.message)
        elif isinstance(ev, StreamEvent):
            if self.emit is not None and self.inv.include_partial:
                self.emit({"type": "stream_event", "event": ev.event, **self._base()})
        elif isinstance(ev, RetryEvent):
            record = api_retry_record(ev, self.session_id)
            if record is not None and self.emit is not None:  # text and json: the notice on stderr says it
                self.emit(record)
        elif isinstance(ev, NoticeEvent):
            self._notice(ev)
        elif isinstance(ev, ToolStartEvent | ToolEndEvent):
            self._tool_line(ev)

    def _budget_warning(self) -> None:
        """Passing 80% of the budget: one line (stderr, or a stream-json `system` message), once."""
        if self.inv.max_budget_usd is None:
            return
        if self.budget_meter is None:
            self.budget_meter = Budget(self.inv.max_budget_usd)
        for line in self.budget_meter.notices(self.cost()):
            if self.emit is not None:
                self.emit({"type": "system", "subtype": "budget_warning", "message": line, **self._base()})
            else:
                sys.stderr.write(line + "\n")

    def cost(self) -> float:
        return self.engine.usage.spent(self.engine.config.model)

    def _assistant(self, message: Mapping[str, Any]) -> None:
        if self.emit is None:
            return
        msg_id = message.get("id") or f"msg_{uuid.uuid4().hex[:24]}"
        usage = message.get("usage") or {}
        for block in message.get("content") or []:
            thought = self.thinking.block_fields() if self.thinking and block.get("type") == "thinking" else {}
            self.emit({
                "type": "assistant",
                "message": {"id": msg_id, "type": "message", "role": "assistant",
                            "model": self.engine.config.model, "content": [block], "stop_reason": None,
                            "stop_sequence": None, "usage": usage, "context_management": None},
                **self._base(), **thought,
            })

    def _thinking(self, ev: Any) -> None:
        """A model event seen on its way to the loop: thinking deltas counted, thinking over at text."""
        if self.thinking is None:
            return
        if isinstance(ev, TextDelta):
            self.thinking.stop()
            return
        if not isinstance(ev, ThinkingDelta):
            return
        tokens = self.thinking.delta(ev.text)
        if tokens is not None and self.emit is not None:
            self.emit({**tokens, **self._base()})

    def _user(self, message: Mapping[str, Any]) -> None:
        """A user event; tool results one event each, as Claude Code sends them."""
        if self.emit is None or (message.get("meta") or {}).get("deferred_tools"):
            return  # the deferred tools' list is context, not a turn (Claude Code does not emit it either)
        (clean,) = to_api([cast(Message, message)])
        content = clean.get("content")
        if isinstance(content, list) and len(content) > 1 and all(b.get("type") == "tool_result" for b in content):
            for block in content:
                self.emit({"type": "user", "message": {**clean, "content": [block]}, **self._base()})
            return
        self.emit({"type": "user", "message": clean, **self._base()})

    def _notice(self, ev: NoticeEvent) -> None:
        # text and json: every notice on stderr, retries included (a wait is never silent); stream-json
        # says retries in its api_retry records (the RetryEvent) and nothing else on stderr.
        if self.emit is None:
            sys.stderr.write(f"[{ev.kind}] {ev.text}\n")

    def _tool_line(self, ev: Any) -> None:
        if self.emit is not None or not self.inv.verbose:
            return
        if isinstance(ev, ToolStartEvent):
            sys.stderr.write(f"[tool] {_label(ev.name, ev.input)}\n")
        elif not ev.ok:
            sys.stderr.write(f"[tool] {ev.name} error: {ev.error or ev.summary}\n")

    def local_command(self, command: str, args: str, answer: str) -> dict[str, Any]:
        """A command answered here without the model (`/output-style`), in Claude Code 2.1.332's shapes
        (recorded): stream-json gets a synthetic assistant message with the answer; the result names the
        command in `local_command`."""
        if self.emit is not None:
            usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0}
            self.emit({"type": "assistant", "message": {
                "id": new_uuid(), "model": "<synthetic>", "role": "assistant", "type": "message",
                "stop_reason": "end_turn", "stop_sequence": None, "usage": usage,
                "content": [{"type": "text", "text": answer}]}, **self._base(),
                "local_command_run": {"command": command, "args": args}})
        result = self._result("completed", Terminal("completed", 0), answer, None, self.engine.usage.as_dict(),
                              time.monotonic(), 0)
        result["stop_reason"] = None
        result["local_command"] = command.replace("-", "_")
        return result

    def _result(self, reason: str, terminal: Terminal, text: str, stop: Any, usage_before: dict[str, int],
                started: float, turns: int) -> dict[str, Any]:
        model = self.engine.config.model
        after = self.engine.usage.as_dict()
        turn_usage = {k: after.get(k, 0) - usage_before.get(k, 0) for k in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")}
        window, max_out = _model_limits(model)
        cost = self.cost()
        obj: dict[str, Any] = {
            "type": "result",
            "subtype": SUBTYPES[reason],
            "is_error": reason != "completed",
            "api_error_status": None,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "duration_api_ms": round(self.api_seconds * 1000),
            "num_turns": turns,
        }
        if reason in ("completed", "max_tokens"):
            obj["result"] = text
        elif reason in ("error", "refusal", "context_window_exceeded", "loop_detected"):  # the error's text
            obj["result"] = terminal.error or "error"
        obj.update({
            "stop_reason": terminal.stop_reason or (stop if reason == "completed" else None),
            "session_id": self.session_id,
            "total_cost_usd": round(cost, 6),
            "usage": {**turn_usage, "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                      "service_tier": "standard",
                      "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                         "ephemeral_5m_input_tokens": turn_usage["cache_creation_input_tokens"]}},
            "modelUsage": _model_usage(self.engine.usage, model, window, max_out),
            "permission_denials": list(self.engine.gate.denials),
            "terminal_reason": TERMINAL_REASONS[reason],
            "uuid": new_uuid(),
        })
        if reason != "completed":
            obj["errors"] = [_error_text(reason, terminal, self.engine.config.max_turns, self.inv.max_budget_usd)]
        if self.inv.json_schema is not None and reason == "completed":
            obj["structured_output"] = _structured(text)
        return obj


def _model_usage(usage: Any, model: str, window: int, max_out: int) -> dict[str, Any]:
    """Claude Code's modelUsage: per model that served a reply, its tokens and its own cost."""
    from services import models
    from services.config import agent_environ

    out: dict[str, Any] = {}
    for name, mu in usage.model_usage().items():
        out[name] = {"inputTokens": mu["inputTokens"], "outputTokens": mu["outputTokens"],
                     "cacheReadInputTokens": mu["cacheReadInputTokens"],
                     "cacheCreationInputTokens": mu["cacheCreationInputTokens"], "webSearchRequests": 0,
                     "costUSD": mu["costUSD"], "contextWindow": models.context_window(name, agent_environ()),
                     "maxOutputTokens": models.max_output_tokens(name)}
    if not out and usage.requests:  # usage without a model (an old transcript): the current model's
        out[model] = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
                      "cacheReadInputTokens": usage.cache_read_input_tokens,
                      "cacheCreationInputTokens": usage.cache_creation_input_tokens, "webSearchRequests": 0,
                      "costUSD": round(usage.cost(model), 6), "contextWindow": window, "maxOutputTokens": max_out}
    return out


def _error_text(reason: str, terminal: Terminal, max_turns: int, budget: float | None) -> str:
    if reason == "max_turns":
        return f"Reached maximum number of turns ({max_turns})"
    if reason == "budget":
        return f"Reached maximum budget (${budget})"
    if reason == "aborted":
        return terminal.error if terminal.error and terminal.error != "interrupted" else INTERRUPTED_TEXT
    return terminal.error or "error"


def _structured(text: str) -> Any:
    """The final answer as JSON (the system prompt asked for it); the text itself when it is not JSON."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        return json.loads(body)
    except ValueError:
        return None


def _label(name: str, input: dict[str, Any]) -> str:
    for key in ("file_path", "path", "pattern", "command", "url", "query", "skill", "description", "message"):
        value = input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {value if len(value) <= 80 else value[:79] + '…'}"
    return name


# -- the engine, set up as the flags say --------------------------------------------------------------
async def open_engine(inv: Any, ask: Any = None, hooks: SdkHooks | None = None,
                      sdk_send: Any = None) -> tuple[Any, Any]:
    """(engine, mcp) for a headless run: resume/fork, MCP servers, the schema instruction. Raises ResumeError."""
    loaded = load_resume_target(inv.app.cwd, inv.continue_, inv.resume)
    mcp = await start_mcp(inv.app.cwd, extra=inv.app.mcp_configs, strict=inv.app.strict_mcp_config, opts=inv.app,
                          sdk_send=sdk_send)
    try:
        engine = build_engine(inv.app, mcp=mcp, ask=ask, wrap_hooks=hooks.wrap if hooks is not None else None)
        if loaded is not None:
            for warning in loaded.warnings:
                sys.stderr.write(f"warning: {warning}\n")
            try:  # one writer per session: a session in use is refused unless forked
                engine.resume(loaded, fork=(inv.app.session_id or new_uuid()) if inv.fork_session else False)
            except SessionLocked as exc:
                raise ResumeError(str(exc)) from None
    except BaseException:
        if mcp is not None:
            await mcp.close()
        raise
    return engine, mcp


# -- --input-format stream-json: the SDK's control protocol --------------------------------------------
class SdkHooks(ForwardingHooks):
    """The SDK's hook callbacks (registered by `initialize`), run through `hook_callback` requests,
    after the project's own hooks; every other event is the project's alone."""

    def __init__(self, session: ControlSession, registered: dict[str, Any]):
        super().__init__()
        self.session = session
        self.registered = registered or {}

    def wrap(self, inner: Hooks) -> SdkHooks:
        self.inner = inner
        return self

    def _ids(self, event: str, tool: str | None = None) -> list[str]:
        ids: list[str] = []
        for entry in self.registered.get(event) or []:
            if not isinstance(entry, dict):
                continue
            matcher = entry.get("matcher")
            if matcher in (None, "", "*") or (tool is not None and tool in str(matcher).split("|")):
                ids += [str(i) for i in entry.get("hookCallbackIds") or []]
        return ids

    async def _call(self, event: str, tool: str | None, data: dict[str, Any], tool_use_id: str | None) -> list[dict]:
        out = []
        for cid in self._ids(event, tool):
            payload = {"session_id": self.session.engine.session_id, "cwd": str(self.session.engine.config.cwd),
                       "permission_mode": self.session.engine.gate.mode, "hook_event_name": event, **data}
            with contextlib.suppress(Exception):
                out.append(await self.session.request({"subtype": "hook_callback", "callback_id": cid,
                                                       "input": payload, "tool_use_id": tool_use_id}))
        return out

    async def user_prompt_submit(self, prompt: str) -> HookDecision | None:
        decision = await self.inner.user_prompt_submit(prompt)
        if decision is not None and decision.action in ("deny", "stop"):
            return decision
        for answer in await self._call("UserPromptSubmit", None, {"prompt": prompt}, None):
            if answer.get("decision") == "block" or answer.get("continue") is False:
                return HookDecision("deny", str(answer.get("reason") or answer.get("stopReason") or ""))
        return decision

    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        """The project's hooks, then the SDK's callbacks, folded as Claude Code folds them (before the gate:
        deny, allow, ask, updatedInput, additionalContext)."""
        decision = await self.inner.pre_tool_use(name, input, tool_use_id)
        if decision is not None and decision.action == "deny":
            return decision
        for answer in await self._call("PreToolUse", name, {"tool_name": name, "tool_input": input,
                                                            "tool_use_id": tool_use_id}, tool_use_id):
            decision = merge_pre(decision, pre_tool_decision([answer]) if isinstance(answer, dict) else None)
            if decision is not None and decision.action == "deny":
                return decision
        return decision

    async def post_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str, result: Any,
                            is_error: bool, duration_ms: int | None = None) -> None:
        await self.inner.post_tool_use(name, input, tool_use_id, result, is_error, duration_ms)
        await self._call("PostToolUse", name, {"tool_name": name, "tool_input": input, "tool_use_id": tool_use_id,
                                               "tool_response": result}, tool_use_id)

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        decision = await self.inner.stop(last_assistant_text, stop_hook_active)
        for answer in await self._call("Stop", None, {"stop_hook_active": stop_hook_active}, None):
            if answer.get("decision") == "block" and decision is None:
                decision = HookDecision("block", str(answer.get("reason") or ""))
        return decision


class ControlSession:
    """One `--input-format stream-json` session: stdin read in the background, turns run one at a time."""

    def __init__(self, inv: Any):
        self.inv = inv
        self.emit = JsonOut()
        self.engine: Any = None
        self.run: HeadlessRun | None = None
        self.prompts: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.pending: dict[str, asyncio.Future] = {}
        self.hook_registry: dict[str, Any] = {}
        self.initialized = asyncio.Event()
        self.turn_running = False
        self.exit_code = EXIT_OK

    # -- requests we send -------------------------------------------------------------------------------
    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        rid = new_uuid()
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self.emit({"type": "control_request", "request_id": rid, "request": body})
        try:
            response = await fut
        finally:
            self.pending.pop(rid, None)
        if response.get("subtype") == "error":
            raise RuntimeError(str(response.get("error") or "control request failed"))
        return response.get("response") or {}

    async def ask(self, req: PermissionRequest) -> PermissionResult:
        """The permission question, asked of the SDK host (`can_use_tool`)."""
        tool_use_id = getattr(req, "tool_use_id", "") or ""
        suggestion = getattr(req, "always_rule", None)
        body = {
            "subtype": "can_use_tool",
            "tool_name": req.tool.name,
            "display_name": req.tool.name,
            "input": req.input,
            "description": req.input.get("description") if isinstance(req.input.get("description"), str) else req.label,
            "permission_suggestions": [{"type": "addRules", "rules": [_rule_suggestion(req.tool.name, suggestion)],
                                        "behavior": "allow", "destination": "localSettings"}] if suggestion else [],
            "blocked_path": None,
            "tool_use_id": tool_use_id,
        }
        if req.tool.name == "AskUserQuestion":  # as Claude Code 2.1.332 marks it (recorded)
            body["requires_user_interaction"] = True
        self._state("requires_action")
        try:
            answer = await self.request(body)
        except Exception as exc:
            return PermissionResult("deny", message=f"Permission check failed: {exc}")
        finally:
            self._state("running")
        if answer.get("behavior") == "allow":
            updated = answer.get("updatedInput")
            return PermissionResult("once", updated_input=updated if isinstance(updated, dict) else None)
        return PermissionResult("deny", message=str(answer.get("message") or "Permission denied."),
                                interrupt=bool(answer.get("interrupt")))

    async def _wait_sdk_servers(self, mcp: Any) -> None:
        """Servers the SDK host runs in its own process answer at once: their tools are in the first request
        (other servers join when ready, as in every front end)."""
        if mcp is None:
            return
        sdk = [name for name, server in mcp.servers.items() if server.config.transport == "sdk"]
        if sdk:
            await mcp.wait_ready(sdk, timeout=SDK_SERVER_WAIT_S)
            sync = getattr(self.engine.refresh_tools, "sync", None)
            if sync is not None:
                sync()

    async def mcp_message(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        """A JSON-RPC message to an MCP server the SDK host runs in its own process (type "sdk")."""
        answer = await self.request({"subtype": "mcp_message", "server_name": server, "message": message})
        response = answer.get("mcp_response")
        return response if isinstance(response, dict) else {}

    def _state(self, state: str) -> None:
        if self.inv.reads_session_state:
            self.emit({"type": "system", "subtype": "session_state_changed", "state": state,
                       "sdk_host_only": True, "uuid": new_uuid(), "session_id": self._session_id()})

    def _session_id(self) -> str:
        return self.engine.session_id if self.engine is not None else ""

    # -- requests we answer --------------------------------------------------------------------------------
    def _answer(self, rid: str, response: dict[str, Any] | None = None, error: str | None = None) -> None:
        body: dict[str, Any] = {"subtype": "error", "request_id": rid, "error": error} if error is not None else {
            "subtype": "success", "request_id": rid, "response": response or {}}
        self.emit({"type": "control_response", "response": body})

    def _control(self, msg: dict[str, Any]) -> None:
        rid = str(msg.get("request_id") or "")
        req: dict[str, Any] = msg["request"] if isinstance(msg.get("request"), dict) else {}
        sub = req.get("subtype")
        if sub == "initialize":
            hooks = req.get("hooks")
            self.hook_registry = hooks if isinstance(hooks, dict) else {}
            self.initialized.set()
            self._answer(rid, {"commands": [], "agents": [], "output_style": style_name(self.engine),
                               "available_output_styles": style_names(self.inv.app.cwd), "models": [],
                               "account": {"apiProvider": "firstParty"}, "pid": _pid(),
                               "claude_code_version": __version__,
                               "current_permission_mode": self.inv.app.permission_mode})
        elif sub == "interrupt":
            if self.engine is not None and self.turn_running:
                self.engine.abort()
            self._answer(rid, {"still_queued": []})
        elif sub == "set_permission_mode":
            from tools.permissions import MODES

            mode = req.get("mode")
            if mode not in MODES:
                self._answer(rid, error=f"unknown permission mode {mode!r}")
                return
            self.inv.app.permission_mode = mode
            if self.engine is not None:
                self.engine.gate.mode = mode
            self._answer(rid, {"mode": mode})
            self.emit({"type": "system", "subtype": "status", "status": None, "permissionMode": mode,
                       "uuid": new_uuid(), "session_id": self._session_id()})
        elif sub == "set_model":  # in order with the prompts (the session opens for it): hooks may refuse it
            self.prompts.put_nowait({"type": "set_model", "request_id": rid, "model": req.get("model")})
        elif sub == "mcp_status":
            servers = []
            mcp = self.run.mcp if self.run is not None else None
            if mcp is not None:
                servers = [{"name": n, "status": s if s in ("connected", "pending") else "failed"}
                           for n, s, _ in mcp.status()]
            self._answer(rid, {"mcpServers": servers})
        else:
            self._answer(rid, error=f"Unsupported control request subtype: {sub}")

    def _on_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            msg = json.loads(line)
        except ValueError:
            sys.stderr.write(f"warning: stdin: not a JSON line, ignored: {line[:120]}\n")
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "control_request":
            self._control(msg)
        elif kind == "control_response":
            response: dict[str, Any] = msg["response"] if isinstance(msg.get("response"), dict) else {}
            fut = self.pending.get(str(response.get("request_id") or ""))
            if fut is not None and not fut.done():
                fut.set_result(response)
        elif kind == "user":
            if self.inv.replay_user_messages:
                self.emit({**msg, "session_id": self._session_id(), "uuid": new_uuid(), "isReplay": True})
            self.prompts.put_nowait(msg)
        # keep_alive and other message types need no answer

    async def _read_stdin(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            raw = await reader.readline()
            if not raw:
                break
            self._on_line(raw.decode("utf-8", errors="replace"))
        for fut in self.pending.values():  # nobody can answer any more
            if not fut.done():
                fut.set_result({"subtype": "error", "error": "stdin closed"})
        self.prompts.put_nowait(None)

    # -- the session -----------------------------------------------------------------------------------------
    async def main(self) -> int:
        reader = asyncio.create_task(self._read_stdin())
        first = await self.prompts.get()
        try:
            if first is None:
                return EXIT_OK
            ask = self.ask if self.inv.permission_prompt_tool == "stdio" else None
            hooks = SdkHooks(self, self.hook_registry) if self.hook_registry else None
            try:
                self.engine, mcp = await open_engine(self.inv, ask=ask, hooks=hooks, sdk_send=self.mcp_message)
            except ResumeError as exc:
                sys.stderr.write(f"error: {exc}\n")
                return EXIT_ERROR
            self.run = HeadlessRun(self.inv, self.engine, mcp, self.emit)
            _install_signals(self.engine)
            await self._wait_sdk_servers(mcp)
            try:
                msg: dict[str, Any] | None = first
                while msg is not None:
                    await (self._set_model(msg) if msg.get("type") == "set_model" else self._turn(msg))
                    msg = await self.prompts.get()
            finally:
                await self.engine.end_session("other")
                self.engine.close()
                if mcp is not None:
                    await mcp.close()
        finally:
            reader.cancel()
        return self.exit_code

    async def _set_model(self, msg: dict[str, Any]) -> None:
        """The SDK's set_model, after the prompts sent before it: the PreModelSwitch hooks may refuse it
        (Claude Code's error response: its words, `blocked_by_hook`, the model kept)."""
        assert self.engine is not None
        requested = msg.get("model") if isinstance(msg.get("model"), str) else None
        model = resolve_model(requested, agent_environ()) if requested else self.inv.settings.model
        refused = await self.engine.switch_model(model, requested, "sdk")
        rid = str(msg.get("request_id") or "")
        if refused is not None:
            self.emit({"type": "control_response", "response": {
                "subtype": "error", "request_id": rid, "error": refused, "error_code": "blocked_by_hook",
                "model": self.engine.config.model}})
            return
        self.inv.settings.model = model
        self._answer(rid, {"model": model})

    async def _turn(self, msg: dict[str, Any]) -> None:
        assert self.run is not None
        text, inject = _prompt_of(msg)
        self._state("running")
        self.emit(self.run.init_event())
        self.turn_running = True
        try:
            result = await self._command_or_turn(text, inject)
        finally:
            self.turn_running = False
        self.emit(result)
        self.exit_code = EXIT_OK if not result["is_error"] else EXIT_ERROR
        if self.prompts.empty():
            self._state("idle")


    async def _command_or_turn(self, text: str, inject: list[Any]) -> dict[str, Any]:
        """One prompt; a custom command's `/name args` expanded first (a refused one is an error result)."""
        from agent.slash.custom import CommandError, command_model, custom_command_input

        assert self.run is not None
        style_args = output_style_args(text)
        if style_args is not None:  # a local command: answered without the model
            return self.run.local_command("output-style", style_args,
                                          output_style_answer(self.engine, self.inv, style_args))
        try:
            text, full, blocks, model = await custom_command_input(self.engine, self.inv, text, inject)
        except CommandError as exc:
            return self.run._result("error", Terminal("error", 0, str(exc)), "", None,
                                    self.engine.usage.as_dict(), time.monotonic(), 0)
        with command_model(self.engine, model):
            _, result = await self.run.run(text, full, blocks)
        return result


def _rule_suggestion(tool: str, rule: str) -> dict[str, Any]:
    inner = rule[len(tool) + 1 : -1] if rule.startswith(tool + "(") and rule.endswith(")") else None
    return {"toolName": tool, "ruleContent": inner} if inner else {"toolName": tool}


def _pid() -> int:
    import os

    return os.getpid()


def _prompt_of(msg: dict[str, Any]) -> tuple[str, list[Any]]:
    """A stream-json user message: its text, and any other blocks (images) as a message before it."""
    message: dict[str, Any] = msg["message"] if isinstance(msg.get("message"), dict) else {}
    content = message.get("content")
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return "", []
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    others = [b for b in content if isinstance(b, dict) and b.get("type") != "text"]
    inject = [user_message(cast(list[Block], others), meta={"origin": "attachment"})] if others else []
    return "\n".join(t for t in texts if t), inject


def _install_signals(engine: Any) -> None:
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses > 1 or not engine.abort():
            raise SystemExit(EXIT_INTERRUPTED)

    # SIGTERM and SIGHUP end the run the way Ctrl-C does: the turn is aborted, its Bash process
    # groups are killed, MCP servers are closed on the way out, and the transcript stays valid.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_sigint)


def run_headless(inv: Any) -> int:
    return asyncio.run(ControlSession(inv).main())
