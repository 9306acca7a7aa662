"""From parsed flags to one `Invocation`: what to run, how to print it, and the engine's options.

All the checks Claude Code makes on flag combinations live here, each a one-line usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.flags import MODE_ALIASES, UsageError, split_tool_list, workdir_of
from agent.loop.factory import AppOptions

if TYPE_CHECKING:
    from services.config import Settings
    from services.settings import MergedSettings


@dataclass
class Invocation:
    app: AppOptions
    prompt: str
    interactive: bool
    output_format: str = "text"
    input_format: str = "text"
    include_partial: bool = False
    replay_user_messages: bool = False
    verbose: bool = False
    debug: bool = False
    continue_: bool = False
    resume: str | None = None
    fork_session: bool = False
    max_budget_usd: float | None = None
    json_schema: dict[str, Any] | None = None
    permission_prompt_tool: str | None = None
    never_ask: bool = False  # dontAsk: anything that would ask is denied
    effort: str | None = None
    thinking: str | None = None
    max_thinking_tokens: int | None = None
    init_only: bool = False  # --init-only: the Setup and SessionStart hooks, then exit
    # The SDK asks for `session_state_changed` frames with this variable.
    reads_session_state: bool = field(default_factory=lambda: os.environ.get(
        "CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1")

    @property
    def settings(self) -> Any:
        return self.app.settings


def _chosen_model(flag: str | None, setting: str | None, from_env: str) -> tuple[str, list[str]]:
    """The model to use and the lines to say about it: `--model`, else ANTHROPIC_MODEL (already in
    `from_env`, with the default alias under it), else the `model` setting. A legacy Opus id becomes
    the latest Opus, as Claude Code remaps it."""
    from services.config import agent_environ, getenv
    from services.models import legacy_target, model_notices, resolve_model, today_utc

    env = agent_environ()
    requested = from_env
    if flag:
        requested = resolve_model(flag, env)
    elif setting and not getenv("ANTHROPIC_MODEL"):
        requested = resolve_model(setting, env)
    notices = model_notices(requested, today_utc(), env)
    return legacy_target(requested, env) or requested, notices


def _read_text_file(flag: str, path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{flag} {path}: cannot be read: {exc.strerror if isinstance(exc, OSError) else exc}") from None


def _json_arg(flag: str, raw: str) -> dict[str, Any]:
    """A JSON object given inline, or the path of a file holding one."""
    text = raw
    if not raw.lstrip().startswith("{"):
        text = _read_text_file(flag, raw)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag}: expected a JSON object")
    return value


def _permission_mode(ns: argparse.Namespace) -> str:
    from tools.permissions import MODES

    if ns.dangerously_skip_permissions:
        return "bypassPermissions"
    mode = ns.permission_mode or "default"
    mode = MODE_ALIASES.get(mode, mode)
    if mode == "dontAsk":  # never ask: what is not allowed by a rule or the mode is denied
        return "default"
    if mode == "auto":
        sys.stderr.write("warning: --permission-mode auto (a classifier decides) is not supported; using default\n")
        return "default"
    if mode not in MODES:
        raise UsageError(f"--permission-mode must be one of {', '.join(MODES)}, got {ns.permission_mode!r}")
    return mode


def _tools_filter(values: list[str] | None) -> list[str] | None:
    """`--tools`: None = not given (all tools); [] = none; ["default"] = all; else these names."""
    if values is None:
        return None
    names = split_tool_list(values)
    if names == ["default"]:
        return None
    return names


def _setting_sources(ns: argparse.Namespace) -> list[str] | None:
    if ns.setting_sources is None:
        return None
    return [s.strip() for s in ns.setting_sources.split(",") if s.strip()]


@dataclass
class Flags:
    """What the flags ask for, checked and read (files they name included), before anything is applied."""

    ns: argparse.Namespace
    mode: str
    workdir: Path
    add_dirs: list[Path]
    system_prompt: str | None
    append_system_prompt: str | None
    extra_settings: dict[str, Any] | None
    json_schema: dict[str, Any] | None
    mcp_configs: list[dict[str, Any]]
    prompt: str


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")


def build_invocation(ns: argparse.Namespace) -> Invocation:
    """Parse the flags, then apply them (chdir, trust, settings, stdin)."""
    return apply_flags(parse_flags(ns))


def parse_flags(ns: argparse.Namespace, warn: Callable[[str], None] = _say) -> Flags:
    """Check the flag combinations and read the files the flags name. Changes nothing in the process:
    `warn` gets the lines about flags that are ignored or replaced."""
    _check_combinations(ns)
    mode = _permission_mode(ns)
    for key, value in sorted(vars(ns).items()):
        if key.startswith("ignored_") and value not in (None, False):
            flag = "--" + key.removeprefix("ignored_").replace("_", "-")
            warn(f"warning: {flag} is not supported by this agent; ignored")
    workdir = workdir_of(ns)
    add_dirs = []
    for d in ns.add_dirs:
        p = (workdir / Path(d).expanduser()).resolve()
        if not p.is_dir():
            raise UsageError(f"--add-dir {d}: not a directory")
        add_dirs.append(p)
    system_prompt = ns.system_prompt
    if ns.system_prompt_file:
        system_prompt = _read_text_file("--system-prompt-file", ns.system_prompt_file)
    append = ns.append_system_prompt
    if ns.append_system_prompt_file:
        append = _read_text_file("--append-system-prompt-file", ns.append_system_prompt_file)
    return Flags(
        ns=ns, mode=mode, workdir=workdir, add_dirs=add_dirs, system_prompt=system_prompt,
        append_system_prompt=append,
        extra_settings=_json_arg("--settings", ns.settings) if ns.settings else None,
        json_schema=_json_arg("--json-schema", ns.json_schema) if ns.json_schema else None,
        mcp_configs=[_json_arg("--mcp-config", c) for c in ns.mcp_config],
        prompt=" ".join(ns.prompt or []).strip(),
    )


def _check_combinations(ns: argparse.Namespace) -> None:
    """Claude Code's checks on flags that only work together, each a one-line usage error."""
    from services.config import ConfigError

    if ns.output_format == "stream-json" and ns.print_mode and not ns.verbose:
        # Claude Code's check, its words and its exit code (1).
        raise ConfigError("When using --print, --output-format=stream-json requires --verbose")
    if ns.input_format == "stream-json" and ns.output_format != "stream-json":
        raise UsageError("--input-format=stream-json requires --output-format=stream-json")
    if ns.include_partial_messages and ns.output_format != "stream-json":
        raise UsageError("--include-partial-messages only works with --output-format=stream-json")
    if ns.session_id is not None:
        try:
            ns.session_id = str(uuid.UUID(ns.session_id))
        except ValueError:
            raise UsageError(f"--session-id must be a valid UUID, got {ns.session_id!r}") from None
    if ns.fork_session and not (ns.continue_ or ns.resume):
        raise UsageError("--fork-session works with --resume or --continue")


def apply_flags(flags: Flags) -> Invocation:
    """Act on parsed flags: enter the working directory, decide trust (the REPL asks), load the settings
    under it, pick the model, read the prompt from stdin when there is none, check for credentials."""
    from services.config import ConfigError, Settings, has_credentials

    ns = flags.ns
    os.chdir(flags.workdir)
    interactive = (not ns.print_mode and not ns.init_only and sys.stdin.isatty() and sys.stdout.isatty()
                   and ns.input_format == "text")
    boundary = AppOptions(cwd=flags.workdir, settings=Settings(), trusted=_decide_trust(flags.workdir, interactive),
                          extra_settings=flags.extra_settings, setting_sources=_setting_sources(ns))
    settings = _load_settings(boundary)
    _apply_model_flags(settings, ns, boundary.merged)
    text = flags.prompt
    if not interactive and not text and ns.input_format == "text" and not ns.init_only:
        text = "" if sys.stdin.isatty() else sys.stdin.read().strip()
        if not text:
            raise UsageError("no prompt: pass it as an argument or on stdin (agent -p < task.txt)")
    if not settings.mock and not has_credentials():
        raise ConfigError(
            "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or run with --mock to try the "
            "offline model"
        )
    return _invocation(flags, _app_options(flags, settings, boundary, interactive), text)


def _decide_trust(workdir: Path, interactive: bool) -> bool:
    """Trust is decided before anything of the folder's is read; only the REPL asks."""
    from services.config import agent_home
    from services.trust import is_trusted

    trusted = is_trusted(workdir, agent_home())
    if interactive and not trusted:
        from agent.repl.trust_prompt import ask_folder_trust

        trusted = ask_folder_trust(workdir, agent_home())
    elif trusted:
        trusted = _still_trusted(workdir, interactive)
    return trusted


def _still_trusted(workdir: Path, interactive: bool) -> bool:
    """A trusted folder whose configuration changed since is asked about again (the REPL) or treated as
    untrusted with one line (one-shot runs)."""
    from services.config import agent_home
    from services.trust import changed_notice, config_changes

    changed = config_changes(workdir, agent_home()) or []
    if not changed:
        return True
    if interactive:
        from agent.repl.trust_prompt import ask_changed_trust

        return ask_changed_trust(workdir, agent_home(), changed)
    sys.stderr.write(f"warning: {changed_notice(workdir, changed)}\n")
    return False


def _load_settings(boundary: AppOptions) -> Settings:
    """Settings of every scope, `.env` (trusted only) and the child environment; its lines are said."""
    from agent.loop.factory import load_boundary
    from services.config import ConfigError, Settings

    try:
        for line in load_boundary(boundary):
            sys.stderr.write(line + "\n")
        return Settings.from_env()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _apply_model_flags(settings: Settings, ns: argparse.Namespace, merged: MergedSettings | None) -> None:
    """The model, turns and thinking the flags choose over the settings; the model's notices are said."""
    settings.model, notices = _chosen_model(ns.model, merged.model if merged is not None else None,
                                            settings.model)
    if ns.max_turns:
        settings.max_turns = ns.max_turns
    # Thinking: --effort, and Claude Code's hidden --thinking / --max-thinking-tokens.
    settings.effort, settings.thinking_mode = ns.effort, ns.thinking
    settings.max_thinking_tokens = ns.max_thinking_tokens
    if ns.mock:
        settings.mock = True
    if settings.mock:
        from services.models import MOCK_MODEL

        settings.model = MOCK_MODEL  # the offline model reports itself, and costs nothing
    else:
        for line in notices:  # retired, retiring, remapped or unknown: said once, at start
            sys.stderr.write(line + "\n")


def _app_options(flags: Flags, settings: Settings, boundary: AppOptions, interactive: bool) -> AppOptions:
    ns = flags.ns
    return AppOptions(
        cwd=flags.workdir,
        settings=settings,
        permission_mode=flags.mode,
        allowed_tools=split_tool_list(ns.allowed_tools),
        disallowed_tools=split_tool_list(ns.disallowed_tools),
        interactive=interactive,
        add_dirs=flags.add_dirs,
        system_prompt=flags.system_prompt,
        append_system_prompt=flags.append_system_prompt,
        tools=_tools_filter(ns.tools),
        mcp_configs=flags.mcp_configs,
        strict_mcp_config=ns.strict_mcp_config,
        extra_settings=flags.extra_settings,
        setting_sources=boundary.setting_sources,
        trusted=boundary.trusted,
        merged=boundary.merged, output_style=boundary.output_style,
        max_budget_usd=ns.max_budget_usd if ns.max_budget_usd is not None else (
            boundary.merged.max_budget_usd if boundary.merged is not None else None),
        permission_mode_set=ns.permission_mode is not None or bool(ns.dangerously_skip_permissions),
        session_id=ns.session_id,
        setup_trigger="init" if ns.init or ns.init_only else "maintenance" if ns.maintenance else None,
        fork_session=ns.fork_session,
        persist_session=not ns.no_session_persistence,
        fallback_model=ns.fallback_model,
        betas=split_tool_list(ns.betas),
        agents_json=ns.agents,
        headless=not interactive,
        json_schema=flags.json_schema,
    )


def _invocation(flags: Flags, app: AppOptions, text: str) -> Invocation:
    ns = flags.ns
    return Invocation(
        app=app,
        prompt=text,
        interactive=app.interactive,
        output_format=ns.output_format,
        input_format=ns.input_format,
        include_partial=ns.include_partial_messages,
        replay_user_messages=ns.replay_user_messages,
        verbose=ns.verbose,
        debug=bool(ns.debug),
        continue_=ns.continue_,
        resume=ns.resume,
        fork_session=ns.fork_session,
        max_budget_usd=app.max_budget_usd,
        json_schema=flags.json_schema,
        permission_prompt_tool=ns.permission_prompt_tool,
        never_ask=ns.permission_mode == "dontAsk",
        effort=ns.effort,
        thinking=ns.thinking,
        max_thinking_tokens=ns.max_thinking_tokens,
        init_only=bool(ns.init_only),
    )
