"""The loop guard: a model that makes the same tool call and gets the same result again and again, within
one turn, is told and then stopped.

A **repeat** is a call with the same tool and input (compared canonically) as an earlier call of the same
turn whose result (content and error flag) is also the same. A call whose result changed (a build being
polled, `date`, a running job's output) starts its count again, so a model that makes progress never
trips it. On the `warn_after`-th repeat the result carries one line telling the model; on the
`stop_after`-th the turn ends. 0 turns a threshold off.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_WARN = 3
DEFAULT_STOP = 5


@dataclass(frozen=True)
class LoopGuardOptions:
    warn_after: int = DEFAULT_WARN
    stop_after: int = DEFAULT_STOP


@dataclass
class Verdict:
    note: str | None = None  # the line to append to this call's result
    stop: str | None = None  # the message that ends the turn


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def describe_call(name: str, input: Any, limit: int = 160) -> str:
    """`Read({"file_path": "a.py"})`, a long input cut in its middle (a path's end says the most)."""
    text = json.dumps(input, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[: limit // 2] + "…" + text[-(limit // 2):]
    return f"{name}({text})"


def warning_line(name: str, count: int) -> str:
    return (f"Note: this exact {name} call has returned the same result {count} times in this turn; "
            "repeating it will not change that. Change your approach.")


def stop_message(name: str, input: Any, count: int) -> str:
    return (f"Stopped: the model repeated the same call {count} times with the same result: "
            f"{describe_call(name, input)}.")


@dataclass
class LoopGuard:
    """One turn's memory of calls: call digest -> (result digest, repeats so far)."""

    options: LoopGuardOptions = field(default_factory=LoopGuardOptions)
    seen: dict[str, tuple[str, int]] = field(default_factory=dict)

    def observe(self, name: str, input: Any, content: Any, is_error: bool) -> Verdict:
        call = _digest([name, input])
        result = _digest([content, bool(is_error)])
        previous = self.seen.get(call)
        repeats = previous[1] + 1 if previous is not None and previous[0] == result else 0
        self.seen[call] = (result, repeats)
        opts = self.options
        if opts.stop_after and repeats >= opts.stop_after:
            return Verdict(stop=stop_message(name, input, repeats + 1))
        if opts.warn_after and repeats >= opts.warn_after:
            return Verdict(note=warning_line(name, repeats + 1))
        return Verdict()


def parse_options(raw: Any) -> tuple[LoopGuardOptions | None, str | None]:
    """Settings' `loopGuard` ({"warnAfter": n, "stopAfter": n}, 0 = off): the options, or a problem."""
    if not isinstance(raw, dict):
        return None, "must be an object like {\"warnAfter\": 3, \"stopAfter\": 5}"
    values: dict[str, int] = {}
    for key, default in (("warnAfter", DEFAULT_WARN), ("stopAfter", DEFAULT_STOP)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None, f"{key} must be a whole number, 0 or more"
        values[key] = value
    return LoopGuardOptions(values["warnAfter"], values["stopAfter"]), None


def stricter(current: LoopGuardOptions, wanted: LoopGuardOptions) -> bool:
    """Whether `wanted` never lets a loop run longer than `current` (what an untrusted folder may set)."""
    def tighter(new: int, old: int) -> bool:
        return old == 0 or (new != 0 and new <= old)

    return tighter(wanted.warn_after, current.warn_after) and tighter(wanted.stop_after, current.stop_after)
