"""Read: a file's lines numbered `N<tab>text` (Claude Code's format), paged with offset/limit; images; PDF text."""

from __future__ import annotations

import base64
import math
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from services.images import MAX_IMAGE_BYTES  # one limit for Read and MCP images
from tools import read_state
from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.fsutil import looks_binary, number_lines, sniff_image

MAX_LINE_CHARS = 2000
MAX_BYTES_WHOLE = 256 * 1024
# With allow_large: Claude Code lifts the cap to the room left in the context; this agent does not track
# that room here, so a fixed bound stands in (about 250k tokens of text).
MAX_BYTES_LARGE = 1024 * 1024
EMPTY_FILE = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
MAX_PDF_PAGES = 20
UNCHANGED_STUB = (
    "File unchanged since last read. The content from the earlier Read tool_result in this conversation "
    "is still current — refer to that instead of re-reading."
)

DESCRIPTION = """Reads a file from the local filesystem.

Usage:
- file_path should be absolute (a path relative to the working directory also works).
- It reads the whole file (up to 256 KB). For larger files pass offset (the line to start at) and limit (how many lines), or Grep for the part you need; allow_large: true reads past that limit (up to 1 MB) when you genuinely need all of it.
- Results have a line-number prefix: the number, then a tab. The prefix is NOT part of the file: never include it in Edit's old_string.
- Lines longer than 2000 characters are cut, with a marker.
- Images (PNG, JPEG, GIF, WebP) come back as images. PDFs come back as text per page; for a PDF over 20 pages pass pages (e.g. "1-5").
- Read a file before you Edit or Write it. Reading several files in one message (parallel calls) is fast and encouraged.
- It reads files, not directories: use Glob or Bash `ls` to list a directory.
- A repeated Read of an unchanged file returns a short note pointing to the earlier result."""


def _too_large(size: int) -> str:
    return (f"File content ({round(size / 1024)}KB) exceeds maximum allowed size ({MAX_BYTES_WHOLE // 1024}KB). "
            "Use offset and limit parameters to read specific portions of the file, or search for specific "
            "content instead of reading the whole file. To read it anyway, up to what still fits in your context, "
            "call Read again with allow_large: true — only if you genuinely need all of it or the user asked for "
            "the whole file.")


def _too_large_even_allowed(size: int) -> str:
    return (f"File content ({round(size / 1024)}KB) exceeds what Read returns even with allow_large "
            f"({MAX_BYTES_LARGE // 1024}KB). Use offset and limit parameters to read specific portions of the file, "
            "or search for specific content instead of reading the whole file.")


def _short_of_offset(offset: int, total: int) -> str:
    return (f"<system-reminder>Warning: the file exists but is shorter than the provided offset ({offset}). "
            f"The file has {total} lines.</system-reminder>")


class ReadTool(Tool):
    name = "Read"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "The absolute path of the file to read."},
            "offset": {"type": "integer", "minimum": 0, "description": "The line number to start at. Only for files too large to read at once."},
            "limit": {"type": "integer", "exclusiveMinimum": 0, "description": "The number of lines to read. Only for files too large to read at once."},
            "pages": {"type": "string", "description": "Page range for PDF files, e.g. \"1-5\", \"3\" (at most 20 pages per call)."},
            "allow_large": {"type": "boolean", "description": "Set to true to read a text file, or a line range of one, that is over the usual size limit. Only when you need all of it; otherwise read it in parts or search it."},
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
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(f"File does not exist. Note: your current working directory is {ctx.cwd}.") from None
        except OSError as exc:
            raise ToolError(f"Cannot read {path}: {exc.strerror or exc}. Check the path and its permissions.") from None
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"EISDIR: illegal operation on a directory, read '{path}'")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{path} is not a regular file (a device, socket or pipe); Read only reads regular files.")

        # The unchanged-file stub, only while the earlier result is still visible to the model in full.
        prev = read_state.get(ctx, path)
        if (
            prev is not None and prev.from_read and prev.offset == offset and prev.limit == limit
            and read_state.is_fresh(prev, path) and prev.tool_use_id and ctx.is_visible(prev.tool_use_id)
            and input.get("pages") is None
        ):
            return ToolOutput(UNCHANGED_STUB, summary="unchanged")

        try:
            with open(path, "rb") as f:
                head = f.read(8192)
                media = sniff_image(head)
                if media is not None:
                    return self._image(path, f, head, media, st.st_size, ctx, offset, limit)
                if head.startswith(b"%PDF-"):
                    out = read_pdf(path, input.get("pages"))
                    read_state.record(ctx, path, offset=offset, limit=limit, from_read=True)
                    return out
                if looks_binary(head):
                    raise ToolError(
                        f"{path} is a binary file ({st.st_size} bytes); Read shows text only. Use Bash "
                        "(e.g. `file`, `xxd | head`) to inspect it."
                    )
                if offset is None and limit is None:
                    _check_size(st.st_size, input.get("allow_large") is True)
                f.seek(0)
                text, total, start, shown = _window(f, offset, limit)
        except PermissionError:
            raise ToolError(f"Permission denied reading {path}. Check the file's permissions.") from None
        read_state.record(ctx, path, offset=offset, limit=limit, from_read=True)
        if not shown:
            # Claude Code's wordings: an empty file says so whatever the offset; else the file is too short.
            empty = st.st_size == 0
            return ToolOutput(EMPTY_FILE if empty else _short_of_offset(start, total), summary="nothing to show")
        return ToolOutput(text, summary=f"{shown} lines")

    def _image(self, path: Path, f: BinaryIO, head: bytes, media: str, size: int, ctx: ToolContext,
               offset: int | None, limit: int | None) -> ToolOutput:
        if size > MAX_IMAGE_BYTES:
            raise ToolError(f"{path} is an image of {size} bytes, too large to send (max {MAX_IMAGE_BYTES}). Resize it first (e.g. with Bash).")
        data = head + f.read()
        read_state.record(ctx, path, offset=offset, limit=limit, from_read=True)
        block = {"type": "image", "source": {"type": "base64", "media_type": media,
                                              "data": base64.b64encode(data).decode("ascii")}}
        return ToolOutput([block], summary=f"image, {size} bytes")


def _check_size(size: int, allow_large: bool) -> None:
    """A whole-file read over the cap is refused with Claude Code's words; allow_large raises the cap."""
    if size > MAX_BYTES_LARGE and allow_large:
        raise ToolError(_too_large_even_allowed(size))
    if size > MAX_BYTES_WHOLE and not allow_large:
        raise ToolError(_too_large(size))


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


def _window(f: BinaryIO, offset: int | None, limit: int | None) -> tuple[str, int, int, int]:
    """(numbered text, total lines, first line asked for, lines shown), streaming `f` in 1 MiB chunks.

    Lines are what splitting the text on "\n" gives, as in Claude Code: a final newline is followed by one
    more (empty) line, and an empty file is one empty line. Nothing to show (past the end, or only that
    empty line) gives an empty text. Memory stays bounded by the output whatever the file: a
    line outside the window is only counted, a line inside it keeps its first LINE_KEEP_BYTES bytes.
    """
    start = max(1, offset or 1)
    shown: list[str] = []
    lineno = 1  # the line the next byte belongs to
    end = start + limit if limit is not None else None
    kept = bytearray()
    dropped = 0  # characters of the current line past LINE_KEEP_BYTES

    def inside(n: int) -> bool:
        return n >= start and (end is None or n < end)

    while chunk := f.read(CHUNK):
        newlines = chunk.count(b"\n")
        if lineno + newlines < start or (end is not None and lineno >= end):
            lineno += newlines  # wholly before or after the window: count, keep nothing
            continue
        pos = 0
        while True:
            nl = chunk.find(b"\n", pos)
            piece = chunk[pos:] if nl < 0 else chunk[pos:nl]
            if inside(lineno):
                room = LINE_KEEP_BYTES - len(kept)
                if room > 0:
                    kept += piece[:room]
                if len(piece) > room:
                    dropped += _chars(piece[max(room, 0):])
            if nl < 0:
                break
            if inside(lineno):
                shown.append(_cut(bytes(kept), dropped))
            kept, dropped = bytearray(), 0
            lineno += 1
            pos = nl + 1
    total = lineno  # the text split on "\n": the last line may be empty
    if inside(lineno):
        shown.append(_cut(bytes(kept), dropped))
    if not shown or shown == [""]:
        return "", total, start, 0
    return number_lines(shown, start), total, start, len(shown)


def read_pdf(path: Path, pages: str | None) -> ToolOutput:
    """A PDF's text, page by page (`pages` "3" or "1-5"; at most MAX_PDF_PAGES per call)."""
    import pypdf  # lazy: only PDF reads pay for the import

    try:
        reader = pypdf.PdfReader(str(path))
        n = len(reader.pages)
    except Exception as exc:  # a broken or encrypted file: pypdf raises many kinds
        raise ToolError(f"Cannot read the PDF {path}: {exc}") from None
    if pages is None:
        if n > MAX_PDF_PAGES:
            raise ToolError(f"This PDF has {n} pages, too many to read at once. Pass pages (e.g. \"1-{MAX_PDF_PAGES}\"), "
                            f"at most {MAX_PDF_PAGES} pages per call.")
        first, last = 1, n
    else:
        first, last = _page_range(pages, n)
    parts = []
    for i in range(first, last + 1):
        try:
            text = reader.pages[i - 1].extract_text() or ""
        except Exception as exc:
            text = f"[page text could not be extracted: {exc}]"
        parts.append(f"--- Page {i} of {n} ---\n{text.strip()}")
    return ToolOutput("\n\n".join(parts), summary=f"PDF pages {first}-{last} of {n}")


def _page_range(pages: str, n: int) -> tuple[int, int]:
    spec = pages.strip()
    a, sep, b = spec.partition("-")
    try:
        first = int(a)
        last = int(b) if sep else first
    except ValueError:
        raise ToolError(f'Invalid pages "{pages}": use a page number ("3") or a range ("1-5").') from None
    if first < 1 or last < first:
        raise ToolError(f'Invalid pages "{pages}": pages start at 1 and a range goes up ("1-5").')
    if first > n:
        raise ToolError(f"The PDF has {n} pages; pages={pages} starts past the end.")
    if last - first + 1 > MAX_PDF_PAGES:
        raise ToolError(f"pages={pages} asks for {last - first + 1} pages; at most {MAX_PDF_PAGES} per call.")
    return first, min(last, n)
