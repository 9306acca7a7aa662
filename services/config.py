"""Settings read from the environment (and a trusted folder's `.env`), and where state lives.

Every variable the agent reads is listed in `.env.example`. A malformed value is a `ConfigError` that
names the variable, never a traceback.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

# An alias, never an id: the catalog (services/models.py) says what it is today, so it cannot go stale.
DEFAULT_MODEL = "default"
DEFAULT_MAX_TURNS = 100
# 0: the model's default from the catalog (services/models.py), resolved per request, so that
# `--model` and `/model` get their own model's output room.
DEFAULT_MAX_TOKENS = 0


class ConfigError(Exception):
    """A configuration value is unusable; the message names where it came from and the field."""


# The agent's own variables: the only names a project `.env` may set (kept equal to .env.example by a test).
AGENT_VARIABLES = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "MAX_TOKENS",
    "MAX_TURNS", "API_MAX_RETRIES", "API_TIMEOUT_MS", "QUERY_MOCK", "AGENT_HOME", "TRACE", "ALLOW_WRITE",
    "COMPACT", "COMPACT_THRESHOLD_CHARS", "COMPACT_MAX_TOOL_RESULT_CHARS", "COMPACT_MAX_TURN_TOOL_RESULT_CHARS",
    "COMPACT_MICRO_KEEP_RECENT", "COMPACT_MICRO_MIN_CHARS", "COMPACT_MICRO_LOW_WATER_PERCENT",
    "AUTOCOMPACT", "AUTOCOMPACT_PERCENT", "CONTEXT_WINDOW_TOKENS", "HOOKS", "MCP_CONFIG",
    "MCP_CONNECT_TIMEOUT_MS", "MCP_CALL_TIMEOUT_MS", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "MCP_STARTUP_WAIT_MS",
    "AGENT_ECHO_TOOL", "AGENT_MAX_DEPTH",
    "WEBFETCH_ALLOW_PRIVATE", "WEB_SEARCH_ADAPTER", "BRAVE_API_KEY", "TAVILY_API_KEY", "SPILL_MAX_AGE_DAYS",
    "MAX_THINKING_TOKENS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "AGENT_SERVER_TOOLS", "AGENT_SANDBOX",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_MAX_CONTEXT_TOKENS", "CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP",
)
# Never taken from a project file, even a trusted one: where state lives is the user's choice.
_NOT_FROM_DOTENV = ("AGENT_HOME", "AGENT_SANDBOX")  # AGENT_SANDBOX: only the user turns the sandbox off

# The one configuration source, set once at the edge by `use_environment` (agent/loop/factory.py): the
# process environment it was given, and a trusted folder's `.env` values under it. `.env` values are
# settings, not environment: never exported, so no child process (Bash, hooks, MCP servers) sees them.
# Until the edge loads it (library use, in-process tests) the source is this process's environment;
# this is the only place under services/ and tools/ that names os.environ.
_process: Mapping[str, str] = os.environ
_dotenv: dict[str, str] = {}


def read_dotenv(cwd: Path) -> dict[str, str]:
    """The agent's own variables from `<cwd>/.env` (other names are dropped); {} when there is none."""
    path = cwd / ".env"
    if not path.is_file():
        return {}
    try:
        from dotenv import dotenv_values

        values = dotenv_values(path)
    except Exception as exc:  # a broken .env must not stop the agent
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc
    return {k: v for k, v in values.items()
            if k in AGENT_VARIABLES and k not in _NOT_FROM_DOTENV and isinstance(v, str)}


def use_environment(process: Mapping[str, str], dotenv: dict[str, str]) -> None:
    """Load the configuration source once, at the edge: the process environment the front end read,
    and a trusted folder's `.env` values (below it: the real environment always wins)."""
    global _process
    _process = process
    _dotenv.clear()
    _dotenv.update(dotenv)


def process_environ() -> Mapping[str, str]:
    """The process environment the configuration was loaded from (to build a child's environment from)."""
    return _process


def getenv(name: str, default: str | None = None) -> str | None:
    """An agent setting: the real environment first, then a trusted folder's `.env`."""
    value = _process.get(name)
    if value is None:
        value = _dotenv.get(name)
    return default if value is None else value


def agent_environ() -> Mapping[str, str]:
    """The real environment with a trusted `.env` under it, as a read-only mapping for `environ=` params."""
    return ChainMap(cast("MutableMapping[str, str]", _process), _dotenv)  # read-only: a view, never written


def client_options() -> dict[str, str]:
    """SDK client arguments for credentials and endpoint that came from `.env` (the SDK reads the
    real environment itself; `.env` values are passed explicitly because they are never exported)."""
    names = {"ANTHROPIC_API_KEY": "api_key", "ANTHROPIC_AUTH_TOKEN": "auth_token", "ANTHROPIC_BASE_URL": "base_url"}
    return {arg: _dotenv[var] for var, arg in names.items() if var not in _process and _dotenv.get(var)}


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = getenv(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"environment variable {name}: expected an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"environment variable {name}: must be >= {minimum}, got {value}")
    return value


def env_flag(name: str, default: bool) -> bool:
    raw = getenv(name)
    if raw is None or raw == "":
        return default
    return raw.strip() not in ("0", "false", "False", "no", "off")


def agent_home() -> Path:
    """`AGENT_HOME` when set (tests always set it), else the per-user state directory."""
    raw = _process.get("AGENT_HOME")
    if raw:
        return Path(raw).expanduser().resolve()
    from platformdirs import user_state_dir

    return Path(user_state_dir("react-agent"))


def project_slug(cwd: Path) -> str:
    """A readable, collision-safe directory name for a project path."""
    resolved = str(cwd.resolve())
    readable = re.sub(r"[^A-Za-z0-9]+", "-", resolved).strip("-")[-60:] or "root"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


def project_dir(cwd: Path) -> Path:
    return agent_home() / "projects" / project_slug(cwd)


def _default_model() -> str:
    from services.models import resolve_model

    return resolve_model(DEFAULT_MODEL, agent_environ())


@dataclass
class Settings:
    model: str = field(default_factory=_default_model)
    max_turns: int = DEFAULT_MAX_TURNS
    max_tokens: int = DEFAULT_MAX_TOKENS
    mock: bool = False
    effort: str | None = None  # --effort (Claude Code's flag): low | medium | high | xhigh | max
    thinking_mode: str | None = None  # --thinking adaptive | enabled | disabled
    max_thinking_tokens: int | None = None  # --max-thinking-tokens (beats MAX_THINKING_TOKENS)
    max_output_tokens: int = 0  # CLAUDE_CODE_MAX_OUTPUT_TOKENS: max_tokens when MAX_TOKENS is not set

    @classmethod
    def from_env(cls) -> Settings:
        from services.models import resolve_model

        return cls(
            # Claude Code's name for the output limit; a bad value names the variable.
            max_output_tokens=env_int("CLAUDE_CODE_MAX_OUTPUT_TOKENS", 0, minimum=1),
            model=resolve_model(getenv("ANTHROPIC_MODEL") or DEFAULT_MODEL, agent_environ()),
            max_turns=env_int("MAX_TURNS", DEFAULT_MAX_TURNS, minimum=1),
            max_tokens=env_int("MAX_TOKENS", DEFAULT_MAX_TOKENS, minimum=1),
            mock=getenv("QUERY_MOCK") == "1",
        )


def has_credentials() -> bool:
    return bool(getenv("ANTHROPIC_API_KEY") or getenv("ANTHROPIC_AUTH_TOKEN"))
