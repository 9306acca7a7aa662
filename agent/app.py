"""Builds a ready QueryEngine from the command-line options: the one place production wiring lives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.context import SystemPromptBuilder
from agent.deps import QueryDeps, production_deps
from agent.engine import EngineConfig, QueryEngine
from services.compact.options import CompactOptions
from services.config import Settings, agent_home, env_flag
from services.models import context_window
from services.settings import LOCAL_SETTINGS, MergedSettings
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
    # Claude Code's flags (issue 19).
    add_dirs: list[Path] = field(default_factory=list)
    system_prompt: str | None = None  # replaces ours
    append_system_prompt: str | None = None
    tools: list[str] | None = None  # the built-in tools to offer (None: all)
    mcp_configs: list[dict[str, Any]] = field(default_factory=list)  # --mcp-config objects
    strict_mcp_config: bool = False
    extra_settings: dict[str, Any] | None = None  # --settings
    setting_sources: list[str] | None = None  # --setting-sources (None: all)
    session_id: str | None = None
    fork_session: bool = False  # -c/-r continue as a new session (the REPL reads it; issue 21)
    persist_session: bool = True
    fallback_model: str | None = None
    betas: list[str] = field(default_factory=list)
    agents_json: str | None = None  # --agents: JSON of custom sub-agents (or, as Claude Code, a file holding it)
    headless: bool = False  # one-shot / SDK: denials use Claude Code's headless wording
    # The trust boundary (issue 15): whether the folder is trusted, the merged settings of every scope
    # (already filtered by that trust; `load_boundary` fills it).
    trusted: bool = False
    merged: MergedSettings | None = None
    permission_mode_set: bool = False  # --permission-mode given: settings' defaultMode does not apply


def load_boundary(opts: AppOptions) -> list[str]:
    """Load every settings scope for `opts.cwd` under its trust, the folder's `.env` (trusted only) and
    the child-environment policy. Returns the lines to show: warnings, and for an untrusted folder that
    asked for more than restrictions, the one notice line."""
    from services import credentials
    from services.config import read_dotenv, use_dotenv
    from services.trust import folder_requests, untrusted_notice

    merged = opts.merged = _load_settings(opts, agent_home())
    use_dotenv(read_dotenv(opts.cwd) if opts.trusted else {})
    credentials.configure(merged.secret_env, merged.pass_env, merged.env)
    lines = [f"warning: {w}" for w in merged.warnings]
    if not opts.trusted:
        wants = folder_requests(opts.cwd, merged.ignored).wants
        if wants:
            lines.append("notice: " + untrusted_notice(opts.cwd, wants))
    return lines


def _load_settings(opts: AppOptions, home: Path) -> MergedSettings:
    from services.settings import load_settings

    extra = [opts.extra_settings] if opts.extra_settings is not None else None
    return load_settings(opts.cwd, home, trusted=opts.trusted, extra=extra, sources=opts.setting_sources)


def build_engine(
    opts: AppOptions, deps: QueryDeps | None = None, ask: AskHook | None = None, mcp: object | None = None
) -> QueryEngine:
    from services.hooks.command import CommandHooks
    from services.server_tools import enabled_server_tools
    from services.skills import discover_skills
    from services.thinking import options_from
    from tools.agent_tool import AgentTool
    from tools.skill import SkillTool

    settings = opts.settings
    home = agent_home()
    from agent.custom_commands import load_custom_commands
    from services.skills.safe_read import ScopedReader

    skill_reader = ScopedReader([opts.cwd, home])  # SKILL.md files never read through a link out of scope
    skills = discover_skills(opts.cwd, home, skill_reader)

    custom_commands, command_notices = load_custom_commands(opts.cwd, home)
    prompt = SystemPromptBuilder(opts.cwd, home, skills)
    # Sub-agents (issue 9): the Agent tool reads the engine's deps, tools, gate and hooks when it runs.
    from agent.custom_agents import load_custom_agents

    agents, agent_notices = load_custom_agents(opts.cwd, home, opts.agents_json)
    agent_tool = AgentTool(
        lambda: engine.tools, lambda: engine.config.model, get_gate=lambda: engine.gate,
        get_hooks=lambda: engine.hooks, get_compact=lambda: engine.config.compact, max_tokens=settings.max_tokens,
        agents=agents,
    )
    tools = default_tools(include_echo=settings.mock or env_flag("AGENT_ECHO_TOOL", False), agent=agent_tool)
    tools += [SkillTool(skills)] if skills else []
    if ask is not None:  # someone can approve a plan (REPL, SDK host); Claude Code's -p does not offer it
        from tools.exit_plan_mode import ExitPlanModeTool

        tools.append(ExitPlanModeTool(lambda: engine.gate))
    if opts.tools is not None:  # --tools: only these built-ins (MCP tools are chosen by --mcp-config)
        wanted = set(opts.tools)
        tools = [t for t in tools if t.name in wanted]
    # MCP (issue 8): the connected servers' tools, plus the resource tools when any server has resources.
    tools += mcp_tools(mcp) if mcp is not None else []
    if mcp is not None and getattr(mcp, "servers", None):  # servers still connecting can be waited for
        from tools.wait_mcp import WaitForMcpServersTool

        tools.append(WaitForMcpServersTool(mcp))
    flag_hooks = [table for src, table in (opts.merged.hooks if opts.merged else []) if src == "--settings"]
    hooks = CommandHooks(opts.cwd, home, trusted=opts.trusted, extra=flag_hooks)
    # Settings files other readers still take (thinking, server tools): the user's, plus the folder's own
    # only when it is trusted (the same rule the settings layer applies).
    settings_files = [Path(f.path) for f in (opts.merged.files if opts.merged else [])
                      if f.path != "--settings" and (opts.trusted or f.scope not in ("project", "local"))]
    config = EngineConfig(
        cwd=opts.cwd,
        model=settings.model,
        max_turns=settings.max_turns,
        max_tokens=settings.max_tokens,
        system_prompt="",
        compact=CompactOptions.from_env(model_window=context_window(settings.model)),
        # Extended thinking (issue 17): MAX_THINKING_TOKENS, alwaysThinkingEnabled, --effort.
        thinking=options_from(settings_files, effort=settings.effort, mode=settings.thinking_mode,
                              budget=settings.max_thinking_tokens),
        server_tools=enabled_server_tools(settings_files),
    )
    gate = _build_gate(opts, home, ask)
    tools = [t for t in tools if t.name not in {r for r in gate.disallowed_tools if "(" not in r}]
    engine = QueryEngine(config, tools, deps or production_deps(
        mock=settings.mock, betas=opts.betas,
        fallback_models=[m.strip() for m in (opts.fallback_model or "").split(",") if m.strip()]),
                         gate=gate, hooks=hooks, session_id=opts.session_id, persist=opts.persist_session)
    # Context, skills and hooks (issue 7): the prompt is rebuilt per session / when memory changes.
    # --system-prompt replaces it (an empty one included, as the Agent SDK sends by default).
    def prompt_source() -> str:
        base = opts.system_prompt if opts.system_prompt is not None else prompt.build(engine.session_id)
        extra = opts.append_system_prompt
        return f"{base}\n\n{extra}" if base and extra else (base or extra or "")

    engine.prompt_source = prompt_source
    if mcp is not None:  # MCP (issue 18): servers join in the background; instructions, tools, notices
        engine.prompt_source = lambda: _with_mcp_instructions(prompt_source(), mcp)
        engine.refresh_tools = mcp_refresher(engine, mcp, {r for r in gate.disallowed_tools if "(" not in r})
    engine.config.system_prompt = engine.prompt_source()
    engine.skills = skills
    engine.custom_commands = custom_commands  # .claude/commands: `/name args` in the REPL, -p and the SDK
    engine.notices_at_start = [*skill_reader.notices, *command_notices, *agent_notices]
    engine.agent_defs = agents
    engine.prompt_builder = prompt
    hooks.bind(session_id=lambda: engine.session_id, transcript_path=lambda: str(engine.paths.transcript))
    # Spill files (issue 4): remove the spill directories of sessions older than SPILL_MAX_AGE_DAYS.
    from services.spill_cleanup import cleanup_spill_dirs

    cleanup_spill_dirs(home=home)
    return engine


def _with_mcp_instructions(system: str, mcp) -> str:  # noqa: ANN001
    extra = mcp.instructions()
    return f"{system}\n\n{extra}" if extra else system


def mcp_refresher(engine: QueryEngine, mcp, blocked: set[str]):  # noqa: ANN001, ANN201
    """Before each model call: the notices of servers that changed, and their tools synced into the
    engine's list (new ones at the end). Cheap when nothing changed (one integer compare)."""
    seen = [-1]

    def sync() -> None:
        if mcp.version != seen[0]:
            seen[0] = mcp.version
            sync_mcp_tools(engine.tools, mcp, blocked)

    def refresh() -> list[tuple[str, str]]:
        notices = mcp.take_notices()
        sync()
        return [("mcp" if kind == "mcp" else "warning", text) for kind, text in notices]

    refresh.sync = sync  # type: ignore[attr-defined] - tools only, the notices stay for the loop
    return refresh


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
        rules_file=opts.cwd / LOCAL_SETTINGS,
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
    """Start the configured MCP servers in the background (issue 18) and return at once.

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

    # Trust (issue 15): an untrusted folder's .mcp.json is not read; settings servers come filtered.
    if opts is not None:
        trusted = opts.trusted
    else:  # e.g. `agent doctor`: the recorded trust
        from services.trust import is_trusted

        trusted = is_trusted(cwd, agent_home())
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
    # Roots (issue 18): the working directory and the added ones (the list itself: /add-dir extends it).
    roots = opts.add_dirs if opts is not None else None
    manager = McpManager(configs, cwd, log_dir=project_dir(cwd) / "mcp-logs", extra_roots=roots)
    manager.sdk_send = sdk_send  # servers hosted by the Agent SDK (type "sdk"), through mcp_message
    manager.start_background()
    return manager
