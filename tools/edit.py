"""Edit: replace one exact, unique string in a file (or every occurrence), keeping its line endings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tools import read_state
from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error
from tools.fsutil import atomic_write, content_too_large
from tools.write import STATE_CURRENT

DESCRIPTION = """Performs an exact string replacement in a file.

Usage:
- Read the file first in this conversation; an edit of a file not read, or changed since, fails.
- old_string is the file's exact text without Read's line-number prefix (the number and tab), indentation included.
- The edit fails if old_string is not unique: add surrounding lines, or set replace_all to change every occurrence (e.g. to rename).
- Line endings (LF or CRLF) are kept. new_string is limited to 100 KB.
- Prefer Edit over Write for existing files, and over sed or awk through Bash."""


def _normalise(text: str, strip_ws: bool) -> tuple[str, list[int], list[int]]:
    """Text with CRLF as LF (and trailing blanks removed per line), with maps back to `text`.

    starts[i] is the index in `text` of normalised char i; ends[i] the index just after it.
    """
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        eol = line[len(body):]
        kept = body.rstrip(" \t") if strip_ws else body
        for i, ch in enumerate(kept):
            out.append(ch)
            starts.append(pos + i)
            ends.append(pos + i + 1)
        if eol:
            out.append("\n")
            starts.append(pos + len(body))
            ends.append(pos + len(line))
        pos += len(line)
    return "".join(out), starts, ends


def _normalise_pattern(s: str, strip_ws: bool) -> str:
    s = s.replace("\r\n", "\n")
    if strip_ws:
        s = "\n".join(line.rstrip(" \t") for line in s.split("\n"))
    return s


def _find_all(hay: str, needle: str) -> list[int]:
    found: list[int] = []
    i = hay.find(needle)
    while i != -1 and needle:
        found.append(i)
        i = hay.find(needle, i + len(needle))
    return found


def find_matches(text: str, old: str) -> tuple[list[tuple[int, int]], str]:
    """Spans of `old` in `text`: exact first, then CRLF-normalised, then trailing-whitespace-insensitive."""
    exact = _find_all(text, old)
    if exact:
        return [(i, i + len(old)) for i in exact], "exact"
    for strip_ws, how in ((False, "line endings normalised"), (True, "trailing whitespace ignored")):
        norm, starts, ends = _normalise(text, strip_ws)
        pat = _normalise_pattern(old, strip_ws)
        if not pat:
            continue
        hits = _find_all(norm, pat)
        if hits:
            return [(starts[i], ends[i + len(pat) - 1]) for i in hits], how
    return [], ""


def _uses_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def _with_endings(s: str, crlf: bool) -> str:
    s = s.replace("\r\n", "\n")
    return s.replace("\n", "\r\n") if crlf else s


def _check_input(raw: str, old: str, new: str) -> None:
    if not raw.strip():
        raise ToolError(tool_use_error("file_path is empty. Pass the path of the file to edit."))
    too_large = content_too_large(new, "new_string")
    if too_large:
        raise ToolError(tool_use_error(too_large))
    if old == new:
        raise ToolError(tool_use_error("No changes to make: old_string and new_string are exactly the same."))


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}. Check its permissions.") from None
    if b"\x00" in data[:8192]:
        raise ToolError(tool_use_error(f"{path} is a binary file; Edit changes text files only."))
    return data.decode("utf-8", errors="surrogateescape")  # undecodable bytes survive the round trip


def _spans(text: str, old: str, replace_all: bool) -> tuple[list[tuple[int, int]], str]:
    """Where `old` is in `text` and how it matched; an error unless that is one place (or replace_all)."""
    if old == "":
        if text.strip():
            raise ToolError(tool_use_error("Cannot create new file - file already exists."))
        spans, how = [(0, len(text))], "empty file"
    else:
        spans, how = find_matches(text, old)
    if not spans:
        raise ToolError(tool_use_error(f"String to replace not found in file.\nString: {old}"))
    if len(spans) > 1 and not replace_all:
        raise ToolError(tool_use_error(
            f"Found {len(spans)} matches of the string to replace, but replace_all is false. To replace all "
            "occurrences, set replace_all to true. To replace only one occurrence, please provide more context "
            f"to uniquely identify the instance.\nString: {old}"
        ))
    return spans, how


def _replace_spans(text: str, spans: list[tuple[int, int]], replacement: str) -> str:
    pieces: list[str] = []
    cursor = 0
    for a, b in spans:
        pieces.append(text[cursor:a])
        pieces.append(replacement)
        cursor = b
    pieces.append(text[cursor:])
    return "".join(pieces)


class EditTool(Tool):
    name = "Edit"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to modify (absolute, or relative to the working directory)."},
            "old_string": {"type": "string", "description": "The exact text to replace (without Read's line-number prefix)."},
            "new_string": {"type": "string", "description": "The text to put in its place (must differ from old_string)."},
            "replace_all": {"type": "boolean", "default": False, "description": "Replace every occurrence of old_string (default false)."},
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": False,
    }
    max_result_chars = 20_000

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw, old, new = input["file_path"], input["old_string"], input["new_string"]
        replace_all = bool(input.get("replace_all", False))
        _check_input(raw, old, new)
        path = ctx.resolve(raw)
        if os.path.isdir(path):
            raise ToolError(tool_use_error(f"{path} is a directory. Pass the path of a file inside it."))
        if not os.path.exists(path):
            if old == "":
                return self._create(path, new, ctx)
            raise ToolError(tool_use_error(f"File does not exist. Note: your current working directory is {ctx.cwd}."))
        refusal = read_state.require_fresh(ctx, path, "edit")
        if refusal:
            raise ToolError(tool_use_error(refusal))
        text = _read_text(path)
        spans, how = _spans(text, old, replace_all)
        updated = _replace_spans(text, spans, _with_endings(new, _uses_crlf(text)))
        try:
            atomic_write(path, updated.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            raise ToolError(f"Cannot write {path}: {exc.strerror or exc}. Check the path and permissions.") from None
        read_state.record(ctx, path, offset=None, limit=None, from_read=False)
        n = len(spans)
        # Claude Code's one line; a tolerant match (not in Claude Code) says how it matched.
        note = f" (matched with {how})" if how not in ("exact", "empty file") else ""
        if replace_all:
            head = f"The file {path} has been updated. All occurrences were successfully replaced.{note}"
        else:
            head = f"The file {path} has been updated successfully.{note}"
        return ToolOutput(f"{head} {STATE_CURRENT}", summary=f"{n} replacement{'s' if n != 1 else ''}")

    def _create(self, path: Path, content: str, ctx: ToolContext) -> ToolOutput:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, content.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            raise ToolError(f"Cannot create {path}: {exc.strerror or exc}. Check the path and permissions.") from None
        read_state.record(ctx, path, offset=None, limit=None, from_read=False)
        return ToolOutput(f"File created successfully at: {path} {STATE_CURRENT}", summary="created")
