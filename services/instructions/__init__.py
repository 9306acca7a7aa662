"""Claude Code's instruction files: CLAUDE.md (user, project, local, nested), imports and rules.

`loader` walks and reads them (through `safe_read`: no link out of scope, no secret), `markdown` turns a
file into what the model sees, `render` holds Claude Code's exact wording, `tracker` announces the files
that join on demand.
"""

from services.instructions.loader import InstructionFile, Loaded, Places, load_instructions
from services.instructions.render import claude_md_text, nested_reminder
from services.instructions.tracker import TOUCHING_TOOLS, InstructionTracker

__all__ = [
    "TOUCHING_TOOLS", "InstructionFile", "InstructionTracker", "Loaded", "Places", "claude_md_text",
    "load_instructions", "nested_reminder",
]
