"""The words the model sees, exactly as Claude Code 2.1.332 writes them (recorded from the binary)."""

from __future__ import annotations

from services.instructions.loader import InstructionFile

CLAUDE_MD_HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: These "
    "instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)
DESCRIPTIONS = {
    "Project": " (project instructions, checked into the codebase)",
    "Local": " (user's private project instructions, not checked in)",
    "User": " (user's private global instructions for all projects)",
}


def claude_md_text(files: list[InstructionFile]) -> str:
    """The start-up instructions (Claude Code's `claudeMd` context), or "" when there are none."""
    body = "\n\n".join(
        f"Contents of {f.path}{DESCRIPTIONS[f.kind]}:\n\n{f.content.strip()}" for f in files
    )
    return f"{CLAUDE_MD_HEADER}\n\n{body}" if body else ""


# A file joining on demand is cut past this many characters (Claude Code: 5% of the window, at least 40,000).
MAX_NESTED_CHARS = 40_000
START_ONLY_NOTE = "\n\n> Only the start of this file is shown."


def cut_nested(content: str, path: str, limit: int = MAX_NESTED_CHARS) -> str:
    """Claude Code's cut of a long nested file: whole lines, a note, and where Read goes on."""
    text = content.strip()
    if len(text) <= limit:
        return content
    end = text.rfind("\n", 0, limit)
    head = text[: end if end > 0 else limit]
    offset = head.count("\n") + 2 if end > 0 else 1
    return f"{head}{START_ONLY_NOTE} For the rest, call Read on {path} with offset={offset} and a limit."


def nested_limit(context_window: int) -> int:
    return max(MAX_NESTED_CHARS, round(context_window * 0.05))


def nested_reminder(f: InstructionFile, limit: int = MAX_NESTED_CHARS) -> str:
    """A file that joins on demand (a sub-directory's CLAUDE.md, a path-scoped rule): not trimmed."""
    body = cut_nested(f.content, str(f.path), limit)
    return f"<system-reminder>\nContents of {f.path}:\n\n{body}\n</system-reminder>"
