"""The expanded transcript: `/transcript` and Ctrl-O show what the live render keeps short.

While a turn runs, tools are shown compactly (Bash's first lines and `… +N lines`, thinking collapsed after a
few lines). This view prints the same turns in full: every thinking block, each tool call's whole input and its
whole result. A result the tool-result budget moved to disk is read back from its spill file, but only from
this session's own `tool-results` folder: the pointer is text in a tool result, so a hostile tool or model
could aim it at any file (`~/.ssh/id_rsa`); such a pointer is shown as it is, never followed.

Everything shown comes from outside (the model, tools, files): it is printed as rich `Text` (never markup) after
`visible()`, so escape sequences and `[red]`-like brackets reach the screen as characters.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.text import Text

from agent.repl.permission_menu import visible
from services.messages import Message, is_user_text_message
from services.tool_result_storage import PERSISTED_OUTPUT_TAG

MAX_RESULT_LINES = 2000  # past this, a result is cut and points at its full output
MAX_SPILL_BYTES = 4_000_000  # read back from a spill file at most this much
_POINTER = re.compile(r"Full output saved to: (.+)$", re.M)


def turn_starts(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes of the user's own prompts (not tool results, not injected notes): where turns begin."""
    return [i for i, m in enumerate(messages)
            if m.get("role") == "user" and (isinstance(m.get("content"), str) or is_user_text_message(cast(Message, m)))]


def select_turns(messages: list[dict[str, Any]], args: str) -> tuple[list[dict[str, Any]], str | None]:
    """`""` the last turn, `all` everything, `N` the last N turns; returns (messages, error)."""
    arg = args.strip().lower()
    starts = turn_starts(messages)
    if arg == "all" or not starts:
        return messages, None
    if arg == "":
        n = 1
    elif arg.isdigit() and int(arg) > 0:
        n = int(arg)
    else:
        return [], f"Usage: /transcript [all|N] (not {visible(args.strip())[:40]!r})"
    return messages[starts[max(0, len(starts) - n)]:], None


def spilled_text(result: str, spill_dir: Path | None) -> str | None:
    """The full text behind a `<persisted-output>` pointer, if the pointer names a file of this session."""
    if spill_dir is None or not result.startswith(PERSISTED_OUTPUT_TAG):
        return None
    m = _POINTER.search(result[:1000])
    if m is None:
        return None
    try:
        root = Path(spill_dir).resolve()
        path = Path(m.group(1).strip()).resolve()
        path.relative_to(root)  # ValueError: outside the session's spill folder
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            data = fh.read(MAX_SPILL_BYTES + 1)
    except (OSError, ValueError, RuntimeError):
        return None
    text = data[:MAX_SPILL_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_SPILL_BYTES:
        text += f"\n… cut at {MAX_SPILL_BYTES // 1_000_000} MB (full output: {path})"
    return text


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "image":
            parts.append(_image_note(block))
        else:
            parts.append(f"[{block.get('type', 'block')}]")
    return "\n".join(parts)


def _image_note(block: dict[str, Any]) -> str:
    source = block.get("source") or {}
    size = len(str(source.get("data", ""))) * 3 // 4
    return f"[image: {source.get('media_type', 'unknown')}, {size // 1024} KB]"


def _cut(text: str, where: str = "") -> Text:
    lines = text.split("\n")
    if len(lines) > MAX_RESULT_LINES:
        extra = len(lines) - MAX_RESULT_LINES
        text = "\n".join(lines[:MAX_RESULT_LINES]) + f"\n… +{extra} lines" + (f" (full output: {where})" if where else "")
    return Text(visible(text))


def _tool_input(name: str, data: Any) -> str:
    if name == "Bash" and isinstance(data, dict) and isinstance(data.get("command"), str):
        return data["command"]
    try:
        return json.dumps(data, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(data)


def render_transcript(messages: list[dict[str, Any]], spill_dir: Path | None = None) -> list[RenderableType]:
    """The messages in full, as rich renderables (pure: testable without a terminal)."""
    out: list[RenderableType] = []
    names: dict[str, str] = {}
    for message in messages:
        content = message.get("content")
        role = message.get("role")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and role == "user":
                out.append(Text("> " + visible(str(block.get("text", ""))), style="bold"))
            elif kind == "text":
                out.append(Markdown(visible(str(block.get("text", "")))))
            elif kind == "thinking":
                out.append(Group(Text("✻ Thinking", style="dim italic"),
                                 Text(visible(str(block.get("thinking", ""))), style="dim italic")))
            elif kind == "redacted_thinking":
                out.append(Text("✻ Thinking (redacted by the API)", style="dim italic"))
            elif kind == "tool_use":
                name = str(block.get("name", "tool"))
                names[str(block.get("id", ""))] = name
                out.append(Group(Text("⏺ " + visible(name), style="bold"),
                                 Text(visible(_tool_input(name, block.get("input"))), style="cyan")))
            elif kind == "tool_result":
                raw = _result_text(block.get("content"))
                full = spilled_text(raw, spill_dir)
                where = ""
                if full is not None:
                    m = _POINTER.search(raw[:1000])
                    where = m.group(1).strip() if m else ""
                text = _cut(full if full is not None else raw, where)
                text.style = "red" if block.get("is_error") else ""
                label = names.get(str(block.get("tool_use_id", "")), "tool")
                head = f"  ⎿ {visible(label)} result" + (" (error)" if block.get("is_error") else "")
                if full is not None:
                    head += " (read back from disk)"
                out.append(Group(Text(head, style="dim"), text))
            elif kind == "image":
                out.append(Text(_image_note(block), style="dim"))
    return out


def show_transcript(ctx: Any, args: str) -> None:
    """`/transcript [all|N]`: the last turn (or N, or all) expanded, printed above the prompt."""
    engine = ctx.engine
    messages, error = select_turns(list(engine.messages), args)
    if error:
        ctx.console.print(Text(error, style="yellow"))
        return
    if not messages:
        ctx.console.print(Text("Nothing in the conversation yet.", style="dim"))
        return
    spill_dir = Path(engine.session_dir) / "tool-results" if getattr(engine, "session_dir", None) else None
    ctx.console.print(Text("── transcript (expanded) ──", style="dim"))
    for part in render_transcript(messages, spill_dir):
        ctx.console.print(part)
    ctx.console.print(Text("── end of transcript ──", style="dim"))
