"""Instruction files announced when the model touches a file: a sub-directory's CLAUDE.md, a path rule.

The session's `InstructionTracker` (in `SessionState.instructions`, set by the front end) says
which files join; each becomes a meta user message after the tool results, worded as Claude Code words it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.instructions import TOUCHING_TOOLS, nested_reminder
from services.messages import Message, user_message
from services.trace import trace
from tools.base import ToolContext


def instruction_reminders(ctx: ToolContext, use: Mapping[str, Any], block: Mapping[str, Any]) -> list[Message]:
    """The reminders a successful Read/Edit/Write of a file brings in (usually none)."""
    tracker = ctx.session.instructions
    if tracker is None or use.get("name") not in TOUCHING_TOOLS:
        return []
    path = (use.get("input") or {}).get("file_path")
    if not isinstance(path, str) or not path or block.get("is_error"):
        return []
    try:
        files = tracker.touched(ctx.resolve(path))
    except (OSError, ValueError) as exc:  # a path the OS refuses: the tool already said so
        trace("instructions.touch_failed", error=type(exc).__name__)
        return []
    for notice in tracker.notices:
        trace("instructions.notice", text=notice)
    tracker.notices.clear()
    for f in files:
        trace("instructions.nested", path=str(f.path), kind=f.kind, chars=len(f.content))
    return [user_message(nested_reminder(f, tracker.nested_limit), meta={"instructions": str(f.path)}) for f in files]
