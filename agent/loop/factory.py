"""Builds a ready QueryEngine from the command-line options: the one place production wiring lives."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.loop.context import SystemPromptBuilder, instruction_places
from agent.loop.deps import QueryDeps, production_deps
from agent.loop.engine import EngineConfig, QueryEngine
from services.compact.options import CompactOptions
from services.config import Settings, agent_environ, agent_home, env_flag
from services.hooks import Hooks
from services.hooks.session_env import env_folder
from services.instructions.render import nested_limit
from services.models import context_window
from services.rule_store import LOCAL_RULES_FILE
from services.settings import MergedSettings
from tools.base import Tool
from tools.mcp_tool import mcp_tools, sync_mcp_tools
from tools.permissions import AskHook, PermissionGate
from tools.registry import default_tools


@dataclass
class AppOptions:
    cwd: Path
    settings: Settings
    permission_mode: str = "default"
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    interactive: bool = False
    # Claude Code's flags.
    add_dirs: list[Path] = field(default_factory=list)
    system_prompt: str | None = None  # replaces ours
    append_system_prompt: str | None = None
    tools: list[str] | None = None  # the built-in tools to offer (None: all)
    mcp_configs: list[dict[str, Any]] = field(default_factory=list)  # --mcp-config objects
    strict_mcp_config: bool = False
    extra_settings: dict[str, Any] | None = None  # --settings
    setting_sources: list[str] | None = None  # --setting-sources (None: all)
    session_id: str | None = None
    setup_trigger: str | None = None  # --init / --maintenance: the Setup hooks run before SessionStart
    fork_session: bool = False  # -c/-r continue as a new session (the REPL reads it)
    persist_session: bool = True
    fallback_model: str | None = None
    betas: list[str] = field(default_factory=list)
    agents_json: str | None = None  # --agents: JSON of custom sub-agents (or, as Claude Code, a file holding it)
    headless: bool = False  # one-shot / SDK: denials use Claude Code's headless wording
    # The trust boundary: whether the folder is trusted, the merged settings of every scope
    # (already filtered by that trust; `load_boundary` fills it).
    trusted: bool = False
    merged: MergedSettings | None = None
    permission_mode_set: bool = False  # --permission-mode given: settings' defaultMode does not apply
    sandbox: Any = None  # tools.sandbox.Sandbox, made by `load_boundary` (or build_engine)
    json_schema: dict[str, Any] | None = None  # --json-schema: the final answer's shape, told in the system prompt
    output_style: Any = None  # services.output_styles.OutputStyle in force (None: default), set by load_boundary
    max_budget_usd: float | None = None  # --max-budget-usd, else settings' maxBudgetUsd


def load_boundary(opts: AppOptions) -> list[str]:
    """Load every settings scope for `opts.cwd` under its trust, the folder's `.env` (trusted only) and
    the child-environment policy. Returns the lines to show: warnings, and for an untrusted folder that
    asked for more than restrictions, the one notice line."""
    from services import credentials
    from services.config import read_dotenv, use_environment
    from services.trust import folder_requests, untrusted_notice

    merged = opts.merged = _load_settings(opts, agent_home())
    # The edge: the one place the process environment is handed to the configuration.
    use_environment(os.environ, read_dotenv(opts.cwd) if opts.trusted else {})
    credentials.configure(merged.secret_env, merged.pass_env, merged.env)
    lines = [f"warning: {w}" for w in merged.warnings]
    opts.output_style, style_warning = pick_output_style(opts, merged)
    if style_warning:
        lines.append(f"warning: {style_warning}")
    opts.sandbox = make_sandbox(opts, merged)
    notice = opts.sandbox.unavailable_notice()
    if notice:
        lines.append(f"warning: {notice}")
    if not opts.trusted:
        wants = folder_requests(opts.cwd, merged.ignored).wants
        if wants:
            lines.append("notice: " + untrusted_notice(opts.cwd, wants))
    return lines


def pick_output_style(opts: AppOptions, merged: MergedSettings) -> tuple[Any, str | None]:
    """The style `outputStyle` names (None: default), and a one-line warning naming the file if none has it."""
    from services.output_styles import discover_styles, resolve_style
    from services.settings_files import user_files

    if not merged.output_style:
        return None, None
    styles = discover_styles(opts.cwd, user_files(agent_home())[0].parent)
    return resolve_style(merged.output_style, styles, merged.output_style_source)


def make_sandbox(opts: AppOptions, merged: MergedSettings):  # noqa: ANN201 - tools.sandbox.Sandbox
    """The session's sandbox: the `sandbox` settings and whether bubblewrap works here (probed once)."""
    import os

    from services.credentials import secret_names
    from tools.sandbox import Sandbox, probe

    dirs = [*opts.add_dirs, *(opts.cwd / Path(d).expanduser() for d in merged.additional_dirs)]
    off = (os.environ.get("AGENT_SANDBOX") or "").strip().lower() in ("0", "off", "false", "no")
    return Sandbox(merged.sandbox, probe(os.environ.get("PATH")), opts.cwd,
                   Path.home(), agent_home(), write_dirs=[d.resolve() for d in dirs],
                   secret_names=frozenset(secret_names()), session_enabled=False if off else None)


def _load_settings(opts: AppOptions, home: Path) -> MergedSettings:
    from services.settings import load_settings

    extra = [opts.extra_settings] if opts.extra_settings is not None else None
    return load_settings(opts.cwd, home, trusted=opts.trusted, extra=extra, sources=opts.setting_sources)


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("When you give your final answer, reply with only a JSON value that satisfies this JSON Schema, "
            "with no other text:\n" + json.dumps(schema, ensure_ascii=False))


@dataclass
class _Found:
    """What the engine is made of that is read from the folder and the agent home."""

    skills: list[Any]
    skill_notices: list[str]
    custom_commands: Any
    command_notices: list[str]
    prompt: SystemPromptBuilder
    agents: Any
    agent_notices: list[str]


def build_engine(
    opts: AppOptions, deps: QueryDeps | None = None, ask: AskHook | None = None, mcp: Any = None,
    wrap_hooks: Callable[[Hooks], Hooks] | None = None,
) -> QueryEngine:
    """The engine and everything it is made of, from the options and what the front end passes: its
    model (`deps`, tests), its question hook (`ask`), MCP servers started before it (`mcp`), and hooks
    that run after the project's own (`wrap_hooks`: the SDK's callbacks)."""
    from services.hooks.command import CommandHooks
    from tools.agent_tool import AgentTool

    settings = opts.settings
    home = agent_home()
    found = _find(opts, home)
    # Sub-agents: the Agent tool reads the engine's deps, tools, gate and hooks when it runs.
    agent_tool = AgentTool(
        lambda: engine.tools, lambda: engine.config.model, get_gate=lambda: engine.gate,
        get_hooks=lambda: engine.hooks, get_compact=lambda: engine.config.compact, max_tokens=settings.max_tokens,
        agents=found.agents,
    )
    tools = _offered_tools(opts, found.skills, agent_tool, lambda: engine.gate, ask, mcp)
    flag_hooks = [table for src, table in (opts.merged.hooks if opts.merged else []) if src == "--settings"]
    hooks = CommandHooks(opts.cwd, home, trusted=opts.trusted, extra=flag_hooks)
    config = _engine_config(opts)
    gate = _build_gate(opts, home, ask)
    tools = [t for t in tools if t.name not in {r for r in gate.disallowed_tools if "(" not in r}]
    _attach_sandbox(opts, gate, tools)
    # MCP servers join in the background: their tools reach the list before each model call.
    blocked = {r for r in gate.disallowed_tools if "(" not in r}
    engine = QueryEngine(
        config, tools, deps or production_deps(
            mock=settings.mock, betas=opts.betas,
            fallback_models=[m.strip() for m in (opts.fallback_model or "").split(",") if m.strip()]),
        gate=gate, hooks=wrap_hooks(hooks) if wrap_hooks is not None else hooks, session_id=opts.session_id,
        persist=opts.persist_session, prompt_for=_prompt_for(opts, found.prompt, gate, mcp), skills=found.skills,
        prompt_builder=found.prompt,
        refresh_tools=McpRefresher(tools, mcp, blocked) if mcp is not None else None,
        custom_commands=found.custom_commands, agent_defs=found.agents,
        notices_at_start=[*found.skill_notices, *found.command_notices, *found.agent_notices],
    )
    found.prompt.tracker.nested_limit = nested_limit(context_window(settings.model, agent_environ()))
    if mcp is not None:
        _tool_search(engine, blocked)
        mcp.handlers.hooks = engine.hooks  # Elicitation hooks may answer a server's question
    for notice in found.prompt.take_notices():
        sys.stderr.write(f"notice: {notice}\n")
    hooks.bind(session_id=lambda: engine.session_id, transcript_path=lambda: str(engine.paths.transcript),
               permission_mode=lambda: str(engine.gate.mode), env_folder=lambda: env_folder(engine.session_dir),
               current_dir=lambda: Path(engine.state.cwd))
    engine.gate.permission_hook = lambda name, input: engine.hooks.permission_request(name, input)
    # Spill files: remove the spill directories of sessions older than SPILL_MAX_AGE_DAYS.
    from services.spill_cleanup import cleanup_spill_dirs

    cleanup_spill_dirs(home=home)
    return engine


def _find(opts: AppOptions, home: Path) -> _Found:
    """Skills, custom commands, the instructions and custom sub-agents of the folder and the agent home."""
    from agent.loop.custom_agents import load_custom_agents
    from agent.slash.custom import load_custom_commands
    from services.skills import discover_skills
    from services.skills.safe_read import ScopedReader

    skill_reader = ScopedReader([opts.cwd, home])  # SKILL.md files never read through a link out of scope
    skills = discover_skills(opts.cwd, home, skill_reader)
    custom_commands, command_notices = load_custom_commands(opts.cwd, home)
    prompt = instruction_prompt(opts, home, skills)
    agents, agent_notices = load_custom_agents(opts.cwd, home, opts.agents_json)
    return _Found(skills, skill_reader.notices, custom_commands, command_notices, prompt, agents, agent_notices)


def _offered_tools(opts: AppOptions, skills: list[Any], agent_tool: Tool, get_gate: Callable[[], PermissionGate],
                   ask: AskHook | None, mcp: Any) -> list[Tool]:
    """The tools offered to the model: the built-ins (narrowed by --tools), then the MCP servers' own."""
    from tools.skill import SkillTool

    tools = default_tools(include_echo=opts.settings.mock or env_flag("AGENT_ECHO_TOOL", False), agent=agent_tool)
    tools += [SkillTool(skills)] if skills else []
    if ask is not None:  # someone can approve a plan or answer (REPL, SDK host); Claude Code's -p offers neither
        from tools.ask_user_question import AskUserQuestionTool
        from tools.exit_plan_mode import ExitPlanModeTool

        tools.append(ExitPlanModeTool(get_gate))
        tools.append(AskUserQuestionTool(get_gate))
    if opts.tools is not None:  # --tools: only these built-ins (MCP tools are chosen by --mcp-config)
        wanted = set(opts.tools)
        tools = [t for t in tools if t.name in wanted]
    # MCP: the connected servers' tools, plus the resource tools when any server has resources.
    tools += mcp_tools(mcp) if mcp is not None else []
    if mcp is not None and getattr(mcp, "servers", None):  # servers still connecting can be waited for
        from tools.wait_mcp import WaitForMcpServersTool

        tools.append(WaitForMcpServersTool(mcp))
    return tools


def _engine_config(opts: AppOptions) -> EngineConfig:
    from services.server_tools import enabled_server_tools
    from services.thinking import options_from

    settings = opts.settings
    # Settings files other readers still take (thinking, server tools): the user's, plus the folder's own
    # only when it is trusted (the same rule the settings layer applies).
    settings_files = [Path(f.path) for f in (opts.merged.files if opts.merged else [])
                      if f.path != "--settings" and (opts.trusted or f.scope not in ("project", "local"))]
    return EngineConfig(
        cwd=opts.cwd,
        model=settings.model,
        max_turns=settings.max_turns,
        max_tokens=settings.max_tokens,
        max_output_tokens=settings.max_output_tokens,
        system_prompt="",
        compact=CompactOptions.from_env(model_window=context_window(settings.model, agent_environ())),
        # Extended thinking: MAX_THINKING_TOKENS, alwaysThinkingEnabled, --effort.
        thinking=options_from(settings_files, effort=settings.effort, mode=settings.thinking_mode,
                              budget=settings.max_thinking_tokens),
        server_tools=enabled_server_tools(settings_files),
        setup_trigger=opts.setup_trigger,
        **({"loop_guard": opts.merged.loop_guard} if opts.merged is not None else {}),
    )


def _prompt_for(opts: AppOptions, prompt: SystemPromptBuilder, gate: PermissionGate,
                mcp: Any) -> Callable[[str], str]:
    """The prompt is rebuilt per session / when memory changes. --system-prompt replaces it (an empty one
    included, as the Agent SDK sends by default); the sandbox section follows our own prompt only."""

    def prompt_for(session_id: str) -> str:
        base = opts.system_prompt if opts.system_prompt is not None else prompt.build(session_id)
        if opts.system_prompt is None:
            from tools.sandbox_prompt import sandbox_prompt

            section = sandbox_prompt(gate.sandbox)
            base = f"{base}\n\n{section}" if section else base
        extra = opts.append_system_prompt
        system = f"{base}\n\n{extra}" if base and extra else (base or extra or "")
        if mcp is not None:  # the servers' instructions, sorted by server: byte-stable
            system = _with_mcp_instructions(system, mcp)
        if opts.json_schema is not None:  # --json-schema: the final answer's shape
            system += "\n\n" + schema_instruction(opts.json_schema)
        return system

    return prompt_for


def _attach_sandbox(opts: AppOptions, gate: PermissionGate, tools: list) -> None:  # noqa: ANN001
    """One sandbox for the session, shared by the gate (auto-allow) and the Bash tool (the wrapping)."""
    from tools.bash import BashTool

    if opts.sandbox is None:
        opts.sandbox = make_sandbox(opts, opts.merged or _load_settings(opts, agent_home()))
    gate.sandbox = opts.sandbox
    for tool in tools:
        if isinstance(tool, BashTool):
            tool.sandbox = opts.sandbox


def instruction_prompt(opts: AppOptions, home: Path, skills: list) -> SystemPromptBuilder:
    """The system prompt builder with Claude Code's instruction files: the user's always, the project's
    only in a trusted folder; `claudeMdExcludes` from the settings in force."""
    from services.settings_files import user_files

    trusted_files = [f for f in (opts.merged.files if opts.merged else [])
                     if opts.trusted or f.scope not in ("project", "local")]
    excludes = [p for f in trusted_files for p in _str_list(f.data.get("claudeMdExcludes"))]
    places = instruction_places(opts.cwd, home, Path.home(), user_files(home)[0].parent)
    builder = SystemPromptBuilder(opts.cwd, home, skills, trusted=opts.trusted, places=places, excludes=excludes)
    builder.style = opts.output_style
    return builder


def _str_list(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _with_mcp_instructions(system: str, mcp) -> str:  # noqa: ANN001
    extra = mcp.instructions()
    return f"{system}\n\n{extra}" if extra else system


class McpRefresher:
    """Before each model call: the notices of servers that changed, and their tools synced into the
    engine's list (new ones at the end). Cheap when nothing changed (one integer compare)."""

    def __init__(self, tools: list[Tool], mcp: Any, blocked: set[str]) -> None:
        self.tools, self.mcp, self.blocked = tools, mcp, blocked
        self.seen = -1

    def sync(self) -> None:
        """The tools only; the notices stay for the loop."""
        if self.mcp.version != self.seen:
            self.seen = self.mcp.version
            sync_mcp_tools(self.tools, self.mcp, self.blocked)

    def __call__(self) -> list[tuple[str, str]]:
        notices = self.mcp.take_notices()
        self.sync()
        return [("mcp" if kind == "mcp" else "warning", text) for kind, text in notices]


def mcp_refresher(engine: QueryEngine, mcp: Any, blocked: set[str]) -> McpRefresher:
    _tool_search(engine, blocked)
    return McpRefresher(engine.tools, mcp, blocked)


def _tool_search(engine: QueryEngine, blocked: set[str]) -> None:
    """Deferred MCP tools behind ToolSearch, as ENABLE_TOOL_SEARCH says (tools/tool_search.py)."""
    from tools.tool_search import install_tool_search

    warning = install_tool_search(engine.tools, engine.state, agent_environ().get("ENABLE_TOOL_SEARCH"),
                                  blocked)
    if warning:
        sys.stderr.write(f"warning: {warning}\n")


def _build_gate(opts: AppOptions, home: Path, ask: AskHook | None) -> PermissionGate:
    """Mode and rules from the flags plus `permissions` of the settings layer (filtered by trust)."""
    perms = opts.merged or _load_settings(opts, home)
    mode = opts.permission_mode
    if not opts.permission_mode_set and opts.permission_mode == "default" and perms.default_mode:
        mode = perms.default_mode
    dirs = [*opts.add_dirs, *(opts.cwd / Path(d).expanduser() for d in perms.additional_dirs)]
    return PermissionGate(
        mode=mode,  # type: ignore[arg-type]
        ask=ask,
        allowed_tools=[*perms.allow, *opts.allowed_tools],
        disallowed_tools=[*perms.deny, *opts.disallowed_tools],
        ask_tools=list(perms.ask),
        additional_dirs=[d.resolve() for d in dirs],
        rules_file=opts.cwd / LOCAL_RULES_FILE,
        home=home,
        headless=opts.headless,
    )


class ResumeError(Exception):
    pass


def load_resume_target(cwd: Path, continue_: bool, resume: str | None):
    """The session to resume (`--continue`: the newest; `--resume ID`: that one), or None."""
    from services.session import SessionPaths, TranscriptError, latest_session, load_transcript

    if resume:
        path = SessionPaths.for_session(cwd, resume).transcript
        if not path.is_file():
            raise ResumeError(f"no session {resume!r} in this project (see the REPL's /resume for a list)")
    elif continue_:
        latest = latest_session(cwd)
        if latest is None:
            raise ResumeError("no earlier session in this project to continue")
        path = latest
    else:
        return None
    try:
        return load_transcript(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None


async def start_mcp(cwd: Path, warn=None, extra: list[dict[str, Any]] | None = None,  # noqa: ANN001, ANN201
                    strict: bool = False, opts: AppOptions | None = None, sdk_send: Any = None):
    """Start the configured MCP servers in the background and return at once.

    Returns None when no server is configured (the SDK is then never imported). Config problems are
    reported through `warn` (stderr by default) now; servers report (ready, failed) through the
    manager's notices, which the loop shows before its next model call. The caller passes the manager
    to `build_engine(..., mcp=manager)` and must `await manager.close()` on the way out.
    """
    import os
    import sys

    from services.config import project_dir
    from services.mcp.config import load_config, load_data
    from services.mcp.manager import McpManager

    if warn is None:
        def warn(text: str) -> None:
            sys.stderr.write(f"warning: {text}\n")
            sys.stderr.flush()

    # Trust: an untrusted folder's .mcp.json is not read; settings servers come filtered.
    if opts is not None:
        trusted = opts.trusted
    else:  # e.g. `agent doctor`: the recorded trust
        from services.trust import config_changes

        trusted = config_changes(cwd, agent_home()) == []
    servers = opts.merged.mcp_servers if opts is not None and opts.merged is not None else None
    configs, warnings = ({}, []) if strict else load_config(cwd, trusted=trusted, settings_servers=servers)
    for i, data in enumerate(extra or []):  # --mcp-config objects (the user's command line); later ones win
        found, warns = load_data(data, f"--mcp-config #{i + 1}", os.environ)
        configs.update(found)
        warnings.extend(warns)
    for text in warnings:
        warn(text)
    if not configs:
        return None
    # Roots: the working directory and the added ones (the list itself: /add-dir extends it).
    roots = opts.add_dirs if opts is not None else None
    manager = McpManager(configs, cwd, log_dir=project_dir(cwd) / "mcp-logs", extra_roots=roots)
    manager.sdk_send = sdk_send  # servers hosted by the Agent SDK (type "sdk"), through mcp_message
    manager.start_background()
    return manager
