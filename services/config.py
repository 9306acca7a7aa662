"""Settings read from the environment (and a `.env` in the working directory), and where state lives.

Every variable the agent reads is listed in `.env.example`. A malformed value is a `ConfigError` that
names the variable, never a traceback.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_MAX_TURNS = 100
# 0: the model's default from the catalog (services/models.py), resolved per request, so that
# `--model` and `/model` get their own model's output room.
DEFAULT_MAX_TOKENS = 0


class ConfigError(Exception):
    """A configuration value is unusable; the message names where it came from and the field."""


def load_dotenv_file(cwd: Path) -> None:
    """Load `<cwd>/.env` for the agent's own settings, never overriding what is already set."""
    path = cwd / ".env"
    if not path.is_file():
        return
    try:
        from dotenv import load_dotenv

        load_dotenv(path, override=False)
    except Exception as exc:  # a broken .env must not stop the agent
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
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
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip() not in ("0", "false", "False", "no", "off")


def agent_home() -> Path:
    """`AGENT_HOME` when set (tests always set it), else the per-user state directory."""
    raw = os.environ.get("AGENT_HOME")
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


@dataclass
class Settings:
    model: str = DEFAULT_MODEL
    max_turns: int = DEFAULT_MAX_TURNS
    max_tokens: int = DEFAULT_MAX_TOKENS
    mock: bool = False
    effort: str | None = None  # --effort (Claude Code's flag): low | medium | high | xhigh | max
    thinking_mode: str | None = None  # --thinking adaptive | enabled | disabled
    max_thinking_tokens: int | None = None  # --max-thinking-tokens (beats MAX_THINKING_TOKENS)

    @classmethod
    def from_env(cls) -> Settings:
        from services.models import resolve_model

        # Claude Code's name for the output limit; checked here so a bad value names the variable.
        env_int("CLAUDE_CODE_MAX_OUTPUT_TOKENS", 0, minimum=1)
        return cls(
            model=resolve_model(os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL),
            max_turns=env_int("MAX_TURNS", DEFAULT_MAX_TURNS, minimum=1),
            max_tokens=env_int("MAX_TOKENS", DEFAULT_MAX_TOKENS, minimum=1),
            mock=os.environ.get("QUERY_MOCK") == "1",
        )


def has_credentials() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
