"""Agent: runs a sub-agent, a nested ReAct loop on one task, and returns its final report.

The child gets its own message history, its own session state (its own read state: what the parent
read is not "already read" for the child, and the reverse; same working directory), its own
replacement state and spill directory under the parent session (`<session>/agents/<id>/`, with the
child's transcript), a short system prompt of its own, and the parent's tools minus Agent, narrowed
by `tool_names`. Every tool call of the child passes the parent's permission gate and hooks (Stop
hooks do not run below depth 0), so the Agent call itself never asks. Abort cascades: the child uses
the parent's abort event. The child's token usage is added to the session's usage
(`SessionState.usage`) and recorded in the transcript (`agent_usage`), so resume counts it too.

Several Agent calls in one assistant message run in parallel when every tool they get is read-only;
otherwise they run one after the other. The result is `[Agent: <description>]\\n<last assistant
text>`, capped at 32 KB keeping the tail (the end of a report is where the conclusion is).
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from services.config import agent_environ, getenv
from services.hooks import NO_HOOKS, HookDecision, Hooks
from services.messages import Message, message_text, tool_uses, user_message
from services.models import resolve_model
from services.subagents import GENERAL_PURPOSE, AgentDef, agent_listing
from services.trace import trace
from services.usage import Usage
from tools.base import UNBOUNDED, SessionState, Tool, ToolContext, ToolError, ToolOutput

MAX_REPORT_CHARS = 32_768
DEFAULT_MAX_DEPTH = 1
DEFAULT_MAX_TURNS = 30
USAGE_RECORD = "agent_usage"

DESCRIPTION = """Launches a sub-agent: a fresh agent with its own context that works on one task on its own and returns a single report.

When to use it:
- Open-ended searches and investigations that would take many Grep/Glob/Read rounds ("find where X is configured and how it flows to Y"), so that the exploration does not fill your own context.
- Independent pieces of work that can run side by side: several Agent calls in one message run in parallel when they only use read-only tools.
When not to use it: reading one known file (use Read), finding a class by name (use Glob/Grep), or a task that needs the conversation so far.

How to use it:
- The sub-agent sees none of this conversation: `prompt` must be self-contained — the goal, what you already know, the files or names involved, and exactly what to report back (paths, line numbers, snippets, a yes/no answer).
- Say whether it should only research or also change code; its tool calls need the same permissions as yours.
- `description` is a 3-6 word label shown to the user.
- `tool_names` optionally narrows its tools (e.g. ["Read", "Grep", "Glob"] for a read-only investigation, which also lets several run in parallel). By default it gets all your tools except Agent.
- Its report comes back as the tool result; the user does not see it, so summarise what matters in your own reply."""


def _system_prompt(cwd: str) -> str:
    return (
        "You are a sub-agent of a coding agent. The parent agent gave you one task; do it on your own with "
        "the tools you have, then stop.\n\n"
        f"Working directory: {cwd}\n"
        f"Today's date: {time.strftime('%Y-%m-%d')}\n\n"
        "Guidelines:\n"
        "- The parent sees only your final message, none of your tool calls or results: make that message a "
        "complete, self-contained report of what you found or did, with absolute file paths, line numbers "
        "and short code snippets where they matter.\n"
        "- Be thorough in the work and concise in the report. Do not ask questions: nobody can answer them; "
        "state your assumptions instead.\n"
        "- Use several tool calls in one message when they are independent (they run in parallel).\n"
        "- Do not create files unless the task needs them; never write reports or notes to files."
    )


def max_depth_from_env() -> int:
    raw = (getenv("AGENT_MAX_DEPTH") or "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_MAX_DEPTH
    except ValueError:
        return DEFAULT_MAX_DEPTH


def cap_tail(text: str, limit: int = MAX_REPORT_CHARS) -> str:
    """`text` cut to its last `limit` characters, with a marker that says how much was dropped."""
    if len(text) <= limit:
        return text
    marker = f"[… {len(text) - limit:,} earlier characters of the sub-agent's report omitted]\n"
    return marker + text[len(text) - limit :]


def replay_usage_records(target: Usage, records: list[dict[str, Any]]) -> None:
    """On resume: add the sub-agents' recorded usage back to the session's totals."""
    for rec in records:
        if rec.get("type") == USAGE_RECORD:
            target.add(rec.get("usage"), model=rec.get("model"), requests=rec.get("requests") or 0)


class _ChildHooks(Hooks):
    """The parent's tool hooks; a sub-agent's end runs SubagentStop (Stop is the main agent's)."""

    def __init__(self, parent: Hooks, agent: dict[str, Any] | None = None):
        self.parent = parent
        self.agent = agent or {}

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        return await self.parent.subagent_stop(last_assistant_text, stop_hook_active, self.agent)

    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        return await self.parent.pre_tool_use(name, input, tool_use_id)

    async def post_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str, result: Any, is_error: bool,
                            duration_ms: int | None = None) -> None:
        await self.parent.post_tool_use(name, input, tool_use_id, result, is_error, duration_ms)

    async def post_tool_use_failure(self, name: str, input: dict[str, Any], tool_use_id: str, error: str,
                                    is_interrupt: bool, duration_ms: int) -> HookDecision | None:
        return await self.parent.post_tool_use_failure(name, input, tool_use_id, error, is_interrupt, duration_ms)

    async def post_tool_batch(self, tool_calls: list[dict[str, Any]]) -> HookDecision | None:
        return await self.parent.post_tool_batch(tool_calls)


def _safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:80] or uuid.uuid4().hex[:12]


class _ChildRun:
    """One sub-agent run as its events arrive: its history, transcript, usage and last words."""

    def __init__(self, model: str, history: list[Message], child_dir: Any) -> None:
        from services.session import Transcript

        self.model = model
        self.history = history
        self.usage = Usage()
        self.transcript = Transcript(child_dir / "transcript.jsonl") if child_dir else None
        self.terminal: Any = None  # the loop's Terminal event, once it ends
        self.tool_calls = 0
        self.last_text = ""

    def write(self, record: dict[str, Any]) -> None:
        if self.transcript is not None:
            try:
                self.transcript.append(record)
            except OSError:
                pass

    def add_message(self, m: Message) -> None:
        self.history.append(m)
        self.write({"type": "message", "message": m})

    def on_event(self, event: Any) -> None:
        from services.events import (
            AssistantEvent,
            HistoryReplacedEvent,
            RecordEvent,
            Terminal,
            ToolResultsEvent,
            UserMessageEvent,
        )

        if isinstance(event, AssistantEvent):
            self.add_message(event.message)
            self.usage.add(event.message.get("usage"), model=self.model)
            self.tool_calls += len(tool_uses(event.message))
            self.last_text = message_text(event.message).strip() or self.last_text
        elif isinstance(event, ToolResultsEvent):
            for m in [event.message, *event.extra_messages]:
                self.add_message(m)
        elif isinstance(event, UserMessageEvent):
            self.add_message(event.message)
        elif isinstance(event, HistoryReplacedEvent):
            self.history = list(event.messages)
            self.write({"type": "history_replaced", "messages": self.history})
        elif isinstance(event, RecordEvent):
            self.write(event.record)
        elif isinstance(event, Terminal):
            self.terminal = event

    def finish(self, agent_id: str, started: float) -> None:
        t = self.terminal
        trace("agent.end", id=agent_id, reason=t.reason if t else "cancelled", turns=t.turns if t else 0,
              tool_calls=self.tool_calls, chars=len(self.last_text), input_tokens=self.usage.input_tokens,
              output_tokens=self.usage.output_tokens, seconds=f"{time.monotonic() - started:.2f}")
        if self.transcript is not None:
            self.transcript.close()


class AgentTool(Tool):
    name = "Agent"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 1, "description": "A short (3-6 words) label of the task."},
            "prompt": {
                "type": "string",
                "minLength": 1,
                "description": "The complete, self-contained task for the sub-agent and what it should report.",
            },
            "subagent_type": {"type": "string", "description": "The type of specialized agent to use for this task"},
            "tool_names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Optional: only these tools (by name) for the sub-agent. Default: all yours except Agent.",
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }
    max_result_chars = UNBOUNDED  # self-bounded: the report is capped at 32 KB

    def __init__(
        self,
        get_tools: Callable[[], list[Tool]],
        model: str | Callable[[], str],
        *,
        get_gate: Callable[[], Any] | None = None,
        get_hooks: Callable[[], Hooks] | None = None,
        get_compact: Callable[[], Any] | None = None,
        max_depth: int | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_tokens: int = 0,
        system_prompt: Callable[[str], str] = _system_prompt,
        agents: list[AgentDef] | None = None,
    ):
        self.get_tools = get_tools
        self.model = model
        self.get_gate = get_gate
        self.get_hooks = get_hooks
        self.get_compact = get_compact
        self.max_depth = max_depth if max_depth is not None else max_depth_from_env()
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        # Custom agents (`.claude/agents`, `--agents`): listed to the model in this tool's description.
        self.agents = list(agents or [])
        if any(a.source != "built-in" for a in self.agents):
            self.description = DESCRIPTION + "\n\n" + agent_listing(self.agents)

    def agent_def(self, input: dict[str, Any]) -> AgentDef | None:
        """The `subagent_type` asked for (None: the default agent); ToolError on an unknown one."""
        wanted = input.get("subagent_type")
        if not isinstance(wanted, str) or not wanted.strip() or wanted == GENERAL_PURPOSE:
            return None
        for a in self.agents:
            if a.name == wanted:
                return a
        known = ", ".join(a.name for a in self.agents) or GENERAL_PURPOSE
        raise ToolError(f"Agent type '{wanted}' not found. Available agents: {known}")

    # -- the tool set a child gets ---------------------------------------------------------------
    def child_tools(self, depth: int, tool_names: list[str] | None = None) -> list[Tool]:
        """The parent's tools for a child at `depth`: Agent only while deeper nesting is allowed,
        narrowed by `tool_names` (ToolError on a name that is not available)."""
        nested_ok = depth < self.max_depth
        tools = [t for t in self.get_tools() if t.name != self.name or (nested_ok and t is self)]
        if tool_names is None:
            return tools
        by_name = {t.name: t for t in tools}
        unknown = [n for n in tool_names if n not in by_name]
        if unknown:
            why = f" ({self.name} cannot be nested deeper than {self.max_depth})" if self.name in unknown else ""
            raise ToolError(
                f"Unknown tool_names for the sub-agent: {', '.join(unknown)}{why}. "
                f"Available: {', '.join(sorted(by_name)) or 'none'}."
            )
        wanted = set(tool_names)
        return [t for t in tools if t.name in wanted]

    def _names(self, input: dict[str, Any]) -> list[str] | None:
        names = input.get("tool_names")
        asked = [n for n in names if isinstance(n, str)] if isinstance(names, list) else None
        try:
            agent = self.agent_def(input)
        except ToolError:
            agent = None
        if agent is None or agent.tools is None:
            return asked
        # The agent file's `tools:` bound what it gets; names this session does not have are left out.
        have = {t.name for t in self.get_tools()}
        allowed = [n for n in agent.tools if n in have and n != self.name]
        return [n for n in asked if n in allowed] if asked is not None else allowed

    # The Agent call itself changes nothing and never asks: each of the child's calls passes the gate.
    read_only = True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        try:
            tools = self.child_tools(1, self._names(input))
        except Exception:
            return False
        for t in tools:
            if t is self:
                continue
            try:
                if not t.is_read_only({}):
                    return False
            except Exception:
                return False
        return True

    def describe(self, input: dict[str, Any]) -> str:
        d = input.get("description")
        return f"Agent {d}" if isinstance(d, str) and d else "Agent"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    def _model(self) -> str:
        return self.model() if callable(self.model) else self.model

    # -- the run ---------------------------------------------------------------------------------
    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        description = input["description"].strip() or "task"
        depth = ctx.depth + 1
        if depth > self.max_depth:
            raise ToolError(
                f"Agent nesting depth exceeded (max {self.max_depth}): a sub-agent cannot start another one. "
                "Do this part of the work yourself."
            )
        agent = self.agent_def(input)
        tools = self.child_tools(depth, self._names(input))
        if ctx.run_loop is None:
            raise ToolError("Sub-agents are not available here (no loop in this tool context).")
        agent_id = _safe_id(ctx.tool_use_id) if ctx.tool_use_id else uuid.uuid4().hex[:12]
        child_dir = (ctx.session_dir / "agents" / agent_id) if ctx.session_dir else None
        model, system, hooks = self._agent_setup(agent, ctx, agent_id, child_dir)
        run = _ChildRun(model, [await self._first_message(input["prompt"], hooks, agent_id, agent)], child_dir)
        params = self._loop_params(run, ctx, depth, child_dir, system, tools, hooks)
        run.write({"type": "agent", "id": agent_id, "description": description, "depth": depth, "model": model,
                   "agent_type": agent.name if agent else GENERAL_PURPOSE,
                   "tools": [t.name for t in tools], "parent_tool_use_id": ctx.tool_use_id,
                   "created_at": time.time()})
        run.write({"type": "message", "message": run.history[0]})
        trace("agent.start", id=agent_id, description=description, depth=depth, tools=len(tools))
        started = time.monotonic()
        if ctx.session.usage is not None:
            ctx.session.usage.running.append(run.usage)
        try:
            async with contextlib.aclosing(ctx.run_loop(**params)) as events:
                async for event in events:
                    run.on_event(event)
        finally:
            self._roll_up(ctx, run.usage)
            run.finish(agent_id, started)
        return self._result(description, run.terminal, run.last_text, run.tool_calls, run.usage)

    @staticmethod
    async def _first_message(prompt: str, hooks: _ChildHooks, agent_id: str, agent: AgentDef | None) -> Message:
        """The sub-agent's prompt, with what SubagentStart hooks add (Claude Code's event) after it."""
        started = await hooks.parent.subagent_start(agent_id, agent.name if agent else GENERAL_PURPOSE)
        if started is None or not started.additional_context:
            return user_message(prompt)
        note = f"SubagentStart hook additional context: {started.additional_context}"
        return user_message([{"type": "text", "text": prompt}, {"type": "text", "text": note}])

    def _loop_params(self, run: _ChildRun, ctx: ToolContext, depth: int, child_dir: Any, system: str,
                     tools: list[Tool], hooks: _ChildHooks) -> dict[str, Any]:
        """The nested loop's arguments: the child's own state and context, the parent's gate and abort."""
        from services.compact.options import CompactOptions
        from services.compact.state import ContentReplacementState
        from tools.permissions import PermissionGate

        tracker = ctx.session.instructions  # nested files and path rules join a sub-agent too
        child_state = SessionState(cwd=ctx.session.cwd, usage=run.usage,
                                   instructions=tracker.fork() if tracker is not None else None)
        child_ctx = ToolContext(
            session=child_state,
            project_root=ctx.project_root,
            abort=ctx.abort,  # abort cascades
            session_id=ctx.session_id,
            session_dir=child_dir,
            depth=depth,
            run_loop=ctx.run_loop,
        )
        return dict(
            messages=list(run.history),
            system=system,
            tools=tools,
            tool_context=child_ctx,
            model=run.model,
            max_tokens=self.max_tokens,
            max_turns=self.max_turns,
            gate=self.get_gate() if self.get_gate else PermissionGate(),
            hooks=hooks,
            compact=self.get_compact() if self.get_compact else CompactOptions.from_env(),
            replacement_state=ContentReplacementState(),
            autocompact_state={},
        )

    def _agent_setup(self, agent: AgentDef | None, ctx: ToolContext, agent_id: str,
                     child_dir: Any) -> tuple[str, str, _ChildHooks]:
        """The child's model, system prompt and hooks: the agent definition's, else the defaults."""
        model = resolve_model(agent.model, agent_environ()) if agent and agent.model not in ("", "inherit") else self._model()
        system = agent.system_prompt if agent and agent.system_prompt else self.system_prompt(str(ctx.session.cwd))
        hooks = _ChildHooks(self.get_hooks() if self.get_hooks else NO_HOOKS, {
            "agent_id": agent_id, "agent_type": agent.name if agent else GENERAL_PURPOSE,
            "agent_transcript_path": str(child_dir / "transcript.jsonl") if child_dir else ""})
        return model, system, hooks

    def _roll_up(self, ctx: ToolContext, usage: Usage) -> None:
        """The child's usage into the parent's totals, and a transcript record for resume (main agent)."""
        parent = ctx.session.usage
        if parent is not None and any(u is usage for u in parent.running):
            parent.running = [u for u in parent.running if u is not usage]
        if not usage.requests:
            return
        if parent is not None:
            parent.merge(usage)
        record = ctx.session.record
        if record is not None:
            with contextlib.suppress(Exception):
                record({"type": USAGE_RECORD, "tool_use_id": ctx.tool_use_id, "usage": usage.as_dict(),
                        "requests": usage.requests, "model": self._model()})

    def _result(self, description: str, terminal: Any, text: str, tool_calls: int, usage: Usage) -> ToolOutput:
        reason = terminal.reason if terminal is not None else "aborted"
        turns = terminal.turns if terminal is not None else 0
        summary = f"{turns} turns, {tool_calls} tool calls"
        head = f"[Agent: {description}]\n"
        if reason == "aborted":
            body = "Agent aborted" + (f" (partial report below)\n{cap_tail(text)}" if text else ".")
            return ToolOutput(head + body, is_error=True, summary="aborted")
        if reason in ("error", "loop_detected"):
            err = terminal.error if terminal is not None else ""
            body = f"Agent failed: {err or 'unknown error'}" + (f"\nLast report:\n{cap_tail(text)}" if text else "")
            return ToolOutput(head + body, is_error=True, summary="failed")
        if not text:
            return ToolOutput(head + f"Agent finished without text ({reason}).", is_error=reason != "completed",
                              summary=summary)
        note = ""
        if reason == "max_turns":
            note = f"\n[The sub-agent stopped after {turns} turns (its turn limit); the report may be incomplete.]"
        return ToolOutput(head + cap_tail(text) + note, summary=summary)
