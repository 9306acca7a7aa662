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
from tools.mcp_tool import mcp_tools
from tools.permissions import AskHook, PermissionGate, load_settings, load_settings_data
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
    headless: bool = False  # one-shot / SDK: denials use Claude Code's headless wording


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
    skills = discover_skills(opts.cwd, home)
    prompt = SystemPromptBuilder(opts.cwd, home, skills)
    # Sub-agents (issue 9): the Agent tool reads the engine's deps, tools, gate and hooks when it runs.
    agent_tool = AgentTool(
        lambda: engine.tools, lambda: engine.config.model, get_gate=lambda: engine.gate,
        get_hooks=lambda: engine.hooks, get_compact=lambda: engine.config.compact, max_tokens=settings.max_tokens,
    )
    tools = default_tools(include_echo=settings.mock or env_flag("AGENT_ECHO_TOOL", False), agent=agent_tool)
    tools += [SkillTool(skills)] if skills else []
    if opts.tools is not None:  # --tools: only these built-ins (MCP tools are chosen by --mcp-config)
        wanted = set(opts.tools)
        tools = [t for t in tools if t.name in wanted]
    # MCP (issue 8): the connected servers' tools, plus the resource tools when any server has resources.
    tools += mcp_tools(mcp) if mcp is not None else []
    hooks = CommandHooks(opts.cwd, home)
    # Until the one settings layer (issue 15) lands: user, then project files; later ones win.
    settings_files = [home / "settings.json", opts.cwd / ".agents" / "settings.json", opts.cwd / ".claude" / "settings.json"]
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
    engine.config.system_prompt = engine.prompt_source()
    engine.skills = skills
    engine.prompt_builder = prompt
    hooks.bind(session_id=lambda: engine.session_id, transcript_path=lambda: str(engine.paths.transcript))
    # Spill files (issue 4): remove the spill directories of sessions older than SPILL_MAX_AGE_DAYS.
    from services.spill_cleanup import cleanup_spill_dirs

    cleanup_spill_dirs(home=home)
    return engine


def _build_gate(opts: AppOptions, home: Path, ask: AskHook | None) -> PermissionGate:
    """Mode and rules from the flags plus `permissions` in settings.json (agent home, then project)."""
    sources = {"user": home / "settings.json", "project": opts.cwd / ".agents" / "settings.json"}
    wanted = opts.setting_sources if opts.setting_sources is not None else list(sources)
    perms = load_settings([path for name, path in sources.items() if name in wanted])
    if opts.extra_settings is not None:  # --settings: a layer above the files
        perms = load_settings_data(opts.extra_settings, into=perms)
    mode = perms.default_mode if opts.permission_mode == "default" and perms.default_mode else opts.permission_mode
    return PermissionGate(
        mode=mode,  # type: ignore[arg-type]
        ask=ask,
        allowed_tools=[*perms.allow, *opts.allowed_tools],
        disallowed_tools=[*perms.deny, *opts.disallowed_tools],
        ask_tools=list(perms.ask),
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
                    strict: bool = False):
    """Connect the MCP servers of `.mcp.json` / `MCP_CONFIG` concurrently (issue 8).

    Returns None when no server is configured (the SDK is then never imported). Each config problem and
    each failed server is reported once through `warn` (stderr by default). The caller passes the
    manager to `build_engine(..., mcp=manager)` and must `await manager.close()` on the way out.
    """
    import os
    import sys

    from services.mcp.config import load_config, load_data
    from services.mcp.manager import McpManager

    if warn is None:
        def warn(text: str) -> None:
            sys.stderr.write(f"warning: {text}\n")
            sys.stderr.flush()

    configs, warnings = ({}, []) if strict else load_config(cwd)
    for i, data in enumerate(extra or []):  # --mcp-config objects; later ones win
        found, warns = load_data(data, f"--mcp-config #{i + 1}", os.environ)
        configs.update(found)
        warnings.extend(warns)
    if not configs:
        for text in warnings:
            warn(text)
        return None
    manager = McpManager(configs, cwd)
    manager.warnings.extend(warnings)
    await manager.start()
    for text in manager.warnings:
        warn(text)
    return manager
