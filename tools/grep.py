"""Grep: ripgrep search with Claude Code's input fields; paths newest-modified first."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from services.config import env_int
from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.ripgrep import run_rg, vcs_excludes

DEFAULT_HEAD_LIMIT = 250
MAX_COLUMNS = 500
DEFAULT_TIMEOUT_MS = 30_000  # a pathological pattern or a huge tree ends with a clear error, not a hang

DESCRIPTION = """A powerful search tool built on ripgrep.

Usage:
- ALWAYS use Grep for searching file contents. NEVER run `grep` or `rg` through Bash: this tool is faster, respects .gitignore and gives output sized for you.
- pattern is a Rust regular expression (ripgrep syntax): e.g. "log.*Error", "function\\s+\\w+". Literal braces need escaping: "interface\\{\\}" finds "interface{}".
- Filter files with glob (e.g. "*.js", "**/*.{ts,tsx}") or type (e.g. "py", "js", "rust"; faster than glob for standard file types).
- output_mode: "files_with_matches" (default: the matching file paths, newest-modified first), "content" (matching lines as path:line:text, without the path when searching one file; -n line numbers on by default; -A/-B/-C or context add lines around; -o only the matched parts), "count" (path:N matches per file).
- -i makes the search case-insensitive.
- Patterns match within one line; set multiline to true for patterns that span lines (. then also matches newlines).
- Results are limited to head_limit entries (default 250; 0 means no limit); offset skips entries, to page through long results.
- Hidden files are searched, version-control directories (.git) never; files ignored by .gitignore are skipped.
- For an open-ended search that needs several rounds, narrow step by step: first files_with_matches, then content on the interesting paths."""


class GrepTool(Tool):
    name = "Grep"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "The regular expression to search for (ripgrep syntax)."},
            "path": {"type": "string", "description": "File or directory to search in (default: the working directory)."},
            "glob": {"type": "string", "description": "Glob to filter files, e.g. \"*.js\" or \"*.{ts,tsx}\" (rg --glob)."},
            "type": {"type": "string", "description": "File type to search, e.g. js, py, rust, go, java (rg --type)."},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"],
                            "description": "content: matching lines; files_with_matches: paths (default); count: matches per file."},
            "-i": {"type": "boolean", "description": "Case-insensitive search."},
            "-n": {"type": "boolean", "description": "Show line numbers (content mode; default true)."},
            "-o": {"type": "boolean", "description": "Print only the matched parts of lines (content mode)."},
            "-A": {"type": "number", "minimum": 0, "description": "Lines to show after each match (content mode)."},
            "-B": {"type": "number", "minimum": 0, "description": "Lines to show before each match (content mode)."},
            "-C": {"type": "number", "minimum": 0, "description": "Lines to show before and after each match (content mode)."},
            "context": {"type": "number", "minimum": 0, "description": "Same as -C."},
            "head_limit": {"type": "number", "minimum": 0, "description": "Show at most this many entries (default 250; 0 for no limit)."},
            "offset": {"type": "number", "minimum": 0, "description": "Skip this many entries first (default 0)."},
            "multiline": {"type": "boolean", "description": "Let patterns span lines; . matches newlines (default false)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    max_result_chars = 20_000

    read_only = True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = input["pattern"]
        if pattern == "":
            raise ToolError("pattern is empty. Pass a regular expression to search for.")
        mode = input.get("output_mode") or "files_with_matches"
        cwd = ctx.search_dir()
        args = [*_rg_args(input, mode), "-e", pattern, "--"]
        target = _search_target(input.get("path"), ctx, cwd)
        if target is not None:
            args.append(target)
        globs = (input.get("glob") or "").split()
        timeout = env_int("GREP_TIMEOUT_MS", DEFAULT_TIMEOUT_MS, minimum=1) / 1000
        rc, out, err = await run_rg(args, cwd, timeout=timeout, globs=globs or None)
        if rc == 2 and not out.strip():
            raise ToolError(_rg_failure(err))
        lines = out.decode("utf-8", errors="replace").splitlines()
        if not lines:
            return ToolOutput("No files found" if mode == "files_with_matches" else "No matches found", summary="no matches")
        if mode == "files_with_matches":
            lines = _newest_first(cwd, lines)
        note = ""
        if rc == 2:
            first = err.decode("utf-8", errors="replace").strip().splitlines()[0][:200]
            note = "\n[Some files could not be searched: " + first + "]"
        return _page(lines, mode, input, note)


def _rg_args(input: dict[str, Any], mode: str) -> list[str]:
    """ripgrep's options for the tool's input (everything before the pattern)."""
    # No --with-filename: like Claude Code, a search of one file prints its lines without the file name.
    args = ["--hidden", "--max-columns", str(MAX_COLUMNS), "--color", "never", "--no-heading", *vcs_excludes()]
    if input.get("multiline"):
        args += ["-U", "--multiline-dotall"]
    if input.get("-i"):
        args.append("-i")
    if mode == "files_with_matches":
        args.append("-l")
    elif mode == "count":
        args.append("-c")
    else:
        args += _content_args(input)
    if input.get("type"):
        args += ["--type", input["type"]]
    return args


def _content_args(input: dict[str, Any]) -> list[str]:
    """Line numbers, only-matching and context lines, for the content mode."""
    args = []
    if input.get("-n", True):
        args.append("-n")
    if input.get("-o"):
        args.append("-o")
    ctx_lines = input.get("context") if input.get("context") is not None else input.get("-C")
    if ctx_lines is not None:
        return [*args, "-C", str(int(ctx_lines))]
    for flag in ("-A", "-B"):
        if input.get(flag) is not None:
            args += [flag, str(int(input[flag]))]
    return args


def _search_target(target: str | None, ctx: ToolContext, cwd: Path) -> str | None:
    """The path argument for rg; only an existing regular file or directory is searched."""
    if not target:
        return None
    try:
        st_mode = os.stat(ctx.resolve(target)).st_mode
    except OSError:
        raise ToolError(f"Path does not exist: {ctx.resolve(target)}. Check it, or omit path to search the working directory.") from None
    if not (stat.S_ISDIR(st_mode) or stat.S_ISREG(st_mode)):
        # A FIFO or a device would block rg (and outlive us): never open one.
        raise ToolError(f"{ctx.resolve(target)} is not a regular file or directory (a pipe, socket or device); Grep searches files and directories only.")
    return target if os.path.isabs(target) else str(ctx.resolve(target) if cwd != ctx.session.cwd else Path(target))


def _rg_failure(err: bytes) -> str:
    msg = err.decode("utf-8", errors="replace").strip() or "ripgrep failed"
    if "regex" in msg.lower():
        return f"Invalid regular expression (ripgrep syntax): {msg}\nFix the pattern (escape special characters like ( [ {{ with a backslash) and retry."
    return f"Grep failed: {msg}"


def _page(lines: list[str], mode: str, input: dict[str, Any], note: str = "") -> ToolOutput:
    """The window of `lines` the input asks for (offset, head_limit), with the mode's header and totals."""
    total = len(lines)
    offset = int(input.get("offset") or 0)
    head_limit = input.get("head_limit")
    head_limit = DEFAULT_HEAD_LIMIT if head_limit is None else int(head_limit)
    shown = lines[offset:] if head_limit == 0 else lines[offset : offset + head_limit]
    if not shown:
        return ToolOutput(f"No results at offset={offset}: there are only {total} entries. Use a smaller offset.", summary="past the end")
    body = "\n".join(shown)
    header = ""
    if mode == "files_with_matches":
        header = f"Found {total} file{'s' if total != 1 else ''}\n"
        summary = f"{total} files"
    elif mode == "count":
        n = sum(int(line.rsplit(":", 1)[1]) for line in lines if line.rsplit(":", 1)[-1].isdigit())
        body += f"\n\nFound {n} total occurrence{'s' if n != 1 else ''} across {total} file{'s' if total != 1 else ''}."
        summary = f"{n} matches"
    else:
        summary = f"{total} lines"
    end = offset + len(shown)
    if offset > 0 or end < total:
        more = f" More: use offset={end}" + (" (or head_limit=0 for all)." if end < total else ".") if end < total else ""
        body += f"\n\n[Showing entries {offset + 1}-{end} of {total}.{more}]"
    return ToolOutput(header + body + note, summary=summary)


def _newest_first(cwd: Path, paths: list[str]) -> list[str]:
    base = str(cwd)

    def key(p: str) -> tuple[float, str]:
        try:
            return (-os.stat(os.path.join(base, p)).st_mtime, p)
        except OSError:
            return (0.0, p)

    return sorted(paths, key=key)
