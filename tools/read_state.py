"""What the model has read: per file, the mtime/size seen and the range, and which tool_result showed it.

Read records every read; Write and Edit require a record whose mtime and size still match the file (so
the model never overwrites changes it has not seen) and refresh it after writing. The state lives in
`SessionState.read_state` (keyed by the real path) and is cleared with the conversation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolContext


@dataclass
class ReadRecord:
    path: str
    mtime_ns: int
    size: int
    offset: int | None
    limit: int | None
    tool_use_id: str
    # True when this record comes from a Read (its content is in that tool_result); False after Write/Edit.
    from_read: bool = True


def key_for(path: Path) -> str:
    return os.path.realpath(path)


def get(ctx: ToolContext, path: Path) -> ReadRecord | None:
    rec = ctx.session.read_state.get(key_for(path))
    return rec if isinstance(rec, ReadRecord) else None


def record(ctx: ToolContext, path: Path, *, offset: int | None, limit: int | None, from_read: bool) -> ReadRecord:
    st = os.stat(path)
    rec = ReadRecord(key_for(path), st.st_mtime_ns, st.st_size, offset, limit, ctx.tool_use_id, from_read)
    ctx.session.read_state[rec.path] = rec
    return rec


def is_fresh(rec: ReadRecord, path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_mtime_ns == rec.mtime_ns and st.st_size == rec.size


NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = ("File has been modified since read, either by the user or by a linter. "
            "Read it again before attempting to write it.")


def require_fresh(ctx: ToolContext, path: Path, action: str) -> str | None:
    """None when `path` was read and is unchanged since; else the one-line refusal (Claude Code's wording).

    This protects changes the model has not seen: the user's, a formatter's, a command's.
    """
    rec = get(ctx, path)
    if rec is None:
        return NOT_READ
    if not is_fresh(rec, path):
        return MODIFIED
    return None
