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


def nested_reminder(f: InstructionFile) -> str:
    """A file that joins on demand (a sub-directory's CLAUDE.md, a path-scoped rule): not trimmed."""
    return f"<system-reminder>\nContents of {f.path}:\n\n{f.content}\n</system-reminder>"
