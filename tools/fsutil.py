"""File helpers shared by Read/Write/Edit: atomic writes that keep the mode, binary and image sniffing."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}


def sniff_image(head: bytes) -> str | None:
    """The media type of an image from its magic bytes, or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block means binary (what git and grep use)."""
    return b"\x00" in head


# Write's content and Edit's new_string: more than this in one call is almost always a runaway generation.
MAX_CONTENT_BYTES = 100 * 1024


def content_too_large(text: str, field: str) -> str | None:
    """The refusal when `text` is over MAX_CONTENT_BYTES in UTF-8, else None."""
    size = len(text.encode("utf-8", errors="surrogateescape"))
    if size <= MAX_CONTENT_BYTES:
        return None
    return (f"{field} is too large: {size} bytes, over the 100 KB ({MAX_CONTENT_BYTES} bytes) limit for one call. "
            "Split the change into smaller Edits, or write the file in parts.")


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same directory and a rename.

    An existing file keeps its permission bits; a new file gets the usual 0666 & ~umask. When `path` is a
    symlink, its target is replaced (the link stays a link).
    """
    target = Path(os.path.realpath(path))
    mode: int | None = None
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def number_lines(lines: list[str], start: int) -> str:
    """Claude Code's Read format: the line number (no padding), a tab, the text.

    No padding: models are trained on this exact shape, and it is ~11% fewer bytes than `cat -n`.
    """
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, start))
