"""Below a writable root, the existing paths a later session loads (services/loaded_config.py): the sandbox
binds them read-only (tools/sandbox.py `_protect_loaded`).

Breadth first; symlinks are never followed; not into dependency and build trees (`WALK_SKIP`), nor into a
nested repository's git dir beyond its config and hooks, nor into a loaded directory (held as a whole).
Bounded by entries and time: on the cap, what was found is still protected (the caller says so in a trace).

It runs before every sandboxed command (the session's sandbox compares what a fresh one would be), so each
directory's listing is kept with its (device, inode, ctime): a directory whose ctime is unchanged has the
same entries and is not read again, which leaves one lstat per directory. ctime, not mtime: a command can
set a directory's mtime back (`touch -d`), not its ctime. A directory changed less than `SETTLE_S` ago is
not kept: a second change within the file system's timestamp tick would leave its ctime as it was.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from services.loaded_config import DOTENV_PREFIX, GIT_LOADED, fold, is_loaded_name

# Nobody starts a session in these; they are large.
WALK_SKIP = frozenset(("node_modules", ".venv", "venv", "target", "__pycache__", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", ".gradle", ".terraform", ".next", "site-packages"))
WALK_MAX_ENTRIES = 20_000
WALK_MAX_S = 0.5
SETTLE_S = 1.0
MAX_CACHED_DIRS = 50_000


@dataclass
class Walk:
    """The loaded configuration found below a root, and why the walk stopped early (None: it did not)."""

    found: list[str]
    entries: int = 0
    capped: str | None = None


@dataclass(frozen=True)
class _Listing:
    ident: tuple[int, int, int]  # (device, inode, ctime) when it was read
    found: tuple[str, ...]  # names to hold read-only
    children: tuple[tuple[str, bool], ...]  # names to walk into; True: a nested repository's git dir
    entries: int


_lock = threading.Lock()
_cache: dict[tuple[str, bool], _Listing] = {}


def _classify(entry: os.DirEntry[str]) -> str | None:
    """"found" (hold it), "dir" (walk into it), "git" (a nested git dir: its config and hooks) or None."""
    name = entry.name
    try:
        if entry.is_symlink():
            return None  # never followed: a link is replaced as easily as a new file is made
        is_dir = entry.is_dir(follow_symlinks=False)
    except OSError:
        return None
    if name == ".git":
        return "git" if is_dir else "found"  # a `.git` file names the git dir
    if is_dir and fold(name).startswith(DOTENV_PREFIX):
        return None  # a virtualenv called `.env`: no dotenv file, nothing loaded from inside
    if is_loaded_name(name):
        return "found"
    return "dir" if is_dir and name not in WALK_SKIP else None


def _scan(folder: str, git: bool) -> tuple[list[str], list[tuple[str, bool]], int]:
    found: list[str] = []
    children: list[tuple[str, bool]] = []
    count = 0
    with os.scandir(folder) as it:
        for entry in it:
            count += 1
            if git:
                if entry.name in GIT_LOADED and not entry.is_symlink():
                    found.append(entry.name)
                continue
            kind = _classify(entry)
            if kind == "found":
                found.append(entry.name)
            elif kind is not None:
                children.append((entry.name, kind == "git"))
    return found, children, count


def _listing(folder: str, git: bool, now: float) -> _Listing | None:
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None  # replaced since its parent was read
    ident = (st.st_dev, st.st_ino, st.st_ctime_ns)  # taken before the read: a change during it shows next time
    cached = _cache.get((folder, git))
    if cached is not None and cached.ident == ident:
        return cached
    try:
        found, children, count = _scan(folder, git)
    except OSError:
        return None  # unreadable: the command cannot write there either, or it is gone
    listing = _Listing(ident, tuple(found), tuple(children), count)
    if now - st.st_ctime_ns / 1e9 > SETTLE_S:
        with _lock:
            if len(_cache) >= MAX_CACHED_DIRS:
                _cache.clear()
            _cache[(folder, git)] = listing
    return listing


def find_loaded(root: str, skip: Iterable[str] = (), max_entries: int | None = None,
                max_s: float | None = None) -> Walk:
    """Every existing path below `root` a later session would load (`.env*`, `.claude/`, `CLAUDE.md`, a
    nested `.git/config`...); `skip`: names at the root the caller handles. Stops once more than
    `max_entries` directory entries were read or after `max_s` seconds, keeping what it found."""
    max_entries = WALK_MAX_ENTRIES if max_entries is None else max_entries
    max_s = WALK_MAX_S if max_s is None else max_s
    walk = Walk([])
    skipped = set(skip)
    now, deadline = time.time(), time.monotonic() + max_s
    queue: deque[tuple[str, bool]] = deque([(root, False)])
    while queue:
        folder, git = queue.popleft()
        listing = _listing(folder, git, now)
        if listing is None:
            continue
        walk.entries += listing.entries
        at_root, prefix = folder == root, folder.rstrip("/") + "/"
        walk.found += [prefix + n for n in listing.found if not (at_root and n in skipped)]
        queue.extend((prefix + n, g) for n, g in listing.children if not (at_root and n in skipped))
        if queue and walk.entries > max_entries:
            walk.capped = f"{max_entries} entries"
        elif queue and time.monotonic() > deadline:
            walk.capped = f"{max_s:g} s"
        if walk.capped is not None:
            break
    return walk
