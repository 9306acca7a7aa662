"""Token usage totals and an estimated cost with cache pricing."""

from __future__ import annotations

from dataclasses import dataclass

# USD per million tokens: (input, output). Cache write is 1.25x input, cache read 0.1x input.
PRICES = {
    "opus-4-5": (5.0, 25.0),
    "opus-4-6": (5.0, 25.0),
    "opus": (15.0, 75.0),
    "sonnet": (3.0, 15.0),
    "haiku-4-5": (1.0, 5.0),
    "haiku": (0.8, 4.0),
}


def price_for(model: str) -> tuple[float, float]:
    for key, price in PRICES.items():
        if key in model:
            return price
    return PRICES["sonnet"]


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    requests: int = 0

    def add(self, usage: dict[str, int] | None) -> None:
        if not usage:
            return
        self.requests += 1
        self.input_tokens += int(usage.get("input_tokens", 0) or 0)
        self.output_tokens += int(usage.get("output_tokens", 0) or 0)
        self.cache_creation_input_tokens += int(usage.get("cache_creation_input_tokens", 0) or 0)
        self.cache_read_input_tokens += int(usage.get("cache_read_input_tokens", 0) or 0)

    def cost(self, model: str) -> float:
        inp, out = price_for(model)
        return (
            self.input_tokens * inp
            + self.cache_creation_input_tokens * inp * 1.25
            + self.cache_read_input_tokens * inp * 0.1
            + self.output_tokens * out
        ) / 1_000_000

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }
