"""What Claude Code's PreModelSwitch/PostModelSwitch hooks are told about a model switch (pure).

The fields and their meaning are the binary's (2.1.332's hook schema, recorded in model_switch.json):
the prompt the next request re-sends, whether its cache is likely warm, and what re-caching it on the new
model would cost.
"""

from __future__ import annotations

from typing import Any

from services.models import CATALOG, canonical, price

CACHE_TTL_SECONDS = 5 * 60  # the default prompt-cache lifetime ("5m")
SWITCH_BLOCKED = "Model switch blocked by a PreModelSwitch hook: "
CANNOT_ASK = "confirmation required, and this session cannot ask"


def context_tokens(usage: dict[str, Any] | None) -> int:
    """Prompt tokens the next request re-sends: the last response's input, cache reads and writes, and output."""
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
    return sum(int(v) for k in keys if isinstance(v := (usage or {}).get(k), int) and not isinstance(v, bool))


def switch_fields(from_model: str, to_model: str, requested: str | None, source: str,
                  last_usage: dict[str, Any] | None, seconds_since_response: float | None) -> dict[str, Any]:
    tokens = context_tokens(last_usage)
    known = canonical(to_model) in CATALOG
    write_rate = price(to_model).cache_write
    return {
        "from_model": from_model, "to_model": to_model, "requested_model": requested, "source": source,
        "context_tokens": tokens,
        "prompt_cache_warm": tokens > 0 and seconds_since_response is not None
        and seconds_since_response < CACHE_TTL_SECONDS,
        "cache_ttl": "5m",
        "estimated_cache_write_usd": round(tokens * write_rate / 1_000_000, 2),
        "pricing": "catalog" if known else "default",
    }
