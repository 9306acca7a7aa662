"""The slash-command router, shared by every front end: one router, so a command
behaves the same in the REPL and in one-shot runs.

`CommandRouter.register(name, handler, help, aliases)` adds a command; later features register
`/<skill-id>`, `/<server>:<prompt>` and `/mcp` the same way. A handler is `handler(ctx, args)`, sync
or async, and returns a `CommandResult` (or None for "done, nothing else to do"). A line that starts
with `/` and names no command is reported as unknown and never sent to the model.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.loop.compact_context import build_autocompact_context, pipeline_env, tool_specs_for
from services.compact.autocompact import compact_now, summary_of
from services.compact.context_usage import context_usage, format_report, usage_tokens
from services.messages import Message
from services.models import (
    MOCK_MODEL,
    is_known,
    known_models_line,
    learn,
    lookup,
    not_recognized,
    safe_name,
    today_utc,
    wire_model,
)
from services.models import context_window as model_context_window

Handler = Callable[["CommandContext", str], "CommandResult | None | Awaitable[CommandResult | None]"]
Picker = Callable[[str, list[tuple[str, str]]], Awaitable[str | None]]


@dataclass
class CommandResult:
    exit: bool = False
    exit_code: int = 0
    # Run a turn after the command: (user text, messages to inject before it).
    run_turn: tuple[str, list[Message]] | None = None
    # Blocks after the turn's text in the user's message, and a model for that turn only (custom commands).
    blocks: list[Any] | None = None
    model: str = ""


@dataclass
class CommandContext:
    engine: Any  # agent.loop.engine.QueryEngine
    console: Console
    cwd: Path
    router: CommandRouter
    opts: Any = None  # agent.loop.factory.AppOptions, when the front end has one
    # Asks the user to pick one of [(value, label)]; None when the front end cannot ask.
    pick: Picker | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str | Text, style: str = "") -> None:
        self.console.print(text if isinstance(text, Text) else Text(text, style=style))


@dataclass
class Command:
    name: str
    handler: Handler
    help: str
    aliases: tuple[str, ...] = ()
    hidden: bool = False


class CommandRouter:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}

    def register(
        self, name: str, handler: Handler, help: str = "", aliases: tuple[str, ...] | list[str] = (), hidden: bool = False
    ) -> None:
        name = name.lstrip("/")
        cmd = Command(name, handler, help, tuple(a.lstrip("/") for a in aliases), hidden)
        self._commands[name] = cmd
        for alias in cmd.aliases:
            self._aliases[alias] = name

    def unregister(self, name: str) -> None:
        cmd = self._commands.pop(name.lstrip("/"), None)
        if cmd is not None:
            for alias in cmd.aliases:
                self._aliases.pop(alias, None)

    def get(self, name: str) -> Command | None:
        name = name.lstrip("/")
        return self._commands.get(name) or self._commands.get(self._aliases.get(name, ""))

    def commands(self) -> list[Command]:
        return [c for c in self._commands.values() if not c.hidden]

    def names(self) -> list[str]:
        """Every name and alias, for completion."""
        return sorted([*self._commands, *self._aliases])

    @staticmethod
    def is_command(line: str) -> bool:
        stripped = line.lstrip()
        return stripped.startswith("/") and len(stripped) > 1 and not stripped.startswith("//")

    @staticmethod
    def split(line: str) -> tuple[str, str]:
        stripped = line.strip()[1:]
        name, _, args = stripped.partition(" ")
        if "\n" in name:
            name, _, rest = name.partition("\n")
            args = rest + (" " + args if args else "")
        return name, args.strip()

    async def dispatch(self, line: str, ctx: CommandContext) -> CommandResult:
        name, args = self.split(line)
        cmd = self.get(name)
        if cmd is None:
            if ":" in name:
                ctx.say(f"Unknown command: /{name} (no MCP prompt by that name). Type /help for the list.", "yellow")
            else:
                ctx.say(f"Unknown command: /{name}. Type /help for the list.", "yellow")
            return CommandResult()
        result = cmd.handler(ctx, args)
        if inspect.isawaitable(result):
            result = await result
        return result or CommandResult()


# -- helpers -----------------------------------------------------------------------------------
def context_window(engine: Any) -> int:
    return int(getattr(engine.config.compact, "context_window_tokens", 200_000) or 200_000)


def context_tokens(engine: Any) -> tuple[int, bool]:
    """Tokens in the context now: from the last response's usage when known, else an estimate."""
    if engine.messages:
        used = usage_tokens(engine.last_usage)
        if used:
            return used, True
    from services.tokens import estimate_tokens

    return estimate_tokens(engine.messages) + len(engine.config.system_prompt) // 4, False


def context_percent(engine: Any) -> float:
    """The share of the window in use, one decimal under 10% (a 1M window is 0% for a long while)."""
    used, _ = context_tokens(engine)
    share = used * 100 / max(1, context_window(engine))
    return round(share, 1) if share < 10 else float(round(share))


def percent_label(value: float) -> str:
    return f"{value:g}"


# -- built-ins ---------------------------------------------------------------------------------
def cmd_transcript(ctx: CommandContext, args: str) -> None:
    from agent.repl.transcript_view import show_transcript  # rich Markdown and friends: loaded when asked

    show_transcript(ctx, args)


def cmd_help(ctx: CommandContext, args: str) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for cmd in ctx.router.commands():
        names = "/" + cmd.name + "".join(f", /{a}" for a in cmd.aliases)
        table.add_row(Text(names), Text(cmd.help))  # Text: "[args]" hints are not rich markup
    ctx.console.print(Text("Commands:", style="bold"))
    ctx.console.print(table)
    ctx.console.print(
        Text(
            "Keys: Enter sends · Alt-Enter, Ctrl-J or \\ then Enter: new line · Tab completes /commands and @files "
            "· Up/Down history · Ctrl-R search · Shift+Tab cycles default/acceptEdits/plan · Ctrl-C or Esc "
            "interrupts (twice at an empty prompt exits) · Ctrl-D exits · type ahead while a turn runs: Enter "
            "queues it · !command runs in bash · # note saves to CLAUDE.md",
            style="dim",
        )
    )


async def cmd_clear(ctx: CommandContext, args: str) -> None:
    await ctx.engine.end_session("clear")
    ctx.engine.clear()
    ctx.say(f"Started a new conversation (session {ctx.engine.session_id}).", "dim")


async def cmd_compact(ctx: CommandContext, args: str) -> None:
    engine = ctx.engine
    tctx = engine.tool_context()
    specs = tool_specs_for(engine.tools, list(engine.config.server_tools))
    actx = build_autocompact_context(
        engine.config.system_prompt, engine.config.model, engine.deps.call_model, engine.config.compact,
        engine.autocompact_state, specs, engine.replacement_state,
        pipeline_env(engine.tools, tctx, engine.config.system_prompt, specs), engine.deps.microcompact, tctx,
    )
    before = context_percent(engine)
    await engine.hooks.pre_compact("manual", args or None)
    try:
        result = await compact_now(list(engine.messages), actx, args or None)
    except Exception as exc:
        ctx.say(f"Compaction failed: {exc}", "red")
        return
    await engine.hooks.post_compact("manual", summary_of(result.messages))
    for rec in result.records:
        engine.record(rec)
    engine.compacted(list(result.messages))
    after = context_percent(engine)
    for kind, text in result.notices:
        if kind != "summarised":  # its percentages are estimates; the line below gives the billed ones
            ctx.say(f"· {text}", "dim")
    what = f"summarised {result.summarised} earlier message{'s' if result.summarised != 1 else ''}"
    if after == before:  # react-agent-mini says so rather than print a change that did not happen
        ctx.say(f"Compacted the conversation: {what} (usage unchanged: ctx ~{percent_label(after)}%).")
    else:
        ctx.say(f"Compacted the conversation: {what} (ctx ~{percent_label(before)}% -> ctx ~{percent_label(after)}%).")


def cmd_context(ctx: CommandContext, args: str) -> None:
    engine = ctx.engine
    report = context_usage(
        engine.config.system_prompt,
        [t.to_api() for t in engine.tools],
        engine.messages,
        engine.replacement_state,
        context_window(engine),
        engine.last_usage or None,
    )
    ctx.say(format_report(report))


def cmd_cost(ctx: CommandContext, args: str) -> None:
    u = ctx.engine.usage
    model = ctx.engine.config.model
    ctx.say(f"Requests: {u.requests}")
    ctx.say(f"Tokens in: {u.input_tokens}  out: {u.output_tokens}")
    ctx.say(f"Cache read: {u.cache_read_input_tokens}  cache write: {u.cache_creation_input_tokens}")
    models = u.model_usage()
    if len(models) > 1:  # each model's share, priced by the model that served it
        for name, mu in models.items():
            ctx.say(f"  {name}: in {mu['inputTokens']}  out {mu['outputTokens']}  ${mu['costUSD']:.4f}")
    ctx.say(f"Estimated cost: ${u.cost(model):.4f} ({', '.join(models) or model})")
    budget = getattr(ctx.engine, "budget", None)
    if budget is not None and budget.limit is not None:
        ctx.say(budget.status(u.cost(model)))


async def cmd_model(ctx: CommandContext, args: str) -> None:
    """Show the model, or switch to another after checking it: a catalog name at once, any other
    name only when the endpoint serves it (services/model_check.py); a typo is refused with the
    list of known models. Retirement and remap notices are said in Claude Code's words."""
    from services.config import agent_environ
    from services.models import legacy_target, model_notices, resolve_model, today_utc

    engine = ctx.engine
    today = today_utc()
    if not args:
        ctx.say(f"Current model: {describe_model(engine.config.model)}")
        ctx.say(known_models_line(today), "dim")
        return
    env = agent_environ()
    requested = resolve_model(args.split()[0], env)
    if not is_known(requested) and not await _endpoint_serves(ctx, requested):
        return
    refused = await _switch_model(ctx, legacy_target(requested, env) or requested, args.split()[0])
    if refused is not None:
        ctx.say(refused, "yellow")
        return
    for notice in model_notices(requested, today, env):
        ctx.say(notice, "yellow")
    ctx.say(f"Set model to {describe_model(engine.config.model)}")


def describe_model(model: str) -> str:
    known = lookup(model)
    shown = safe_name(model)  # a name from a settings file or the prompt: id characters only
    return f"{known.display_name} ({shown})" if known is not None and known.display_name else shown


async def _endpoint_serves(ctx: CommandContext, model: str) -> bool:
    """Asks the endpoint about a name outside the catalog; says why when it is refused."""
    from services.model_check import check_model

    today = today_utc()
    offline = getattr(getattr(ctx.opts, "settings", None), "mock", False) is True
    if offline or ctx.engine.config.model == MOCK_MODEL:  # the offline model has no endpoint to ask
        ctx.say(not_recognized(model, today), "red")
        ctx.say(known_models_line(today), "dim")
        return False
    from agent.model.anthropic import check_client

    wire, _ = wire_model(model)
    async with check_client() as client:
        result = await check_model(client, wire)
    if result.verdict == "not_served":
        ctx.say(not_recognized(model, today), "red")
        ctx.say(known_models_line(today), "dim")
        return False
    if result.verdict == "unknown":
        ctx.say(f"Could not check {safe_name(model)} against the endpoint ({result.detail}); using it as given.",
                "yellow")
    elif result.window or result.max_tokens:  # the Models API's limits; a probe tells none (window assumed)
        learn(model, result.window, result.max_tokens)
    return True


async def _switch_model(ctx: CommandContext, model: str, requested: str) -> str | None:
    """The engine's model, and the window-derived compaction thresholds with it, unless a PreModelSwitch
    hook refuses (its words are returned); a hook that asks is answered here."""
    from services.compact.options import CompactOptions
    from services.config import agent_environ

    async def confirm(reason: str) -> bool:
        if ctx.pick is None:
            return False
        question = f"Switch to {safe_name(model)}?" + (f" ({reason})" if reason else "")
        return await ctx.pick(question, [("yes", "Yes, switch"), ("no", "No, keep the current model")]) == "yes"

    compact = CompactOptions.from_env(model_window=model_context_window(model, agent_environ()))
    refused = await ctx.engine.switch_model(model, requested, "command", compact,
                                            confirm if ctx.pick is not None else None)
    if refused is None and ctx.opts is not None and getattr(ctx.opts, "settings", None) is not None:
        ctx.opts.settings.model = model
    return refused


def cmd_permissions(ctx: CommandContext, args: str) -> None:
    from agent.slash.permissions import cmd_permissions as show_or_change

    show_or_change(ctx, args)


def cmd_status(ctx: CommandContext, args: str) -> None:
    engine = ctx.engine
    ctx.say(f"Session: {engine.session_id}")
    ctx.say(f"Transcript: {engine.paths.transcript}")
    ctx.say(f"Working directory: {ctx.cwd}")
    ctx.say(f"Model: {describe_model(engine.config.model)}")
    from services.thinking import describe

    ctx.say(f"Thinking: {describe(engine.config.model, getattr(engine.config, 'thinking', None))}")
    ctx.say(f"Permission mode: {engine.gate.mode}")
    ctx.say(f"Messages: {len(engine.messages)}")
    ctx.say(f"ctx ~{percent_label(context_percent(engine))}%")


KIND_LABELS = {"User": "user", "Project": "project", "Local": "local"}


def _instruction_line(cwd: Path, f: Any, note: str = "") -> str:
    """One loaded file: its kind, its path (relative to the project when inside), size, where from."""
    try:
        shown = str(Path(f.path).relative_to(cwd))
    except ValueError:
        shown = str(f.path)
    extra = [f"{len(f.content)} chars"]
    if f.parent is not None:
        extra.append(f"imported by {Path(f.parent).name}")
    if f.globs:
        extra.append("paths: " + ", ".join(f.globs))
    if note:
        extra.append(note)
    return f"  {KIND_LABELS.get(f.kind, f.kind):8} {shown} ({'; '.join(extra)})"


def cmd_memory(ctx: CommandContext, args: str) -> None:
    """What the model was given: the instruction files in Claude Code's order, the rules and nested files
    that joined since, the ones still waiting for a matching file, and the agent memory file."""
    builder = getattr(ctx.engine, "prompt_builder", None)
    loaded = getattr(builder, "loaded", None)
    tracker = getattr(builder, "tracker", None)
    files = list(loaded.files) if loaded else []
    joined = list(tracker.joined) if tracker else []
    waiting = [r for r in (tracker.conditional if tracker else []) if r not in joined]
    if files or joined:
        ctx.say("Instruction files loaded:")
        for f in files:
            ctx.say(_instruction_line(ctx.cwd, f))
        for f in joined:
            ctx.say(_instruction_line(ctx.cwd, f, "joined when the model touched a file below it"))
    else:
        ctx.say("Instruction files: none loaded (CLAUDE.md, CLAUDE.local.md, .claude/rules/, "
                "~/.claude/CLAUDE.md; try /init).", "dim")
    for f in waiting:
        ctx.say(_instruction_line(ctx.cwd, f, "waiting for a matching file"), "dim")
    if builder is not None and not builder.trusted:
        ctx.say("This folder is not trusted: its instruction files are not loaded (`agent trust` trusts it).", "dim")
    memory = getattr(builder, "memory_path", None) or ctx.cwd / ".agents" / "memory" / "MEMORY.md"
    size = len(builder.memory.content or "") if builder is not None else 0
    state = f"{size} chars" if builder is not None and builder.memory.content is not None else "not created yet"
    ctx.say(f"Agent memory: {memory} ({state})")
    from agent.repl.memory_note import claude_dir_of, note_targets

    ctx.say("`# note` saves to (Enter = 1):")
    for i, t in enumerate(note_targets(ctx.cwd, claude_dir_of(ctx.engine)), 1):
        written = t.path.stat().st_size if t.path.is_file() else None
        ctx.say(f"  {i}. {t.path}  ({'not created yet' if written is None else f'{written} bytes'})")


def cmd_init(ctx: CommandContext, args: str) -> CommandResult:
    from agent.loop.context import init_prompt, init_target_file

    target = init_target_file(ctx.cwd)
    ctx.say(f"Asking the model to write {target}…", "dim")
    return CommandResult(run_turn=(init_prompt(args, ctx.cwd), []))


def _session_label(path: Path) -> str:
    import json

    first = ""
    count = 0
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("type") != "message":
                    continue
                count += 1
                msg = rec.get("message") or {}
                if not first and msg.get("role") == "user":
                    for b in msg.get("content") or []:
                        if isinstance(b, dict) and b.get("type") == "text" and not (msg.get("meta") or {}):
                            first = b.get("text", "").strip().splitlines()[0] if b.get("text", "").strip() else ""
                            break
    except OSError:
        pass
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    first = first if len(first) <= 60 else first[:59] + "…"
    return f"{when}  {count:>3} msgs  {first or '(no prompt)'}"


def resume_session(ctx: CommandContext, session_id: str) -> bool:
    from agent.loop.factory import ResumeError, load_resume_target

    try:
        loaded = load_resume_target(ctx.cwd, False, session_id)
    except ResumeError as exc:
        ctx.say(f"Cannot resume: {exc}", "red")
        return False
    for warning in loaded.warnings:
        ctx.say(f"warning: {warning}", "yellow")
    from services.session import SessionLocked

    try:
        ctx.engine.resume(loaded)
    except SessionLocked as exc:
        ctx.say(f"Cannot resume: {exc}", "red")
        return False
    ctx.say(f"Resumed session {loaded.session_id} ({len(loaded.messages)} messages).")
    return True


async def cmd_resume(ctx: CommandContext, args: str) -> None:
    from services.session import list_sessions

    current = ctx.engine.session_id
    sessions = [p for p in list_sessions(ctx.cwd) if p.stem != current]
    if args:
        choice = args.split()[0]
        if choice.isdigit() and 1 <= int(choice) <= len(sessions):
            choice = sessions[int(choice) - 1].stem
        resume_session(ctx, choice)
        return
    if not sessions:
        ctx.say("No other session in this project to resume.", "dim")
        return
    options = [(p.stem, _session_label(p)) for p in sessions[:20]]
    if ctx.pick is None:
        for i, (sid, label) in enumerate(options, 1):
            ctx.say(f"{i:>2}. {sid}  {label}")
        ctx.say("Resume one with /resume <number or id>.", "dim")
        return
    chosen = await ctx.pick("Resume which session?", options)
    if chosen:
        resume_session(ctx, chosen)


def cmd_exit(ctx: CommandContext, args: str) -> CommandResult:
    return CommandResult(exit=True, exit_code=0)


async def cmd_bashes(ctx: CommandContext, args: str) -> CommandResult:
    """`/bashes` lists the session's background shells; `/bashes kill ID` stops one."""
    from tools.background_tasks import registry
    from tools.base import ToolError

    reg = registry(ctx.engine.state)
    words = args.split()
    if len(words) == 2 and words[0] in ("kill", "stop"):
        try:
            task = reg.stop(words[1])
        except ToolError as exc:
            ctx.say(str(exc), "yellow")
        else:
            ctx.say(f"Stopped {task.id}: {task.command}", "dim")
        return CommandResult()
    if not reg.tasks:
        ctx.say("No background shells in this session.", "dim")
        return CommandResult()
    for task in reg.tasks.values():
        ctx.say(Text(task.describe(), style="bold" if task.status == "running" else "dim"))
    ctx.say("/bashes kill ID stops one; all are stopped when the session ends.", "dim")
    return CommandResult()


def cmd_todos(ctx: CommandContext, args: str) -> None:
    from tools.todo import format_todos

    todos = ctx.engine.state.todos or []
    ctx.say(format_todos(todos) if todos else "No plan in this session yet.", "" if todos else "dim")


def cmd_hooks(ctx: CommandContext, args: str) -> None:
    """The command hooks in force, by event (their files: .agents/hooks.json, .claude/settings*.json, the home)."""
    config = getattr(ctx.engine.hooks, "config", None)
    hooks = config() if callable(config) else {}
    if not hooks:
        ctx.say("No hooks configured (.agents/hooks.json, .claude/settings.json \"hooks\", <AGENT_HOME>/hooks.json).",
                "dim")
        return
    for event, entries in sorted(hooks.items()):
        for e in entries:
            ctx.say(Text(f"{event}  [{e.matcher}]  {e.command}"))


def cmd_config(ctx: CommandContext, args: str) -> None:
    """The settings in force: model, mode, rules, context budget; `agent config` changes them."""
    engine, gate = ctx.engine, ctx.engine.gate
    ctx.say(f"model: {engine.config.model}  ·  max output tokens: {engine.config.max_tokens}")
    ctx.say(f"permission mode: {gate.mode}")
    for label, rules in (("allow", gate.allowed_tools), ("ask", gate.ask_tools), ("deny", gate.disallowed_tools)):
        if rules:
            ctx.say(Text(f"{label}: {', '.join(rules)}"))
    compact = engine.config.compact
    ctx.say(f"compaction: {'on' if compact.enabled else 'off'}, threshold {compact.threshold} chars")
    ctx.say("Change settings with `agent config set KEY VALUE` (project) or `-g` (user).", "dim")


def cmd_doctor(ctx: CommandContext, args: str) -> None:
    from agent.subcommands.doctor import check_credentials, check_ripgrep, check_settings, settings_files
    from services.config import agent_home

    rows = [("API key", check_credentials()), ("ripgrep", check_ripgrep())]
    rows += [(str(p), check_settings(p)) for p in settings_files(ctx.cwd, agent_home()) if p.is_file()]
    for what, (status, detail) in rows:
        ctx.say(Text(f"{status:<4}  {what}: {detail}"), "red" if status == "fail" else "")


async def cmd_add_dir(ctx: CommandContext, args: str) -> None:
    """`/add-dir DIR`: the tools may read and write there too, for this session."""
    path = Path(args.strip()).expanduser() if args.strip() else None
    if path is None:
        dirs = getattr(ctx.opts, "add_dirs", []) if ctx.opts is not None else []
        ctx.say("Added directories: " + (", ".join(map(str, dirs)) or "none") + "  (/add-dir DIR adds one)", "dim")
        return
    path = (ctx.cwd / path).resolve()
    if not path.is_dir():
        ctx.say(f"{path}: not a directory", "yellow")
        return
    if ctx.opts is not None and hasattr(ctx.opts, "add_dirs") and path not in ctx.opts.add_dirs:
        ctx.opts.add_dirs.append(path)
    gate = ctx.engine.gate  # the read and write scope the gate enforces (as --add-dir sets it)
    if path not in gate.additional_dirs:
        gate.additional_dirs.append(path)
    sandbox = getattr(gate, "sandbox", None)  # sandboxed commands may write there too
    if sandbox is not None and path not in sandbox.write_dirs:
        sandbox.write_dirs.append(path)
    ctx.say(f"Added {path} for this session.", "dim")
    await ctx.engine.hooks.observe("DirectoryAdded", "slash_command",
                                   {"directory": str(path), "source": "slash_command"})


def cmd_export(ctx: CommandContext, args: str) -> None:
    """`/export [FILE]`: the conversation as Markdown (prompts, answers, tool calls)."""
    target = Path(args.strip() or f"conversation-{ctx.engine.session_id[:8]}.md").expanduser()
    target = target if target.is_absolute() else ctx.cwd / target
    lines = []
    for m in ctx.engine.messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        if m.get("role") == "user" and not m.get("meta"):
            texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text", "").strip()]
            lines += [f"## User\n\n{t}\n" for t in texts]
        elif m.get("role") == "assistant":
            for b in blocks:
                if b.get("type") == "text" and b.get("text", "").strip():
                    lines.append(f"## Assistant\n\n{b['text']}\n")
                elif b.get("type") == "tool_use":
                    lines.append(f"> tool: {b.get('name')} `{json.dumps(b.get('input'), ensure_ascii=False)[:300]}`\n")
    try:
        target.write_text("\n".join(lines), encoding="utf-8")
    except OSError as exc:
        ctx.say(f"Could not write {target}: {exc.strerror}", "red")
        return
    ctx.say(f"Exported {len(lines)} entries to {target}", "dim")


def cmd_output_style(ctx: CommandContext, args: str) -> None:
    from agent.slash.output_style import switch
    from services.config import agent_home

    builder = getattr(ctx.engine, "prompt_builder", None)
    if builder is None:
        ctx.say("Output styles are not available in this session.", "dim")
        return
    ctx.say(switch(Path(ctx.cwd), agent_home(), builder, args))
    repl = ctx.extras.get("repl")
    if repl is not None:  # the status line shows the style
        repl.refresh_status_line()


def cmd_agents(ctx: CommandContext, args: str) -> None:
    tools = [t.name for t in ctx.engine.tools]
    if "Agent" not in tools:
        ctx.say("The Agent tool is not enabled in this session.", "dim")
        return
    ctx.say("Sub-agents: the Agent tool runs a task with its own history and the same tools (minus Agent).")
    table = Table.grid(padding=(0, 2))
    for a in getattr(ctx.engine, "agent_defs", []):  # project over user over built-in, as the model sees them
        tools_text = ", ".join(a.tools) if a.tools else "all tools"
        model = a.model or "inherit"
        table.add_row(Text(a.name, style="bold"), Text(f"{a.source} · {model} · {tools_text}", style="dim"),
                      Text(a.description[:100]))
    ctx.console.print(table)


def default_router() -> CommandRouter:
    router = CommandRouter()
    router.register("help", cmd_help, "show commands and keys", aliases=("?",))
    router.register("clear", cmd_clear, "start a new, empty conversation", aliases=("new", "reset"))
    router.register("compact", cmd_compact, "summarise the conversation now [instructions]")
    router.register("context", cmd_context, "show what fills the context window")
    router.register("cost", cmd_cost, "tokens and estimated cost of this session", aliases=("usage",))
    router.register("model", cmd_model, "show or set the model [name]")
    router.register("permissions", cmd_permissions, "list rules with their files; remove N; switch mode [mode]")
    router.register("status", cmd_status, "session, model, mode and context usage")
    router.register("memory", cmd_memory, "show the instruction and memory files in use, and from where")
    router.register("init", cmd_init, "ask the model to write AGENTS.md for this project [notes]")
    router.register("resume", cmd_resume, "resume an earlier session of this project [number|id]")
    router.register("todos", cmd_todos, "show the current plan")
    router.register("transcript", cmd_transcript,
                    "the last turn in full: thinking, whole tool input and output (Ctrl-O) [all|N]")
    router.register("hooks", cmd_hooks, "show the command hooks in force")
    router.register("config", cmd_config, "show the settings in force")
    router.register("doctor", cmd_doctor, "check the key, ripgrep and settings files")
    router.register("add-dir", cmd_add_dir, "let the tools use another directory [DIR]")
    router.register("export", cmd_export, "write the conversation as Markdown [FILE]")
    router.register("agents", cmd_agents, "show the sub-agent setup")
    from agent.slash.budget import cmd_budget
    from agent.slash.sandbox import cmd_sandbox

    router.register("budget", cmd_budget, "spent against the session's budget; set or raise it [usd]")
    router.register("output-style", cmd_output_style, "List output styles or switch to one [style]")

    router.register("sandbox", cmd_sandbox, "show the Bash sandbox; switch it [auto-allow|regular|off]")
    router.register("bashes", cmd_bashes, "background shells: list them; stop one [kill ID]", aliases=("tasks",))
    router.register("exit", cmd_exit, "leave the REPL", aliases=("quit",))
    return router
