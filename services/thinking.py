"""Extended thinking, on by default as Claude Code 2.1.332 sends it, per model.

With no setting, every model that thinks gets what Claude Code sent it (recorded in
tests/fixtures/claude_code/models/recorded.json; the catalog's `thinking` and `effort_sent` hold it):
budget models `{"type": "enabled", "budget_tokens": 31999, "display": "omitted"}`; adaptive ones
`{"type": "adaptive", "display": "omitted"}` with `output_config.effort` (the model's default).

The knobs, with Claude Code's names and meaning (each recorded):
- `MAX_THINKING_TOKENS=N`: the budget of a budget model (adaptive models ignore it); `0` turns thinking off.
- `alwaysThinkingEnabled: false` (settings.json) or `--thinking disabled`: off too.
- `--effort low|medium|high|xhigh|max`: the effort of a model that takes one (budget models ignore it).
Off is `{"type": "disabled"}` (an adaptive model keeps its effort); a model that rejects `disabled`
(`adaptive_only`) keeps adaptive thinking, as Claude Code does. The request fields that go with thinking
(`context_management`, the betas) are added by the provider from `request_extras`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.config import ConfigError, env_int
from services.models import info, max_output_tokens, thinking_support

EFFORTS = ("low", "medium", "high", "xhigh", "max")
MIN_BUDGET = 1024  # the API's minimum budget_tokens
DEFAULT_BUDGET = 31_999  # Claude Code's budget when no number is set
DISPLAY = "omitted"  # Claude Code asks for no thinking text: only the signed block comes back
SETTING = "alwaysThinkingEnabled"
CONTEXT_MANAGEMENT = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
EFFORT_BETA = "effort-2025-11-24"


@dataclass
class ThinkingOptions:
    budget: int | None = None  # MAX_THINKING_TOKENS; 0 = off
    always: bool | None = None  # alwaysThinkingEnabled; False = off, None = not set (on)
    effort: str | None = None  # --effort
    display: str = DISPLAY  # "updates" where the front end reports thinking (stream-json --verbose)

    @property
    def off(self) -> bool:
        return self.budget == 0 or self.always is False

    @property
    def wanted(self) -> bool:
        return not self.off

    def toggled(self) -> ThinkingOptions:
        """The same options with thinking switched the other way (the REPL's Alt+T)."""
        if self.off:
            return ThinkingOptions(None if self.budget == 0 else self.budget, None, self.effort, self.display)
        return ThinkingOptions(self.budget, False, self.effort, self.display)


def options_from(settings_paths: list[Path], effort: str | None = None, mode: str | None = None,
                 budget: int | None = None) -> ThinkingOptions:
    """Reads MAX_THINKING_TOKENS and `alwaysThinkingEnabled` (later files win), then the flags
    (`--max-thinking-tokens`, `--thinking enabled|adaptive|disabled`, `--effort`); a bad value is a
    ConfigError naming the variable or the file and field."""
    env_budget = env_int("MAX_THINKING_TOKENS", -1, minimum=0)
    if budget is None:
        budget = env_budget
    always: bool | None = None
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


def _effort(model: str, opts: ThinkingOptions) -> dict[str, Any] | None:
    """`output_config` for the model: --effort where the model takes an effort, else its default."""
    known = info(model)
    if known.effort_sent is None and thinking_support(model) == "budget":
        return None  # Claude Code sends no effort to these (recorded), --effort included
    effort = opts.effort if opts.effort and (known.efforts or known.effort_sent) else known.effort_sent
    return {"effort": effort} if effort else None


def thinking_request(
    model: str, max_tokens: int, opts: ThinkingOptions | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int]:
    """(thinking, output_config, max_tokens) for one request to `model`; None options are the defaults."""
    opts = opts or ThinkingOptions()
    support = thinking_support(model)
    if support == "none":
        return None, None, max_tokens
    output_config = _effort(model, opts)
    if support == "adaptive_only" or (support == "adaptive" and not opts.off):
        return {"type": "adaptive", "display": opts.display}, output_config, max_tokens
    if opts.off:
        return {"type": "disabled"}, output_config, max_tokens
    limit = max_output_tokens(model)
    budget = max(MIN_BUDGET, opts.budget or DEFAULT_BUDGET)
    if max_tokens <= budget and opts.budget:
        # A budget set above max_tokens: keep room for the answer above it.
        max_tokens = min(limit, budget + max(max_tokens, 4096))
    budget = min(budget, max_tokens - 1)
    if budget < MIN_BUDGET:
        return {"type": "disabled"}, output_config, max_tokens
    return {"type": "enabled", "budget_tokens": budget, "display": opts.display}, output_config, max_tokens


def request_extras(thinking: dict[str, Any] | None, output_config: dict[str, Any] | None
                   ) -> tuple[dict[str, Any] | None, list[str]]:
    """(context_management, betas) that go with these fields, as Claude Code sends them: the thinking
    betas whenever a thinking field is sent (even `disabled`), thinking kept whole across turns while
    it is on, the effort beta with an effort."""
    if thinking is None:
        return None, []
    betas = [INTERLEAVED_THINKING_BETA, CONTEXT_MANAGEMENT_BETA]
    if output_config and output_config.get("effort"):
        betas.append(EFFORT_BETA)
    on = thinking.get("type") != "disabled"
    return (dict(CONTEXT_MANAGEMENT) if on else None), betas


def describe(model: str, opts: ThinkingOptions | None) -> str:
    """One line for /status: what the next request to `model` asks for."""
    thinking, output_config, _ = thinking_request(model, 32_000, opts)
    if thinking is None:
        return "not supported by this model"
    kind = thinking["type"]
    effort = f", effort {output_config['effort']}" if output_config else ""
    if kind == "disabled":
        return f"off{effort} (Alt+T turns it on)"
    budget = f", budget {thinking['budget_tokens']}" if kind == "enabled" else ""
    forced = " (this model always thinks)" if thinking_support(model) == "adaptive_only" else " (Alt+T turns it off)"
    return f"on ({kind}{budget}{effort}){forced}"
