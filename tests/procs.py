"""Process checks shared by the tests that prove a child was killed."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live process; a zombie (exited, not yet reaped) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False
