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


def require_fresh(ctx: ToolContext, path: Path, action: str) -> str | None:
    """None when `path` was read and is unchanged since; else the one-line refusal."""
    rec = get(ctx, path)
    if rec is None:
        return (f"{path} has not been read in this session. Read it first (the Read tool), then {action} "
                "it; this protects changes you have not seen.")
    if not is_fresh(rec, path):
        return (f"{path} has changed on disk since it was last read (by the user, a formatter or a command). "
                f"Read it again, then {action} it.")
    return None
