"""Instruction files announced when the model touches a file: a sub-directory's CLAUDE.md, a path rule.

The session's `InstructionTracker` (in `SessionState.instructions`, set by the front end) says
which files join; each becomes a meta user message after the tool results, worded as Claude Code words it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.instructions import TOUCHING_TOOLS, nested_reminder
from services.messages import Message, user_message
from services.trace import trace
from tools.base import ToolContext


@dataclass
class Touched:
    """What a Read/Edit/Write of a file brought in: the reminders for the model and, per file, Claude Code's
    InstructionsLoaded input (load_reason, fields) for the hooks."""

    reminders: list[Message] = field(default_factory=list)
    loaded: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def instruction_reminders(ctx: ToolContext, use: Mapping[str, Any], block: Mapping[str, Any]) -> Touched:
    """The files a successful Read/Edit/Write of a file brings in (usually none)."""
    tracker = ctx.session.instructions
    if tracker is None or use.get("name") not in TOUCHING_TOOLS:
        return Touched()
    path = (use.get("input") or {}).get("file_path")
    if not isinstance(path, str) or not path or block.get("is_error"):
        return Touched()
    try:
        trigger = ctx.resolve(path)
        files = tracker.touched(trigger)
    except (OSError, ValueError) as exc:  # a path the OS refuses: the tool already said so
        trace("instructions.touch_failed", error=type(exc).__name__)
        return Touched()
    for notice in tracker.notices:
        trace("instructions.notice", text=notice)
    tracker.notices.clear()
    out = Touched()
    for f in files:
        trace("instructions.nested", path=str(f.path), kind=f.kind, chars=len(f.content))
        out.reminders.append(user_message(nested_reminder(f, tracker.nested_limit), meta={"instructions": str(f.path)}))
        out.loaded.append(f.hook_input(trigger))
    return out
