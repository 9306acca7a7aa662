"""Read: a file's lines numbered like `cat -n`, paged with offset/limit; images as image blocks."""

from __future__ import annotations

import base64
import math
import os
import stat
from typing import Any

from tools import read_state
from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.fsutil import looks_binary, number_lines, sniff_image

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_BYTES_WHOLE = 256 * 1024
MAX_IMAGE_BYTES = 3_750_000  # base64 grows by 4/3; the API's per-image limit is 5 MB encoded
UNCHANGED_STUB = (
    "File unchanged since last read. The content from the earlier Read tool_result in this conversation "
    "is still current — refer to that instead of re-reading."
)

DESCRIPTION = f"""Reads a file from the local filesystem and returns its lines numbered like `cat -n`.

Usage:
- file_path may be absolute or relative to the current working directory.
- By default it reads up to {MAX_LINES} lines from the start. For longer files pass offset (the 1-based line to start at) and limit (how many lines). The result says when more lines remain and which offset continues.
- A file over 256 KB must be read in pages with offset and limit; use Grep first to find the part you need.
- Lines longer than {MAX_LINE_CHARS} characters are cut, with a marker.
- The output has a line-number prefix: a right-aligned number and a tab. That prefix is NOT part of the file: never include it in Edit's old_string.
- Always Read a file before you Edit or Write it; those tools refuse files you have not read (or that changed since).
- Images (PNG, JPEG, GIF, WebP) come back as images you can look at.
- It reads files only, not directories: use Glob to list files, or Bash `ls`.
- Reading several files that may be relevant at once (several Read calls in one message) is fast and encouraged.
- If you read a file again without any change, you get a short note pointing to the earlier result."""


class ReadTool(Tool):
    name = "Read"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The file to read (absolute, or relative to the working directory)."},
            "offset": {"type": "integer", "minimum": 0, "description": "The 1-based line number to start at. Only for files too large to read at once."},
            "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read. Only for files too large to read at once."},
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }
    max_result_chars = math.inf  # self-bounded: spilling a Read would only point at a file the model can read

    read_only = True

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = input["file_path"]
        if not raw.strip():
            raise ToolError("file_path is empty. Pass the path of the file to read.")
        path = ctx.resolve(raw)
        offset = input.get("offset")
        limit = input.get("limit")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise ToolError(f"File does not exist: {path}. Check the path; Glob can find files by name.") from None
        except NotADirectoryError:
            raise ToolError(f"File does not exist: {path} (a parent is not a directory). Check the path.") from None
        except OSError as exc:
            raise ToolError(f"Cannot read {path}: {exc.strerror or exc}. Check the path and its permissions.") from None
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{path} is a directory, not a file. Use Glob (pattern '*' with this path) or Bash `ls` to list it.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file (a device, socket or pipe); Read only reads regular files.")

        # The unchanged-file stub, only while the earlier result is still visible to the model in full.
        prev = read_state.get(ctx, path)
        if (
            prev is not None and prev.from_read and prev.offset == offset and prev.limit == limit
            and read_state.is_fresh(prev, path) and prev.tool_use_id and ctx.is_visible(prev.tool_use_id)
        ):
            return ToolOutput(UNCHANGED_STUB, summary="unchanged")

        try:
            with open(path, "rb") as f:
                head = f.read(8192)
                media = sniff_image(head)
                if media is not None:
                    return self._image(path, f, head, media, st.st_size, ctx, offset, limit)
                if looks_binary(head):
                    raise ToolError(
                        f"{path} is a binary file ({st.st_size} bytes); Read shows text only. Use Bash "
                        "(e.g. `file`, `xxd | head`) to inspect it."
                    )
                if st.st_size > MAX_BYTES_WHOLE and offset is None and limit is None:
                    raise ToolError(
                        f"{path} is {st.st_size} bytes, over the {MAX_BYTES_WHOLE // 1024} KB limit for one Read. "
                        f"Read it in pages with offset and limit (e.g. offset=1, limit={MAX_LINES}), or Grep for the part you need."
                    )
                f.seek(0)
                text, total, start, end = _window(f, offset, limit)
        except PermissionError:
            raise ToolError(f"Permission denied reading {path}. Check the file's permissions.") from None
        read_state.record(ctx, path, offset=offset, limit=limit, from_read=True)
        if total == 0:
            return ToolOutput(f"The file {path} exists but is empty (0 lines).", summary="empty")
        if start > total:
            raise ToolError(f"{path} has only {total} lines; offset={start} is past the end. Use an offset from 1 to {total}.")
        out = text
        if end < total:
            out += f"\n\n(Showing lines {start}-{end} of {total}; more lines remain: offset={end + 1})"
        return ToolOutput(out, summary=f"{end - start + 1} lines")

    def _image(self, path, f, head, media, size, ctx, offset, limit) -> ToolOutput:
        if size > MAX_IMAGE_BYTES:
            raise ToolError(f"{path} is an image of {size} bytes, too large to send (max {MAX_IMAGE_BYTES}). Resize it first (e.g. with Bash).")
        data = head + f.read()
        read_state.record(ctx, path, offset=offset, limit=limit, from_read=True)
        block = {"type": "image", "source": {"type": "base64", "media_type": media,
                                              "data": base64.b64encode(data).decode("ascii")}}
        return ToolOutput([block], summary=f"image, {size} bytes")


CHUNK = 1 << 20
# Bytes kept of one line: enough for MAX_LINE_CHARS characters of any UTF-8 text (4 bytes each at most).
LINE_KEEP_BYTES = MAX_LINE_CHARS * 4
_CONTINUATION = bytes(range(0x80, 0xC0))


def _chars(data: bytes) -> int:
    """Characters in UTF-8 `data` without decoding it: every byte that is not a continuation byte."""
    return len(data.translate(None, _CONTINUATION))


def _cut(kept: bytes, dropped_chars: int) -> str:
    """A line's text from its first bytes (the rest counted, never held), cut with a marker when long."""
    line = kept.decode("utf-8", errors="replace")
    if line.endswith("\r") and not dropped_chars:
        line = line[:-1]
    extra = max(0, len(line) - MAX_LINE_CHARS) + dropped_chars
    if extra:
        return line[:MAX_LINE_CHARS] + f"… [line cut: {extra} more characters]"
    return line


def _window(f, offset: int | None, limit: int | None) -> tuple[str, int, int, int]:
    """(numbered text, total lines, first line shown, last line shown), streaming `f` in 1 MiB chunks.

    Memory stays bounded by the output whatever the file (issue 21): a line outside the window is only
    counted, a line inside it keeps its first LINE_KEEP_BYTES bytes and counts the rest.
    """
    start = max(1, offset or 1)
    count = limit if limit is not None else MAX_LINES
    shown: list[str] = []
    lineno = 1  # the line the next byte belongs to
    kept = bytearray()
    dropped = 0  # characters of the current line past LINE_KEEP_BYTES
    pending = False  # the current line has bytes (a last line without a newline still counts)
    while chunk := f.read(CHUNK):
        newlines = chunk.count(b"\n")
        if lineno + newlines < start or lineno >= start + count:
            # Wholly before or after the window: count, keep nothing.
            lineno += newlines
            pending = not chunk.endswith(b"\n")
            continue
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            piece = chunk[pos:] if nl < 0 else chunk[pos:nl]
            if start <= lineno < start + count:
                room = LINE_KEEP_BYTES - len(kept)
                if room > 0:
                    kept += piece[:room]
                if len(piece) > room:
                    dropped += _chars(piece[max(room, 0):])
            pending = pending or bool(piece)
            if nl < 0:
                break
            if start <= lineno < start + count:
                shown.append(_cut(bytes(kept), dropped))
            kept, dropped, pending = bytearray(), 0, False
            lineno += 1
            pos = nl + 1
    total = lineno if pending else lineno - 1
    if pending and start <= lineno < start + count:
        shown.append(_cut(bytes(kept), dropped))
    end = start + len(shown) - 1
    return number_lines(shown, start), total, start, end
