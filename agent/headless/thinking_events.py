"""Thinking in stream-json and `--output-format json --verbose`, as Claude Code 2.1.332 reports it (recorded):

- the request asks for `display: "updates"` (thinking text comes back) instead of `"omitted"`;
- each thinking delta is a `{"type": "system", "subtype": "thinking_tokens", "estimated_tokens": N,
  "estimated_tokens_delta": n}` event (n = the delta's characters / 4, rounded up; N their sum in the reply);
- the assistant event carrying the thinking block has `thinking_duration_ms` and `thinking_display`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from services.thinking import ThinkingOptions

UPDATES = "updates"


def reports_thinking(output_format: str, verbose: bool) -> bool:
    """Whether the run streams thinking (Claude Code: json or stream-json output with --verbose)."""
    return verbose and output_format in ("json", "stream-json")


def with_updates(opts: ThinkingOptions | None) -> ThinkingOptions:
    return replace(opts or ThinkingOptions(), display=UPDATES)


@dataclass
class ThinkingMeter:
    """One reply's thinking: the estimated tokens so far and how long its blocks took."""

    clock: Callable[[], float] = time.monotonic
    tokens: int = 0
    started: float | None = None
    duration_ms: int | None = None
    display: str = UPDATES
    _spent: float = field(default=0.0)

    def delta(self, text: str) -> dict[str, Any] | None:
        """A thinking delta (empty: a block started): the thinking_tokens event to emit, if any."""
        if self.started is None:
            self.started = self.clock()
        if not text:
            return None
        n = math.ceil(len(text) / 4)
        self.tokens += n
        return {"type": "system", "subtype": "thinking_tokens", "estimated_tokens": self.tokens,
                "estimated_tokens_delta": n}

    def stop(self) -> None:
        """Something other than thinking arrived: the open block, if any, is over."""
        if self.started is not None:
            self._spent += self.clock() - self.started
            self.started = None
            self.duration_ms = max(0, round(self._spent * 1000))

    def block_fields(self) -> dict[str, Any]:
        """Fields for the event of a thinking block (taken once per reply)."""
        self.stop()
        if self.duration_ms is None:
            return {}
        fields = {"thinking_duration_ms": self.duration_ms, "thinking_display": self.display}
        self.tokens, self.duration_ms, self._spent = 0, None, 0.0
        return fields
