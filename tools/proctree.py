"""Killing everything a command started, including what escaped its process group.

A process group is not enough: `setsid cmd &` (or a daemon's double fork) leaves the group and, once
its parent is gone, the parent chain too. Every Bash command therefore runs with a per-call marker in
its environment (`AGENT_TOOL_TOKEN`), which its descendants inherit whatever group or session they
move to. `kill_tree` sends the signal to every process of the group or session, every descendant by
parent pid, and every process of ours whose environment carries the marker, in rounds until two scans
find nothing alive (a process forked during a round is caught by the next). Linux /proc only, no PID
namespace or cgroup needed; elsewhere it falls back to the process group.

`die_with_parent` is a `preexec_fn` that makes a helper (ripgrep) get SIGKILL when the agent dies, so
a search blocked on a pipe never outlives a killed agent.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
import uuid
from collections.abc import Callable

TOKEN_VAR = "AGENT_TOOL_TOKEN"
PROC = "/proc"
PR_SET_PDEATHSIG = 1
MAX_ROUNDS = 50


def new_token() -> str:
    return uuid.uuid4().hex


def _stat(pid: str) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) of a process, or None when it is gone."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces or parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[3])
    except (IndexError, ValueError):
        return None


def _has_token(pid: str, marker: bytes) -> bool:
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as f:
            return marker in f.read()
    except OSError:
        return False


def members(root: int, token: str | None) -> set[int]:
    """Live (non-zombie) processes that belong to the command started as `root` (a session leader)."""
    me = os.getpid()
    marker = f"{TOKEN_VAR}={token}\0".encode() if token else None
    table: dict[int, tuple[str, int, int, int]] = {}
    try:
        pids = [p for p in os.listdir(PROC) if p.isdigit()]
    except OSError:
        return set()
    for p in pids:
        st = _stat(p)
        if st is not None:
            table[int(p)] = st
    found = {pid for pid, (_, _, pgrp, sid) in table.items() if pgrp == root or sid == root}
    if root in table:
        found.add(root)
    if marker is not None:
        found |= {pid for pid in table if pid not in found and _has_token(str(pid), marker)}
    # Descendants by parent pid (a child that changed group and session but not its parent yet).
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    found.discard(me)
    return {pid for pid in found if table.get(pid, ("Z",))[0] != "Z"}


def kill_tree(root: int, token: str | None, sig: int = signal.SIGKILL) -> int:
    """Signal the whole command (see the module); returns how many processes were signalled.

    With SIGKILL it repeats until nothing is left; other signals are sent once (a grace period follows).
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, sig)
    if not os.path.isdir(PROC):
        return 0
    return _signal_rounds(lambda: members(root, token), sig)


def kill_marked(token: str, sig: int = signal.SIGKILL) -> int:
    """Signal every process of ours carrying the command's token, and their descendants (a command whose
    pid we do not know: one forked by the sandbox's supervisor). Rounds as in `kill_tree`."""
    return _signal_rounds(lambda: members(-1, token) if os.path.isdir(PROC) else set(), sig)  # -1: no group


def _signal_rounds(find: Callable[[], set[int]], sig: int) -> int:
    """Signal what `find` returns, again until two rounds find nothing (SIGKILL: a dying parent's
    children may still be forking), at most MAX_ROUNDS; other signals once."""
    total = 0
    quiet = 0
    for _ in range(MAX_ROUNDS):
        pids = find()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        total += len(pids)
        if sig != signal.SIGKILL:
            break
        quiet = quiet + 1 if not pids else 0
        if quiet >= 2:
            break
        time.sleep(0.005)
    return total


_libc = None


def die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """preexec_fn: SIGKILL this child when the agent dies (Linux prctl; a no-op elsewhere)."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def pdeathsig_preexec() -> Callable[[], None] | None:
    """`die_with_parent` when prctl is available (libc loaded now, in the parent, not after fork)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.prctl  # noqa: B018 - resolve the symbol before any fork
        except (OSError, AttributeError):
            return None
    return die_with_parent
