"""Locating and running the bundled ripgrep binary (the `ripgrep` PyPI package puts `rg` next to python)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from services.credentials import child_env
from tools.base import ToolError
from tools.proctree import pdeathsig_preexec

MISSING_MESSAGE = (
    "ripgrep (rg) was not found next to the Python interpreter or on PATH. Install the `ripgrep` Python "
    "package (pip install 'ripgrep>=14.1,<15') or your system's ripgrep package."
)
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")


@lru_cache(maxsize=1)
def find_rg() -> str | None:
    exe = "rg.exe" if os.name == "nt" else "rg"
    for d in (Path(sys.executable).parent, Path(sys.prefix) / "bin"):
        candidate = d / exe
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


def rg_path() -> str:
    path = find_rg()
    if path is None:
        raise ToolError(MISSING_MESSAGE)
    return path


def vcs_excludes() -> list[str]:
    args: list[str] = []
    for d in VCS_DIRS:
        args += ["--glob", f"!{d}"]
    return args


def _glob_filter(globs: list[str]) -> str:
    """An ignore file that keeps only files matching `globs` (a leading `!` excludes).

    rg's own `--glob` is an override that beats .gitignore (a `*.py` glob would list an ignored
    `secret.py`); an `--ignore-file` has the lowest precedence, so .gitignore still wins.
    """
    positives = [g for g in globs if not g.startswith("!")]
    negatives = [g[1:] for g in globs if g.startswith("!") and len(g) > 1]
    lines = ["*", "!*/", *(f"!{g}" for g in positives)] if positives else []
    lines += negatives
    fd, path = tempfile.mkstemp(prefix="agent-glob-", suffix=".ignore")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


async def run_rg(
    args: list[str], cwd: Path, timeout: float = 60.0, globs: list[str] | None = None
) -> tuple[int, bytes, bytes]:
    """Run rg with `args` in `cwd`; (exit code, stdout, stderr). Killed on timeout or cancellation.

    `globs` restrict the files searched without overriding .gitignore (see `_glob_filter`).
    """
    filter_file = _glob_filter(globs) if globs else None
    try:
        extra = ["--ignore-file", filter_file] if filter_file else []
        return await _run(["--no-require-git", *extra, *args], cwd, timeout)
    finally:
        if filter_file:
            os.unlink(filter_file)


async def _run(args: list[str], cwd: Path, timeout: float) -> tuple[int, bytes, bytes]:
    proc = await asyncio.create_subprocess_exec(
        rg_path(), "--no-config", *args,
        cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL, env=child_env(),  # no secrets for rg or its children
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        preexec_fn=pdeathsig_preexec(),  # rg dies with the agent, even when blocked
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except (asyncio.CancelledError, TimeoutError) as exc:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if isinstance(exc, TimeoutError):
            raise ToolError(f"ripgrep did not finish within {timeout:.0f} s; narrow the path, glob or pattern.") from None
        raise
    return proc.returncode or 0, out, err
