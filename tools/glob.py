"""Glob: files matching a glob pattern, gitignore-aware (ripgrep's file walker), newest-modified first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.ripgrep import run_rg, vcs_excludes

MAX_FILES = 100
_MAGIC = set("*?[{")

DESCRIPTION = f"""Fast file pattern matching: finds files by name in any size of codebase.

Usage:
- pattern is a glob such as "**/*.js", "src/**/*.ts" or "*.md" ("*.md" matches at any depth; a pattern with a "/" is relative to path).
- path is the directory to search (default: the working directory). Omit it rather than passing "null".
- Returns matching file paths, newest-modified first, at most {MAX_FILES}; a note says when there are more (narrow the pattern or path).
- Files ignored by .gitignore and version-control directories are skipped; hidden files are included.
- Use Glob to find files by name; use Grep to search inside files. Several Glob calls in one message run in parallel."""


def _split_absolute(pattern: str) -> tuple[str, str]:
    """An absolute pattern becomes (its static directory prefix, the rest)."""
    parts = Path(pattern).parts
    base: list[str] = []
    for i, part in enumerate(parts):
        if _MAGIC & set(part) or i == len(parts) - 1:
            return os.path.join(*base) if base else "/", "/".join(parts[i:])
        base.append(part)
    return pattern, "*"


class GlobTool(Tool):
    name = "Glob"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The glob pattern to match files against."},
            "path": {"type": "string", "description": "The directory to search in (default: the working directory)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    max_result_chars = 20_000

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = input["pattern"].strip()
        if not pattern:
            raise ToolError("pattern is empty. Pass a glob such as \"**/*.py\".")
        cwd = Path(ctx.session.cwd)
        raw_path = input.get("path")
        base = ctx.resolve(raw_path) if raw_path and raw_path not in ("null", "undefined") else cwd
        if os.path.isabs(pattern):
            abs_base, pattern = _split_absolute(pattern)
            base = Path(abs_base)
        if pattern.startswith("./"):
            pattern = pattern[2:]
        if not base.exists():
            raise ToolError(f"Directory does not exist: {base}. Check the path, or omit it to search the working directory.")
        if not base.is_dir():
            raise ToolError(f"{base} is a file, not a directory. Pass its directory as path, or Read the file.")
        args = ["--files", "--hidden", *vcs_excludes()]
        rc, out, err = await run_rg(args, base, globs=[pattern])
        if rc == 2 and not out.strip():
            msg = err.decode("utf-8", errors="replace").strip()
            raise ToolError(f"Glob failed: {msg or 'ripgrep error'}. Check the pattern syntax.")
        files = [line for line in out.decode("utf-8", errors="replace").splitlines() if line]
        if not files:
            return ToolOutput("No files found", summary="0 files")

        base_s = str(base)

        def mtime(rel: str) -> float:
            try:
                return os.stat(os.path.join(base_s, rel)).st_mtime
            except OSError:
                return 0.0

        stamped = sorted((-mtime(f), f) for f in files)
        total = len(stamped)
        shown = [_display(cwd, base / f) for _, f in stamped[:MAX_FILES]]  # pathlib only for the 100 shown
        text = "\n".join(shown)
        if total > MAX_FILES:
            text += f"\n\n(Showing the {MAX_FILES} newest of {total} files. Narrow the pattern or the path to see the rest.)"
        return ToolOutput(text, summary=f"{total} files")


def _display(cwd: Path, full: Path) -> str:
    try:
        return str(full.relative_to(cwd))
    except ValueError:
        return str(full)
