"""What a folder's trust covered: a digest of the configuration a session started there loads.

Trust by path alone would let anything that can write the folder later (a sandboxed command, a script, a
`git pull`) plant configuration the user never saw: `.env` pointing the API key at another host, a
`.mcp.json` server, `sub/.claude/settings.json` hooks for a later session started in `sub`. So trusting a
folder records, per folder a session started in, the SHA-256 of each file there that runs code or
redirects the agent (`.env*`, `.mcp.json`, `.lsp.json`, `.envrc`, everything under `.claude/` and
`.agents/` but the instruction files). A file added, changed or removed since makes the folder untrusted
until the user answers again (the REPL asks, `-p` says so on stderr). Empty files count as absent (a
sandbox placeholder is one). Instruction files (CLAUDE.md, AGENTS.md) are left out: they steer the model
but run nothing, and the agent itself edits them (`#` memory, /init). The agent's own writes of settings
(a "don't ask again" rule) refresh the digest (`refresh_file`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from services.loaded_config import DOTENV_PREFIX, LOADED_DIRS, LOADED_FILES, fold, is_instructions

# A configuration tree is small; past these the rest counts as one "too many files" entry (still changed
# when it changes size).
MAX_FILES = 2000
MAX_DEPTH = 8
_TOP_FILES = frozenset(fold(n) for n in LOADED_FILES if n != ".gitattributes")


def _sha(path: Path) -> str | None:
    """The file's digest, or None for an empty file, a non-file or an unreadable one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        h = hashlib.sha256()
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _top_level(cwd: Path) -> list[str]:
    try:
        names = sorted(os.listdir(cwd))
    except OSError:
        return []
    return [n for n in names if fold(n) in _TOP_FILES or fold(n).startswith(DOTENV_PREFIX)]


def _tree(cwd: Path, top: str, out: dict[str, str]) -> None:
    stack = [(top, 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            entries = sorted(os.scandir(cwd / rel), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if len(out) >= MAX_FILES:
                out["(more files)"] = "cap"
                return
            sub = f"{rel}/{e.name}"
            if e.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH:
                    stack.append((sub, depth + 1))
            elif not is_instructions(e.name):
                digest = _sha(cwd / sub)
                if digest is not None:
                    out[sub] = digest


def config_digest(cwd: Path) -> dict[str, str]:
    """Path (relative to `cwd`) -> SHA-256 of each non-empty configuration file a session in `cwd` loads."""
    out: dict[str, str] = {}
    for name in _top_level(cwd):
        if (cwd / name).is_dir():
            continue  # a `.env` directory is a virtualenv, not variables
        digest = _sha(cwd / name)
        if digest is not None:
            out[name] = digest
    for top in LOADED_DIRS:
        if (cwd / top).is_dir() and not (cwd / top).is_symlink():
            _tree(cwd, top, out)
    return out


def changed_files(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """Files added, changed or removed since `recorded`, each once, sorted."""
    return sorted(k for k in set(recorded) | set(now) if recorded.get(k) != now.get(k))


def is_config_file(rel: str) -> bool:
    """Whether a path relative to a session folder is one `config_digest` covers."""
    parts = rel.split("/")
    if len(parts) == 1:
        return fold(parts[0]) in _TOP_FILES or fold(parts[0]).startswith(DOTENV_PREFIX)
    return parts[0] in LOADED_DIRS and not is_instructions(parts[-1])
