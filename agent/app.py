"""Builds a ready QueryEngine from the command-line options: the one place production wiring lives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.config import Settings, agent_home, env_flag
from agent.context import build_system_prompt
from agent.deps import QueryDeps, production_deps
from agent.engine import EngineConfig, QueryEngine
from services.compact.options import CompactOptions
from tools.permissions import AskHook, PermissionGate, load_settings
from tools.registry import default_tools


@dataclass
class AppOptions:
    cwd: Path
    settings: Settings
    permission_mode: str = "default"
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    interactive: bool = False


def build_engine(opts: AppOptions, deps: QueryDeps | None = None, ask: AskHook | None = None) -> QueryEngine:
    settings = opts.settings
    config = EngineConfig(
        cwd=opts.cwd,
        model=settings.model,
        max_turns=settings.max_turns,
        max_tokens=settings.max_tokens,
        system_prompt=build_system_prompt(opts.cwd),
        compact=CompactOptions.from_env(),
    )
    gate = _build_gate(opts, agent_home(), ask)
    tools = default_tools(include_echo=settings.mock or env_flag("AGENT_ECHO_TOOL", False))
    tools = [t for t in tools if t.name not in {r for r in gate.disallowed_tools if "(" not in r}]
    return QueryEngine(config, tools, deps or production_deps(mock=settings.mock), gate=gate)


def _build_gate(opts: AppOptions, home: Path, ask: AskHook | None) -> PermissionGate:
    """Mode and rules from the flags plus `permissions` in settings.json (agent home, then project)."""
    perms = load_settings([home / "settings.json", opts.cwd / ".agents" / "settings.json"])
    mode = perms.default_mode if opts.permission_mode == "default" and perms.default_mode else opts.permission_mode
    return PermissionGate(
        mode=mode,  # type: ignore[arg-type]
        ask=ask,
        allowed_tools=[*perms.allow, *opts.allowed_tools],
        disallowed_tools=[*perms.deny, *opts.disallowed_tools],
        ask_tools=list(perms.ask),
    )


class ResumeError(Exception):
    pass


def load_resume_target(cwd: Path, continue_: bool, resume: str | None):
    """The session to resume (`--continue`: the newest; `--resume ID`: that one), or None."""
    from agent.session import SessionPaths, TranscriptError, list_sessions, load_transcript

    if resume:
        path = SessionPaths.for_session(cwd, resume).transcript
        if not path.is_file():
            raise ResumeError(f"no session {resume!r} in this project (see the REPL's /resume for a list)")
    elif continue_:
        sessions = list_sessions(cwd)
        if not sessions:
            raise ResumeError("no earlier session in this project to continue")
        path = sessions[0]
    else:
        return None
    try:
        return load_transcript(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None
