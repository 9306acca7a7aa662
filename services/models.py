"""The model catalog: one table of known models, and the numbers the rest of the agent takes from it.

Aliases (`sonnet`, `opus`, `haiku`) resolve to current ids; each known model has a context window, a
maximum output, the default `max_tokens` we send, how it thinks (budget, adaptive, or adaptive only),
and prices per million tokens (input, output, 5-minute cache write, cache read, and the long-context
rates above 200K input tokens where the API charges them). Dated ids (`claude-sonnet-4-5-20250929`),
cloud-prefixed ids (`us.anthropic.claude-...`) and the `[1m]` suffix find their base entry. An unknown
id still works (a custom endpoint may serve anything): it gets conservative defaults and a warning.

Numbers are from the public model pages (platform.claude.com/docs/.../models/*/overview) as of
December 2026; `mock` is the offline model and costs nothing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

Thinking = Literal["none", "budget", "adaptive", "adaptive_only"]

LONG_CONTEXT_THRESHOLD = 200_000
_VERSION_TAIL = re.compile(r"-\d{1,2}(?:$|[-@:.])")
MOCK_MODEL = "mock"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    long_input: float | None = None  # when a request's input exceeds LONG_CONTEXT_THRESHOLD
    long_output: float | None = None


def _price(inp: float, out: float, long: tuple[float, float] | None = None) -> Price:
    # Cache writes (5 minutes) cost 1.25x input and reads 0.1x input on every current model.
    return Price(inp, out, inp * 1.25, inp * 0.1, *(long or (None, None)))


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output: int
    default_max_tokens: int
    thinking: Thinking
    price: Price


def _m(id: str, window: int, max_out: int, default: int, thinking: Thinking, price: Price) -> ModelInfo:
    return ModelInfo(id, window, max_out, default, thinking, price)


_K = 1000
_1M = 1_000_000
CATALOG: dict[str, ModelInfo] = {
    m.id: m
    for m in (
        _m("claude-opus-5-5", _1M, 128 * _K, 64_000, "adaptive_only", _price(4, 20)),
        _m("claude-sonnet-5-5", _1M, 128 * _K, 64_000, "adaptive", _price(2, 10)),
        _m("claude-opus-5", _1M, 128 * _K, 64_000, "adaptive_only", _price(5, 25)),
        _m("claude-sonnet-5", _1M, 128 * _K, 64_000, "adaptive_only", _price(2, 10)),
        _m("claude-opus-4-8", _1M, 128 * _K, 64_000, "adaptive", _price(5, 25)),
        _m("claude-opus-4-7", _1M, 128 * _K, 64_000, "adaptive_only", _price(5, 25)),
        _m("claude-opus-4-6", _1M, 128 * _K, 64_000, "adaptive", _price(5, 25)),
        _m("claude-sonnet-4-6", 200 * _K, 64 * _K, 32_000, "adaptive", _price(3, 15, (6, 22.5))),
        _m("claude-opus-4-5", 200 * _K, 64 * _K, 32_000, "budget", _price(5, 25)),
        _m("claude-sonnet-4-5", 200 * _K, 64 * _K, 32_000, "budget", _price(3, 15, (6, 22.5))),
        _m("claude-haiku-4-5", 200 * _K, 64 * _K, 32_000, "budget", _price(1, 5)),
        _m("claude-opus-4-1", 200 * _K, 32 * _K, 32_000, "budget", _price(15, 75)),
        _m("claude-opus-4", 200 * _K, 32 * _K, 32_000, "budget", _price(15, 75)),
        _m("claude-sonnet-4", 200 * _K, 64 * _K, 32_000, "budget", _price(3, 15, (6, 22.5))),
        _m("claude-3-7-sonnet", 200 * _K, 64 * _K, 32_000, "budget", _price(3, 15)),
        _m("claude-3-5-haiku", 200 * _K, 8192, 8192, "none", _price(0.8, 4)),
        _m(MOCK_MODEL, 200 * _K, 32_000, 32_000, "none", Price(0, 0, 0, 0)),
    )
}

ALIASES = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-4-5",
}

# What an unknown id gets: the window every Claude model has at least, a safe output size, no
# thinking (an unknown endpoint may reject the parameter), and Sonnet prices as the estimate.
UNKNOWN = ModelInfo("", 200 * _K, 32_000, 32_000, "none", _price(3, 15))


def resolve_model(name: str) -> str:
    """An alias (`sonnet`, `opus`, `haiku`, any case; `ANTHROPIC_DEFAULT_<ALIAS>_MODEL` overrides it)
    becomes its model id; anything else is returned stripped."""
    name = name.strip()
    alias = name.lower()
    if alias in ALIASES:
        return os.environ.get(f"ANTHROPIC_DEFAULT_{alias.upper()}_MODEL") or ALIASES[alias]
    return name


def lookup(model: str) -> ModelInfo | None:
    """The catalog entry for a model id (dated, cloud-prefixed or `[1m]` forms included), or None."""
    key = resolve_model(model).lower().removesuffix("[1m]")
    if key in CATALOG:
        return CATALOG[key]
    # The longest catalog id that the name starts with (after any cloud prefix such as
    # `us.anthropic.`), so `claude-opus-4-1-2025...` is Opus 4.1, not Opus 4.
    base = key.rsplit(".", 1)[-1] if "anthropic." in key else key
    best: ModelInfo | None = None
    for id, info in CATALOG.items():
        if base.startswith(id) and (best is None or len(id) > len(best.id)):
            rest = base[len(id) :]
            # `-20250514`, `-v1:0`, `@2025...` are forms of this id; `-5` or `-50` is another version.
            if rest == "" or (rest[0] in "-@:" and not _VERSION_TAIL.match(rest)):
                best = info
    return best


def info(model: str) -> ModelInfo:
    return lookup(model) or UNKNOWN


def is_known(model: str) -> bool:
    return lookup(model) is not None


def context_window(model: str) -> int:
    return info(model).context_window


def max_output_tokens(model: str) -> int:
    return info(model).max_output


def price(model: str) -> Price:
    return info(model).price


def thinking_support(model: str) -> Thinking:
    return info(model).thinking


def default_max_tokens(model: str, requested: int = 0) -> int:
    """What we send as `max_tokens`: `requested` (the `CLAUDE_CODE_MAX_OUTPUT_TOKENS` setting) when set,
    capped at the model's maximum, else the model's default."""
    if requested > 0:
        return min(requested, info(model).max_output)
    return info(model).default_max_tokens


def model_warning(model: str, custom_endpoint: bool) -> str | None:
    """One line for an id the catalog does not know, or None. On the Anthropic API an unknown id is
    almost surely a typo; behind a custom endpoint (ANTHROPIC_BASE_URL) it may be fine."""
    if is_known(model):
        return None
    names = ", ".join(sorted(ALIASES))
    if custom_endpoint:
        return (
            f"Unknown model '{model}': using it as given (custom endpoint); context window, output limit "
            "and cost are estimates."
        )
    return f"Unknown model '{model}'. Known aliases: {names}; or a full id such as {ALIASES['sonnet']}."
