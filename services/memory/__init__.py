"""Agent Memory: one project file, `.agents/memory/MEMORY.md`, that the model keeps with Write/Edit.

Read at session start and again whenever its mtime (or size) changes; capped at 32 KB. Nothing is
created at startup: the directory appears only when the model first writes the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from services.instructions.safe_read import read_instruction_file
from services.skills.discover import cap_bytes
from services.trace import trace

MEMORY_RELATIVE_PATH = ".agents/memory/MEMORY.md"
MAX_MEMORY_BYTES = 32 * 1024
MEMORY_TRUNCATED_NOTE = "\n\n[memory truncated at 32KB]"


def memory_path(cwd: Path) -> Path:
    return cwd / MEMORY_RELATIVE_PATH


def load_memory(cwd: Path, home: Path | None = None) -> str | None:
    """The memory text (capped), or None when the file does not exist, cannot be read, or is a link out of
    the project or to a secret (trusted by its name, it must not carry `/proc/self/environ` in)."""
    result = read_instruction_file(memory_path(cwd), [cwd], home)
    if result.notice:
        trace("memory.refused", text=result.notice)
    if result.text is None:
        return None
    return cap_bytes(result.text, MAX_MEMORY_BYTES, MEMORY_TRUNCATED_NOTE)


def memory_section(cwd: Path, content: str | None) -> str:
    """The `## Agent Memory` part of the system prompt: where the file is, how to use it, what it holds."""
    path = memory_path(cwd)
    head = (
        "## Agent Memory\n\n"
        f"You have a persistent memory file for this project: {path} (`{MEMORY_RELATIVE_PATH}`). "
        "It is loaded into this prompt at the start of every session and again whenever it changes.\n"
        '- To remember something (the user says "remember", or you learn a durable fact: a preference, a '
        "command that works, a convention), add a short line to it with Edit, or create it with Write "
        "(its directory is created then).\n"
        "- To forget something, remove or correct that line with Edit.\n"
        "- Keep it short and current: one fact per line, no secrets, nothing that only matters for this task. "
        "Put longer notes in separate files (for example under docs/notes/) and link them from here."
    )
    if content is None or not content.strip():
        return (
            head
            + "\n\nYour MEMORY.md is currently empty"
            + (" (the file does not exist yet)." if content is None else ".")
        )
    return head + "\n\nCurrent contents of MEMORY.md:\n\n" + content.rstrip("\n")


@dataclass
class MemorySnapshot:
    content: str | None
    mtime_ns: int | None
    size: int | None
    changed: bool = False


class MemoryStore:
    """The memory file's content, re-read only when its mtime or size changes."""

    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.path = memory_path(cwd)
        self.snapshot = MemorySnapshot(None, None, None)
        self._loaded = False

    def _stat(self) -> tuple[int | None, int | None]:
        try:
            st = self.path.stat()
        except OSError:
            return None, None
        return st.st_mtime_ns, st.st_size

    def refresh(self) -> MemorySnapshot:
        """The current snapshot; `changed` says whether the file differs from the last call."""
        mtime, size = self._stat()
        if self._loaded and (mtime, size) == (self.snapshot.mtime_ns, self.snapshot.size):
            self.snapshot = MemorySnapshot(self.snapshot.content, mtime, size, changed=False)
            return self.snapshot
        first = not self._loaded
        self._loaded = True
        content = load_memory(self.cwd) if mtime is not None else None
        self.snapshot = MemorySnapshot(content, mtime, size, changed=not first)
        return self.snapshot

    @property
    def content(self) -> str | None:
        return self.snapshot.content
