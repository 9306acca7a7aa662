"""`/sandbox`: the sandbox's state, and Claude Code's three modes for this session.

`/sandbox` shows it; `/sandbox auto-allow` (sandboxed, no question), `/sandbox regular` (sandboxed, the
usual questions), `/sandbox off` (no sandbox). Claude Code's `/sandbox` offers the same three modes.
A mode that needs bubblewrap is refused where it does not work (the line says why and how to fix it).
"""

from __future__ import annotations

from typing import Any

MODES = {"auto-allow": (True, True), "regular": (True, False), "off": (False, None), "on": (True, None)}


def cmd_sandbox(ctx: Any, args: str) -> None:  # ctx: agent.slash.router.CommandContext
    sandbox = getattr(ctx.engine.gate, "sandbox", None)
    if sandbox is None:
        ctx.say("No sandbox in this session.", "dim")
        return
    choice = args.strip().lower()
    if not choice:
        ctx.say(sandbox.status_line() + "  (/sandbox auto-allow | regular | off)", "dim")
        return
    if choice not in MODES:
        ctx.say(f"Unknown sandbox mode {choice!r}: use auto-allow, regular or off.", "yellow")
        return
    enabled, auto = MODES[choice]
    if enabled and not sandbox.availability.ok:
        ctx.say(f"The sandbox cannot run here: {sandbox.availability.reason}. "
                "Fix: install bubblewrap (e.g. apt-get install bubblewrap).", "yellow")
        return
    sandbox.session_enabled = enabled
    if auto is not None:
        sandbox.session_auto_allow = auto
    ctx.say(sandbox.status_line() + " (this session)", "dim")
