"""The agent's own files and directories are private by construction: 0700 / 0600 at creation,
whatever the umask (an open mode set afterwards would leave a window, and a parent made by
`mkdir -p` would get no mode at all)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> Path:
    """`mkdir -p` where every directory created is 0700 (directories that exist are left as they are)."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=DIR_MODE)  # the umask can only narrow 0700
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)
    return path


def append_private(path: Path, text: str) -> None:
    """Append to `path`, creating it 0600 (and its missing parents 0700)."""
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(text)


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with `text`, mode 0600 (a private temporary file renamed over it)."""
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
