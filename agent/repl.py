"""The interactive REPL. A placeholder until the REPL issue lands: it says so and exits."""

from __future__ import annotations

import sys


def run_repl(opts, continue_: bool = False, resume: str | None = None) -> int:
    sys.stderr.write("The interactive REPL is not available yet; run a task with: agent \"your task\"\n")
    return 2
