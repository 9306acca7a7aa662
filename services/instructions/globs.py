"""Glob matching for rule `paths:` and `claudeMdExcludes`: `**` spans folders, `*`/`?` stay in one."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.S)


def matches_path(pattern: str, path: str) -> bool:
    """A whole-path match (`claudeMdExcludes` take absolute paths)."""
    return bool(glob_regex(pattern).match(path))


def rule_applies(globs: tuple[str, ...], rel: str) -> bool:
    """gitignore-like: a pattern without `/` matches a name at any depth; a pattern also covers everything
    below a folder it matches (`src` matches `src/a.ts`)."""
    parts = PurePosixPath(rel).parts
    if not parts or parts[0] == "..":
        return False
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in globs:
        pattern = pattern.lstrip("/")
        if "/" not in pattern.rstrip("/"):
            if any(glob_regex(pattern.rstrip("/")).match(name) for name in parts):
                return True
        elif any(glob_regex(pattern.rstrip("/")).match(prefix) for prefix in prefixes):
            return True
    return False
