"""Reading files trusted by their name (commands, skills, agents, output styles) without following a
symlink out of the folder they were found in.

A link inside the project (or the home folder) to another file there is fine; one whose target lies
outside every allowed root, or inside /proc, /sys or /dev, is ignored with a one-line notice: such a link
would let a cloned repository feed the model any file of the user's (a key, a token) as a "command".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEVICE_ROOTS = ("/proc", "/sys", "/dev")
MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 8


@dataclass
class ScopedReader:
    """Reads files whose real path stays under one of `roots`; `notices` collects what was skipped."""

    roots: list[Path]
    notices: list[str] = field(default_factory=list)

    def _real_roots(self) -> list[str]:
        return [os.path.realpath(r) for r in self.roots]

    def allowed(self, path: Path) -> bool:
        real = os.path.realpath(path)
        if any(real == d or real.startswith(d + os.sep) for d in DEVICE_ROOTS):
            return False
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self._real_roots())

    def read(self, path: Path) -> str | None:
        """The file's text, or None (with a notice for a link out of scope; quietly for a missing file)."""
        if not self.allowed(path):
            self.notices.append(f"Ignored {path}: it links to {os.path.realpath(path)}, outside the folder it "
                                "was found in.")
            return None
        try:
            with open(os.path.realpath(path), "rb") as f:
                if not os.path.isfile(f.name):
                    return None
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        return data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")

    def walk_markdown(self, root: Path) -> list[Path]:
        """Every `*.md` under `root` (sorted), never descending into a linked directory that leaves scope."""
        found: list[Path] = []
        if not root.is_dir() or not self.allowed(root):
            return found
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            if len(Path(dirpath).relative_to(root).parts) >= MAX_DEPTH:  # a link cycle inside scope ends here
                dirnames[:] = []
            kept = []
            for d in sorted(dirnames):
                sub = Path(dirpath) / d
                if self.allowed(sub):
                    kept.append(d)
                else:
                    self.notices.append(f"Ignored {sub}: it links to {os.path.realpath(sub)}, outside the folder "
                                        "it was found in.")
            dirnames[:] = kept
            found += [Path(dirpath) / n for n in sorted(filenames) if n.endswith(".md")]
        return sorted(found)
