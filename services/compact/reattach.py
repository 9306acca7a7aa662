"""After a summary: the files the model read most recently (re-read from disk) and the todo list, so the
model does not have to read them again. Bounded: at most MAX_FILES files, each whole and within a per-file
cap, all within a tenth of the window (Claude Code: 5 files, 5k tokens each, 50k in all)."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from services.compact.cc_texts import read_attachment_texts
from services.compact.options import UNITS_PER_TOKEN, CompactOptions
from services.messages import Message, text_block, tool_results, tool_uses
from services.tokens import text_units

MAX_FILES = 5
FILE_MAX_TOKENS = 5_000
TOTAL_MAX_TOKENS = 50_000
TODOS_TEMPLATE = (
    "<system-reminder>\nThe todo list as it was when the conversation was summarised (TodoWrite keeps it):\n"
    "{items}\n</system-reminder>"
)


def _read_paths_newest_first(messages: list[Message], cwd: Path | None) -> list[str]:
    """Real paths of the files that Read succeeded on in `messages`, the most recent first, once each."""
    failed = {r["tool_use_id"] for m in messages for r in tool_results(m) if r.get("is_error")}
    seen: list[str] = []
    for m in reversed(messages):
        for u in reversed(tool_uses(m)):
            if u.get("name") != "Read" or u["id"] in failed:
                continue
            raw = (u.get("input") or {}).get("file_path")
            if not isinstance(raw, str) or not raw:
                continue
            path = Path(raw) if os.path.isabs(raw) or cwd is None else cwd / raw
            real = os.path.realpath(path)
            if real not in seen:
                seen.append(real)
    return seen


def _read_whole(real: str, cap_units: int) -> str | None:
    """The file's text when it is still a regular file, UTF-8, and fits `cap_units`; else None."""
    try:
        if not os.path.isfile(real) or os.path.getsize(real) > cap_units * 4:
            return None
        with open(real, "rb") as f:
            data = f.read(cap_units * 4 + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "\x00" in text or text_units(text) > cap_units:
        return None
    return text


def file_attachments(
    source: list[Message], tail: list[Message], opts: CompactOptions, cwd: Path | None, allowed: Collection[str] | None
) -> list[Message]:
    """One user message per re-attached file (Claude Code's two texts), newest first. Only files the Read
    tool recorded (`allowed`: real paths of the session's read state) and that the kept tail does not show."""
    if allowed is None:
        return []
    in_tail = set(_read_paths_newest_first(tail, cwd))
    total = min(TOTAL_MAX_TOKENS, opts.context_window_tokens // 10) * UNITS_PER_TOKEN
    per_file = min(FILE_MAX_TOKENS * UNITS_PER_TOKEN, total)
    out: list[Message] = []
    used = 0
    for real in _read_paths_newest_first(source, cwd):
        if len(out) >= MAX_FILES:
            break
        if real in in_tail or real not in allowed:
            continue
        text = _read_whole(real, min(per_file, total - used))
        if text is None:
            continue
        called, result = read_attachment_texts(real, text)
        used += text_units(called) + text_units(result)
        out.append({"role": "user", "content": [text_block(called), text_block(result)],
                    "meta": {"post_compact": "file", "path": real}})
    return out


def todo_attachment(todos: list[dict[str, Any]] | None) -> list[Message]:
    if not todos:
        return []
    items = "\n".join(f"- [{t.get('status', 'pending')}] {t.get('content', '')}" for t in todos if isinstance(t, dict))
    if not items:
        return []
    return [{"role": "user", "content": [text_block(TODOS_TEMPLATE.format(items=items))], "meta": {"post_compact": "todos"}}]
