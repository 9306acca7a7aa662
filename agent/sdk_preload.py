"""Start importing the `anthropic` SDK in a background thread, as early as possible.

The SDK's import (mostly its pydantic types) is most of a one-shot run's time to the first request. Started
first, it overlaps what the main thread does meanwhile (reading settings and instruction files, git for the
environment block, building tools); when the provider later imports `anthropic`, Python's import lock makes
it wait for this import instead of starting another. A failure here is ignored: the real import reports it.
"""

from __future__ import annotations

import threading

_started = False


def preload_sdk() -> None:
    global _started
    if _started:
        return
    _started = True

    def load() -> None:
        try:
            import anthropic  # noqa: F401
        except Exception:
            pass

    threading.Thread(target=load, name="sdk-preload", daemon=True).start()
