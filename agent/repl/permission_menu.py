"""The permission question, Claude Code's way: a numbered menu with "Yes" highlighted.

  1. Yes
  2. Yes, and don't ask again for <the exact rule that will be stored>
  3. No, and tell the agent what to do differently

Enter takes the highlighted item, arrows (or j/k) move, digits pick, y/a/n are kept as shortcuts, Esc or
Ctrl-C refuses (and ends the turn). Choosing 3 asks for a note that goes to the model with Claude Code's
rejection wording, and the turn goes on with it. Everything shown is made visible first: a command with
escape sequences cannot clear or repaint the screen.
"""

from __future__ import annotations

import re
from typing import Any

from tools.permissions import REJECT_MESSAGE

# Claude Code's wording when the user refuses and says what to do instead.
REJECT_WITH_FEEDBACK = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)
CHOICES = ("once", "always", "deny")
# ExitPlanMode's menu: once -> default mode, always -> acceptEdits, note -> keep planning (with what to change).
PLAN_CHOICES = ("Yes", "Yes, and auto-accept edits", "No, keep planning")


# One escape sequence: CSI (colours, cursor moves, clears), OSC (titles, hyperlinks), DCS, or a lone ESC + char.
ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|P[^\x1b]*(\x1b\\)?|[@-Z\\-_]|.)?",
                             re.S)


def visible(text: str) -> str:
    """Control characters shown as escapes (`\\x1b`), newlines and tabs kept: nothing reaches the terminal raw."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t":
            out.append(ch)
        elif code < 0x20 or code == 0x7F or 0x80 <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":  # bidi overrides
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def always_label(request: Any) -> str:
    """What option 2 says it will remember: the exact rule when the gate offers one."""
    rule = getattr(request, "always_rule", None)
    if isinstance(rule, str) and rule:
        return f"Yes, and don't ask again for {visible(rule)}"
    return f"Yes, and don't ask again for {request.tool.name} this session"


def menu_lines(request: Any, selected: int) -> list[tuple[str, str]]:
    """(style, text) fragments of the menu, the selected row highlighted."""
    labels = ["Yes", always_label(request), "No, and tell the agent what to do differently"]
    header = "Do you want to proceed?"
    if getattr(request.tool, "name", "") == "ExitPlanMode":  # approve the plan, or keep planning
        header, labels = "Exit plan mode?", list(PLAN_CHOICES)
    parts: list[tuple[str, str]] = [("bold", header + "\n")]
    for i, label in enumerate(labels):
        marker = "❯ " if i == selected else "  "
        parts.append(("reverse" if i == selected else "", f"{marker}{i + 1}. {label}"))
        parts.append(("", "\n"))
    parts.append(("class:hint", "Enter selects · ↑↓ or 1-3 · Esc refuses: "))
    return parts


def rejection(note: str) -> str:
    note = note.strip()
    return REJECT_WITH_FEEDBACK + note if note else REJECT_MESSAGE
