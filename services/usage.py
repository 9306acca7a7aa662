"""Token usage totals, kept per model, and the cost of each request priced by the model that served it.

Each response's usage is added with the model that produced it, and its cost is computed then (with
that model's cache and long-context rates), so `/model` switching later never re-prices the past.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.models import price

_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def request_cost(model: str, usage: dict[str, int]) -> float:
    """USD for one response's usage on `model` (long-context rates when its input passed the price's threshold)."""
    p = price(model)
    inp = int(usage.get("input_tokens", 0) or 0)
    out = int(usage.get("output_tokens", 0) or 0)
    write = int(usage.get("cache_creation_input_tokens", 0) or 0)
    read = int(usage.get("cache_read_input_tokens", 0) or 0)
    in_rate, out_rate, scale = p.input, p.output, 1.0
    if p.long_input is not None and inp + write + read > p.long_above:
        scale = p.long_input / p.input if p.input else 1.0
        in_rate, out_rate = p.long_input, p.long_output or p.output
    return (inp * in_rate + write * p.cache_write * scale + read * p.cache_read * scale + out * out_rate) / 1_000_000


@dataclass
class _Counts:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    requests: int = 0


@dataclass
class ModelUsage(_Counts):
    cost_usd: float = 0.0


# Far above any real figure, so a damaged one cannot overflow a price or a budget.
_MAX_COUNT = 10**12


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return min(max(value, 0), _MAX_COUNT)


@dataclass
class Usage(_Counts):
    by_model: dict[str, ModelUsage] = field(default_factory=dict)
    # Usage added without a model (old transcripts): priced at cost() time with the given model.
    unattributed: dict[str, int] = field(default_factory=dict)
    # Sub-agents still running: their usage joins these totals when they end (merge), but a budget must
    # see their spending as it happens.
    running: list[Usage] = field(default_factory=list)

    def add(self, usage: dict[str, int] | None, model: str | None = None, requests: int | None = None) -> None:
        """One response's usage (or, with `requests`, a roll-up of several, e.g. a sub-agent's). The
        figures come from an API reply or a transcript: a field that is not a count counts as 0."""
        usage = usage if isinstance(usage, dict) else None
        model = model if isinstance(model, str) and model else None
        if requests is not None:
            requests = _count(requests)
        if requests is None:
            if not usage:  # a reply without usage (scripted, mock) is not a billed request
                return
            requests = 1
        if not usage and not requests:
            return
        usage = usage or {}
        self.requests += requests
        counts = {k: _count(usage.get(k)) for k in _KEYS}
        self.input_tokens += counts["input_tokens"]
        self.output_tokens += counts["output_tokens"]
        self.cache_creation_input_tokens += counts["cache_creation_input_tokens"]
        self.cache_read_input_tokens += counts["cache_read_input_tokens"]
        if model is None:
            for k, v in counts.items():
                self.unattributed[k] = self.unattributed.get(k, 0) + v
            return
        mu = self.by_model.setdefault(model, ModelUsage())
        mu.requests += requests
        mu.input_tokens += counts["input_tokens"]
        mu.output_tokens += counts["output_tokens"]
        mu.cache_creation_input_tokens += counts["cache_creation_input_tokens"]
        mu.cache_read_input_tokens += counts["cache_read_input_tokens"]
        mu.cost_usd += request_cost(model, counts)

    def merge(self, other: Usage) -> None:
        """Adds another Usage (a sub-agent's) keeping its per-model split and costs."""
        for model, mu in other.by_model.items():
            mine = self.by_model.setdefault(model, ModelUsage())
            for k in (*_KEYS, "requests", "cost_usd"):
                setattr(mine, k, getattr(mine, k) + getattr(mu, k))
        for k, v in other.unattributed.items():
            self.unattributed[k] = self.unattributed.get(k, 0) + v
        for k in (*_KEYS, "requests"):
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def cost(self, fallback_model: str = "") -> float:
        """Total USD: each model's own cost, plus unattributed usage priced at `fallback_model`."""
        total = sum(mu.cost_usd for mu in self.by_model.values())
        if self.unattributed:
            total += request_cost(fallback_model, self.unattributed)
        return total

    def spent(self, fallback_model: str = "") -> float:
        """What the session has spent so far, sub-agents still running included."""
        return self.cost(fallback_model) + sum(u.spent(fallback_model) for u in self.running)

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }

    def model_usage(self) -> dict[str, dict[str, float | int]]:
        """Per model, the shape Claude Code's `modelUsage` uses (camelCase counts and costUSD)."""
        return {
            model: {
                "inputTokens": mu.input_tokens,
                "outputTokens": mu.output_tokens,
                "cacheReadInputTokens": mu.cache_read_input_tokens,
                "cacheCreationInputTokens": mu.cache_creation_input_tokens,
                "costUSD": round(mu.cost_usd, 6),
            }
            for model, mu in self.by_model.items()
        }
