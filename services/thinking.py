"""Extended thinking: from Claude Code's knobs to the request's `thinking` / `output_config` fields.

The knobs, with Claude Code's names: `MAX_THINKING_TOKENS` (a budget; 0 turns thinking off), the
`alwaysThinkingEnabled` setting (settings.json), and `--effort low|medium|high|xhigh|max`. How they
become a request depends on the model (services/models.py): budget models get
`{"type": "enabled", "budget_tokens": N}` with `max_tokens` above the budget; adaptive models get
`{"type": "adaptive"}` plus `output_config: {"effort": ...}`; adaptive-only models reject a budget,
so a budget there becomes adaptive thinking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.config import ConfigError, env_int
from services.models import max_output_tokens, thinking_support

EFFORTS = ("low", "medium", "high", "xhigh", "max")
MIN_BUDGET = 1024  # the API's minimum budget_tokens
DEFAULT_BUDGET = 31_999  # Claude Code's budget when thinking is on without a number
SETTING = "alwaysThinkingEnabled"


@dataclass
class ThinkingOptions:
    budget: int | None = None  # MAX_THINKING_TOKENS; 0 = off
    always: bool = False  # alwaysThinkingEnabled
    effort: str | None = None  # --effort

    @property
    def wanted(self) -> bool:
        if self.budget == 0:
            return False
        return bool(self.budget or self.always or self.effort)


def options_from(settings_paths: list[Path], effort: str | None = None, mode: str | None = None,
                 budget: int | None = None) -> ThinkingOptions:
    """Reads MAX_THINKING_TOKENS and `alwaysThinkingEnabled` (later files win), then the flags
    (`--max-thinking-tokens`, `--thinking enabled|adaptive|disabled`, `--effort`); a bad value is a
    ConfigError naming the variable or the file and field."""
    env_budget = env_int("MAX_THINKING_TOKENS", -1, minimum=0)
    if budget is None:
        budget = env_budget
    always = False
    for path in settings_paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a missing or broken settings file is reported by its own reader
        if isinstance(data, dict) and SETTING in data:
            if not isinstance(data[SETTING], bool):
                raise ConfigError(f"{path}: field {SETTING!r} must be true or false")
            always = data[SETTING]
    if effort is not None and effort not in EFFORTS:
        raise ConfigError(f"--effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    if mode == "disabled":
        budget = 0
    elif mode in ("enabled", "adaptive"):
        always = True
    return ThinkingOptions(budget=None if budget < 0 else budget, always=always, effort=effort)


def thinking_request(
    model: str, max_tokens: int, opts: ThinkingOptions | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int]:
    """(thinking, output_config, max_tokens) for one request to `model`."""
    if opts is None or not opts.wanted:
        return None, None, max_tokens
    support = thinking_support(model)
    if support == "none":
        return None, None, max_tokens
    output_config = {"effort": opts.effort} if opts.effort and support != "budget" else None
    if support == "adaptive_only" or (support == "adaptive" and not opts.budget):
        return {"type": "adaptive"}, output_config, max_tokens
    limit = max_output_tokens(model)
    budget = max(MIN_BUDGET, opts.budget or DEFAULT_BUDGET)
    if max_tokens <= budget:
        # The budget is part of max_tokens: keep room for the answer above it.
        max_tokens = min(limit, budget + max(max_tokens, 4096))
    budget = min(budget, max_tokens - 1)
    if budget < MIN_BUDGET:
        return None, None, max_tokens
    return {"type": "enabled", "budget_tokens": budget}, output_config, max_tokens
