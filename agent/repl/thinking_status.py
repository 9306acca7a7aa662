"""The REPL's thinking indicator: while a thinking block streams, a spinner whose words grow with the time
(Claude Code 2.1.332's: "thinking", "still thinking" from 10 s, "thinking more" from 20 s, "thinking some
more" from 30 s, "deep in thought" from 45 s); when it ends, one dim line "thought for Ns" (at least 1 s).
With the thinking display omitted (our requests' default) only these show; summarised text, when the API
sends it, is printed dimmed under the header as before (agent/repl/render.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

STAGES = ((45.0, "deep in thought"), (30.0, "thinking some more"), (20.0, "thinking more"),
          (10.0, "still thinking"), (0.0, "thinking"))


def label(seconds: float) -> str:
    return next(words for start, words in STAGES if seconds >= start)


def thought_for(seconds: float) -> str:
    return f"thought for {max(1, round(seconds))}s"


@dataclass
class ThinkingClock:
    """When the open thinking block started (None: none open)."""

    clock: Callable[[], float] = time.monotonic
    started: float | None = field(default=None)

    def start(self) -> bool:
        """Open a block; False when one is already open."""
        if self.started is not None:
            return False
        self.started = self.clock()
        return True

    def running(self) -> str | None:
        return None if self.started is None else label(self.clock() - self.started)

    def stop(self) -> str | None:
        """Close the open block: its "thought for Ns" line, or None when none was open."""
        if self.started is None:
            return None
        seconds, self.started = self.clock() - self.started, None
        return thought_for(seconds)
