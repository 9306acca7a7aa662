"""/rewind's words about files someone else changed since the agent wrote them: they are kept, and
the user is told which, rather than losing their edit to a silent restore."""

from __future__ import annotations

from collections.abc import Callable

from agent.repl.permission_menu import visible


def report_hand_edits(say: Callable[[str, str], None], paths: list[str]) -> None:
    if not paths:
        return
    say(f"{len(paths)} file(s) changed since the agent's edit; restoring code keeps them as they are:", "yellow")
    for p in paths[:10]:
        say(f"  {visible(p)}", "yellow")
    if len(paths) > 10:
        say(f"  … {len(paths) - 10} more", "yellow")
