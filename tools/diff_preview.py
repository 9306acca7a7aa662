"""What an Edit or Write call will change, as a unified diff, taken from the file before the tool runs.

The orchestrator computes it when a call starts (before validation, the gate and the tool itself) and puts
it on the start event, so a front end that draws the event later still shows the real change.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def diff_lines(name: str, input: dict[str, Any], cwd: Path | None = None) -> list[str] | None:
    """A unified diff of what an Edit / Write call would change, or None for other tools."""
    file_path = input.get("file_path") or input.get("path")
    if not isinstance(file_path, str):
        return None
    path = Path(file_path).expanduser()
    if not path.is_absolute() and cwd is not None:
        path = cwd / path
    if name == "Write" and isinstance(input.get("content"), str):
        before = _read(path) if path.is_file() else ""
        after = input["content"]
        if before is None:
            before = ""
    elif name == "Edit" and isinstance(input.get("old_string"), str) and isinstance(input.get("new_string"), str):
        old, new = input["old_string"], input["new_string"]
        current = _read(path) if path.is_file() else None
        if current is not None and old and old in current:
            before = current
            after = current.replace(old, new) if input.get("replace_all") else current.replace(old, new, 1)
        else:
            before, after = old, new
    else:
        return None
    shown = _display_path(path, cwd)
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), fromfile=f"a/{shown}",
                                      tofile=f"b/{shown}", lineterm=""))
    return lines or None


def _display_path(path: Path, cwd: Path | None) -> str:
    """The path relative to the working directory when inside it, else absolute (never `a//abs`)."""
    if cwd is not None:
        try:
            return str(path.resolve().relative_to(cwd.resolve()))
        except (ValueError, OSError):
            pass
    return str(path).lstrip("/")
