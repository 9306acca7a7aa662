"""Credentials stay home: the environment every child process gets (Bash, hooks, MCP servers).

The agent's own secrets are removed, plus any name listed in the `secretEnv` setting, unless a
user-scope `passEnv` setting lets that name through. `env` from trusted settings is added on top
(it cannot re-add a stripped secret). Configure once per process with `configure(...)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from services.config import process_environ

AGENT_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "BRAVE_API_KEY", "TAVILY_API_KEY")

_extra_secrets: set[str] = set()
_passed: set[str] = set()
_settings_env: dict[str, str] = {}


def configure(secret_env: Iterable[str] = (), pass_env: Iterable[str] = (), env: Mapping[str, str] | None = None) -> None:
    _extra_secrets.clear()
    _extra_secrets.update(secret_env)
    _passed.clear()
    _passed.update(pass_env)
    _settings_env.clear()
    _settings_env.update(env or {})


def secret_names() -> set[str]:
    return (set(AGENT_SECRETS) | _extra_secrets) - _passed


def is_secret(name: str) -> bool:
    return name in secret_names()


def child_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: the process environment the configuration was loaded from) plus settings `env`
    plus `extra`, minus the secrets."""
    secrets = secret_names()
    env = {k: v for k, v in (process_environ() if base is None else base).items() if k not in secrets}
    env.update({k: v for k, v in _settings_env.items() if k not in secrets})
    env.update({k: v for k, v in (extra or {}).items() if k not in secrets})
    return env


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def secret_references(value: str) -> list[str]:
    """The `${NAME}` references in `value` that name a secret (an MCP config may not expand those)."""
    return [m for m in _VAR.findall(value) if is_secret(m)]
