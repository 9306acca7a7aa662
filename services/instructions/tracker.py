"""Instruction files that join the conversation on demand, once each (Claude Code's nested memory).

When the model first reads or edits a file, the instructions that apply to it and are not loaded yet are
announced after the tool results: each sub-directory's `CLAUDE.md` (and the rest of `directory_files`)
between the working directory and the file, and the rules whose `paths:` match it. They are appended,
never inserted into the system prompt, so the cached prefix stays byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.instructions.globs import rule_applies
from services.instructions.loader import InstructionFile, Loaded, Places, Walk, directory_files
from services.instructions.render import MAX_NESTED_CHARS

# The tools whose file argument counts as touching it (Claude Code: Read, Edit, Write).
TOUCHING_TOOLS = ("Read", "Edit", "Write")


@dataclass
class InstructionTracker:
    places: Places
    trusted: bool
    excludes: list[str] = field(default_factory=list)
    conditional: list[InstructionFile] = field(default_factory=list)
    announced: set[str] = field(default_factory=set)  # real paths already in the context
    notices: list[str] = field(default_factory=list)
    joined: list[InstructionFile] = field(default_factory=list)  # announced during the session, in order
    # The session's messages: a resumed session already holds announcements (meta `instructions`).
    history: Callable[[], Sequence[Mapping[str, Any]]] | None = None
    _scanned: int = 0
    nested_limit: int = MAX_NESTED_CHARS  # characters of a joining file before it is cut (by the window)
    startup: set[str] = field(default_factory=set)  # real paths in the system prompt's instructions

    @classmethod
    def after(cls, loaded: Loaded, places: Places, trusted: bool, excludes: list[str]) -> InstructionTracker:
        return cls(places, trusted, list(excludes), list(loaded.conditional), set(loaded.seen),
                   startup=set(loaded.seen))

    def fork(self) -> InstructionTracker:
        """A sub-agent's own tracker: its history starts empty, so only the start-up files count as known."""
        return InstructionTracker(self.places, self.trusted, list(self.excludes), list(self.conditional),
                                  set(self.startup), startup=set(self.startup), nested_limit=self.nested_limit)

    def touched(self, file_path: Path) -> list[InstructionFile]:
        """The files to announce now that the model works on `file_path` (each only once)."""
        path = Path(os.path.abspath(file_path))
        self._note_history()
        fresh: list[InstructionFile] = []
        fresh += self._nested(path)
        fresh += self._rules_for(path)
        self.joined += fresh
        return fresh

    def reset(self) -> None:
        """A new session: nothing announced yet."""
        self.announced, self.joined, self._scanned = set(self.startup), [], 0

    def _note_history(self) -> None:
        """Files a resumed (or earlier) part of the session already announced are not announced again."""
        messages = self.history() if self.history is not None else []
        if len(messages) < self._scanned:  # compacted: what was summarised away may be announced again
            self.announced, self._scanned = set(self.startup), 0
        for m in messages[self._scanned:]:
            where = (m.get("meta") or {}).get("instructions")
            if isinstance(where, str):
                self.announced.add(os.path.realpath(where))
        self._scanned = len(messages)

    def _nested(self, path: Path) -> list[InstructionFile]:
        cwd = self.places.cwd
        if not self.trusted or cwd not in path.parents:
            return []
        dirs = [d for d in reversed(path.parents) if cwd in d.parents]
        walk = Walk(self.places, self.excludes, seen=set(self.announced))
        found: list[InstructionFile] = []
        for d in dirs:
            found += directory_files(walk, d)
        self.notices += walk.notices
        self.conditional += [f for f in found if f.globs is not None]
        unconditional = [f for f in found if f.globs is None]
        self.announced |= {os.path.realpath(f.path) for f in unconditional}
        return unconditional

    def _rules_for(self, path: Path) -> list[InstructionFile]:
        out: list[InstructionFile] = []
        for rule in self.conditional:
            key = os.path.realpath(rule.path)
            if key in self.announced or rule.globs is None:
                continue
            base = rule.base or self.places.cwd
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if rule_applies(rule.globs, rel):
                self.announced.add(key)
                out.append(rule)
        return out
