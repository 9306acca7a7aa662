"""TRACE=1: one `[trace] <stage> k=v ...` line per step of the machinery, on stderr.

One helper for every call site, so the format stays uniform and secrets are scrubbed in one place.
"""

from __future__ import annotations

import re
import sys

_SECRET_KEYS = re.compile(r"(key|token|authorization|secret|password)", re.I)


_forced = False  # --debug: on whatever TRACE says


def turn_on() -> None:
    """Trace from now on (`--debug`), without writing TRACE into the environment children inherit."""
    global _forced
    _forced = True


def enabled() -> bool:
    from services.config import getenv

    return _forced or getenv("TRACE") == "1"


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    # Keep each trace on one line.
    return text.replace("\n", "\\n")


def trace(stage: str, **fields: object) -> None:
    if not enabled():
        return
    parts = [f"[trace] {stage}"]
    for k, v in fields.items():
        if _SECRET_KEYS.search(k):
            v = "***"
        parts.append(f"{k}={_fmt(v)}")
    try:
        sys.stderr.write(" ".join(parts) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
