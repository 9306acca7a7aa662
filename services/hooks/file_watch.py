"""Claude Code's FileChanged watch list: the FileChanged matchers split on `|` (a relative name is in the
session's current directory) plus the `watchPaths` that SessionStart, CwdChanged and FileChanged hooks
return. Claude Code watches them with a file watcher; here they are looked at between steps (after each
tool call and before each turn), which is when a change can matter to the next command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

StatKey = tuple[int, int, int] | None


def watched_paths(matchers: list[str], extra: list[str], cwd: Path) -> list[Path]:
    names = [part.strip() for m in matchers if m and m != "*" for part in m.split("|")]
    paths = [Path(n) if os.path.isabs(n) else cwd / n for n in names if n]
    paths += [Path(p) for p in extra]
    return list(dict.fromkeys(paths))


def watch_paths_from(obj: dict[str, Any]) -> list[str]:
    """A hook's `hookSpecificOutput.watchPaths`: absolute paths only."""
    spec = obj.get("hookSpecificOutput")
    value = spec.get("watchPaths") if isinstance(spec, dict) else None
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, str) and os.path.isabs(p) and "\0" not in p]


def _stat(path: Path) -> StatKey:
    try:
        st = path.stat()
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass
class FileWatch:
    known: dict[str, StatKey] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)  # the hooks' watchPaths

    def add(self, paths: list[str]) -> None:
        self.extra = list(dict.fromkeys([*self.extra, *paths]))

    def changes(self, paths: list[Path]) -> list[tuple[str, str]]:
        """(path, "add" | "change" | "unlink") for each watched file that changed since it was last looked at;
        a path seen for the first time is only noted (Claude Code's watcher ignores the initial state)."""
        out = []
        for path in paths:
            key, now = str(path), _stat(path)
            if key not in self.known:
                self.known[key] = now
                continue
            before = self.known[key]
            if before == now:
                continue
            self.known[key] = now
            out.append((key, "add" if before is None else "unlink" if now is None else "change"))
        return out
