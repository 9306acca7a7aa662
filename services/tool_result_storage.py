"""Spill files: where a too-large tool result goes, and the pointer the model sees instead.

A spilled result is written once to `<session dir>/tool-results/<id>-<hash of id>.txt` (directory 0700,
file 0600, exclusive create: a repeat finds the file and is a no-op). The model gets a
`<persisted-output>` pointer with the size, the absolute path and a preview, so it can Read the rest.
Truncation destroys; spilling relocates.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from services.private_fs import ensure_private_dir
from services.tokens import text_units

PERSISTED_OUTPUT_TAG = "<persisted-output>"
PERSISTED_OUTPUT_CLOSE = "</persisted-output>"
PREVIEW_CHARS = 2000
PREVIEW_LABEL = "2KB"  # Claude Code's wording: "Preview (first 2KB):"
READ_HINT = ""  # Claude Code adds no hint; the path is enough for Read

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def format_size(n: int) -> str:
    """Human size of a byte count in Claude Code's wording: `900 bytes`, `48.8KB`, `38KB`, `1.2MB`."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}".removesuffix(".0") + "KB"
    return f"{n / (1024 * 1024):.1f}".removesuffix(".0") + "MB"


def _units_prefix(text: str, limit: int) -> int:
    """The longest prefix length of `text` whose size in units (services.tokens.text_units) is <= limit."""
    if text.isascii():
        return min(len(text), limit)
    lo, hi = 0, min(len(text), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_units(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def make_preview(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The first `limit` units (code points for ASCII; fewer CJK characters, which cost more tokens),
    cut back to the last newline when it lies past half of them.

    Python strings are code-point sequences, so a slice never splits a character (CJK, emoji).
    Returns (preview, has_more).
    """
    end = _units_prefix(text, limit)
    if end >= len(text):
        return text, False
    head = text[:end]
    nl = head.rfind("\n")
    if nl > end // 2:
        head = head[:nl]
    return head, True


def spill_name(tool_use_id: str) -> str:
    """`<readable id>-<sha256 of the id, 16 hex>.txt`. The readable part alone collides: gateways send
    both `call:1` and `call_1`, which sanitise alike; the hash of the exact id keeps them apart."""
    digest = hashlib.sha256(tool_use_id.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', tool_use_id)[:64]}-{digest}.txt"


def spill_path(spill_dir: Path, tool_use_id: str) -> Path:
    return Path(spill_dir) / spill_name(tool_use_id)


def write_spill(spill_dir: Path, tool_use_id: str, text: str) -> tuple[Path, int]:
    """Write the full text once; returns (absolute path, size in bytes). Raises OSError on failure.

    An existing file means an earlier call (or a resumed session) already persisted it: no rewrite.
    """
    directory = Path(spill_dir).absolute()
    if not directory.is_dir():
        ensure_private_dir(directory)
    path = spill_path(directory, tool_use_id)
    data = text.encode("utf-8", errors="replace")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path, path.stat().st_size
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        path.unlink(missing_ok=True)  # never leave a half file that a later EEXIST would trust
        raise
    return path, len(data)


def build_replacement(
    path: Path, size_bytes: int, text: str, previewer: Callable[[str], str | None] | None = None
) -> str:
    """The exact `<persisted-output>` pointer (stored once, then re-applied byte for byte)."""
    custom = previewer(text) if previewer is not None else None
    if custom is not None:
        label, preview, has_more = "Preview:", custom, False
    else:
        preview, has_more = make_preview(text)
        label = f"Preview (first {PREVIEW_LABEL}):"
    lines = [
        PERSISTED_OUTPUT_TAG,
        f"Output too large ({format_size(size_bytes)}). Full output saved to: {path}",
        "",
        label,
        preview,
    ]
    if has_more:
        lines.append("...")
    if READ_HINT:
        lines.append(READ_HINT)
    lines.append(PERSISTED_OUTPUT_CLOSE)
    return "\n".join(lines)


def is_persisted(text: str) -> bool:
    """Already a pointer (startswith, so a file that merely contains the tag is not skipped)."""
    return text.startswith(PERSISTED_OUTPUT_TAG)
