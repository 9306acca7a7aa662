"""Rich rendering of the loop's events for the REPL.

On a terminal, assistant text streams into a live area (`agent/repl/live_area.py`: the REPL application's region
above the input, or a rich `Live` elsewhere) rendered as Markdown; every finished block (outside a code fence)
is printed for good and leaves the live area, so a long reply never scrolls out of it (no flicker, no
duplicated text), and what is printed is what rendering the whole reply at once would print. The open block
shows at most its last LIVE_LINES lines. When stdout is not a terminal the deltas are written as plain text
and nothing is printed twice. `NO_COLOR` is honoured
by rich itself. Tool calls show a spinner while they run and one outcome line when they end; Edit
and Write show a coloured unified diff. TRACE lines go to stderr elsewhere and never pass through here.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from agent.repl.live_area import RichLiveArea
from agent.repl.permission_menu import visible
from agent.repl.thinking_status import ThinkingClock
from services.events import (
    AssistantEvent,
    NoticeEvent,
    RetryEvent,
    Terminal,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from tools.diff_preview import diff_lines
from tools.permissions import REJECT_MESSAGE

MAX_DIFF_LINES = 80
THINKING_LINES = 8  # thinking lines shown before the rest is collapsed into a count
THINKING_KEY = "\0thinking"  # the thinking spinner's slot among the running tools' ones
REFRESH_INTERVAL = 1 / 15  # seconds between live redraws while text streams
LIVE_LINES = 20  # lines of the open block shown while it streams (all of it is printed when it closes)


def make_console(file: Any = None, **kwargs: Any) -> Console:
    """The REPL's console: highlighting off for plain prints, soft wrap off so Markdown wraps itself."""
    return Console(file=file, highlight=False, **kwargs)


# -- labels and diffs ----------------------------------------------------------------------------
def tool_label(name: str, input: dict[str, Any], tools: dict[str, Any] | None = None) -> str:
    tool = (tools or {}).get(name)
    if tool is not None:
        try:
            return str(tool.describe(input))
        except Exception:
            pass
    for key in ("file_path", "path", "pattern", "command", "url", "query", "description", "message"):
        value = input.get(key)
        if isinstance(value, str) and value:
            short = value if len(value) <= 80 else value[:79] + "…"
            return f"{name} {short}"
    return name


def diff_text(lines: list[str], limit: int = MAX_DIFF_LINES) -> Text:
    out = Text()
    shown = lines[:limit]
    for line in shown:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = "dim"
        out.append(visible(line) + "\n", style=style)  # a path or content may carry ESC sequences
    if len(lines) > limit:
        out.append(f"… {len(lines) - limit} more diff lines\n", style="dim")
    return out


def _fingerprint(name: str, input: dict[str, Any]) -> str:
    return name + json.dumps(input, sort_keys=True, default=str)


def _stable_split(text: str) -> int:
    """Index up to which `text` is made of finished Markdown blocks (a blank line outside a fence)."""
    cut = 0
    in_fence = False
    pos = 0
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):  # the last line is still being written
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
        pos += len(line) + 1
        if not in_fence and stripped == "" and i > 0:
            cut = pos
    return cut


# -- the renderer ----------------------------------------------------------------------------------
class Renderer:
    def __init__(
        self,
        console: Console,
        tools: dict[str, Any] | None = None,
        cwd: Path | None = None,
        live: bool | None = None,
        live_area: Any = None,
    ):
        self.console = console
        self.tools = tools or {}
        self._progress_base: dict[str, str] = {}  # tool id -> its label before progress was added
        self.cwd = cwd
        # Live regions only on a real terminal (not a pipe, not a dumb one).
        self.live_enabled = console.is_terminal and not console.is_dumb_terminal if live is None else live
        if live_area is not None:
            self.live_enabled = True
        self.area = live_area if live_area is not None else (RichLiveArea(console) if self.live_enabled else None)
        self._live_text: RenderableType | None = None
        self._buffer = ""  # streamed text not yet printed for good
        self._printed_plain = False
        self._blocks = 0  # finished Markdown blocks printed for the current reply
        self._last_refresh = 0.0
        self._running: dict[str, str] = {}  # tool id -> label
        self._pending_diffs: dict[str, list[str]] = {}
        self.shown_diffs: set[str] = set()  # fingerprints whose diff was shown in a permission question
        # True while the front end asks the user something: no live region may redraw meanwhile.
        self.asking = False
        self._thinking_open = False  # a dimmed thinking section is being printed
        self._thinking_buf = ""
        self._thinking_shown = self._thinking_hidden = 0
        self.thinking_clock = ThinkingClock()

    # -- text --------------------------------------------------------------------------------
    def _markdown(self, text: str) -> Markdown:
        return Markdown(text, code_theme="monokai")

    def _show_live(self) -> None:
        """Put the open block and the running tools' spinners in the live area (hidden while asking)."""
        if self.area is None or not self.live_enabled:
            return
        if self.asking:
            self.area.show([])
            return
        parts: list[RenderableType] = [] if self._live_text is None else [self._live_text]
        parts += [Spinner("dots", text=Text(label, style="bold")) for label in self._running.values()]
        self.area.show(parts)

    def _open_block(self) -> RenderableType:
        lines = self._buffer.split("\n")
        if len(lines) <= LIVE_LINES:
            return self._markdown(self._buffer)
        # A long open block (a big code fence) shows its tail as plain text: cheap to redraw at every delta,
        # and cutting Markdown in the middle of a fence would render wrong. It is printed whole when it closes.
        tail = Text(f"… {len(lines) - LIVE_LINES} lines above\n", style="dim")
        tail.append(visible("\n".join(lines[-LIVE_LINES:])))
        return tail

    def _text_delta(self, delta: str) -> None:
        self._end_thinking()
        if not self.live_enabled or self.asking:
            self.console.file.write(delta)
            self.console.file.flush()
            self._printed_plain = True
            return
        self._buffer += delta
        cut = _stable_split(self._buffer)
        if cut:
            done, self._buffer = self._buffer[:cut], self._buffer[cut:]
            if done.strip():
                self._live_text = None
                self._show_live()
                self._print_block(done)
        now = time.monotonic()
        if now - self._last_refresh >= REFRESH_INTERVAL or cut:
            self._last_refresh = now
            self._live_text = self._open_block() if self._buffer.strip() else None
            self._show_live()

    def _print_block(self, text: str) -> None:
        # Rendered alone, a block may start with a blank line (rich does so for lists): drop it, and put exactly
        # one blank line between blocks, as rendering the whole reply at once does.
        with self.console.capture() as cap:
            self.console.print(self._markdown(text))
        rendered = cap.get().lstrip("\n")
        if not rendered.strip():
            return
        if self._blocks:
            rendered = "\n" + rendered
        self._blocks += 1
        self.console.file.write(rendered)
        self.console.file.flush()

    def _thinking_delta(self, delta: str) -> None:
        # A thinking block opened (an empty delta: its start) or goes on: the spinner says so and for how
        # long (agent/repl/thinking_status.py); with the display omitted there is no text. Text is shown
        # dimmed and apart from the answer, collapsed after THINKING_LINES lines (the rest is counted).
        if self.thinking_clock.started is None:  # a new block: what streamed before it is complete
            self.end_text()
            self.thinking_clock.start()
        if delta and not self._thinking_open:
            self.console.print(Text("✻ Thinking…", style="dim italic"))
            self._thinking_open, self._thinking_shown, self._thinking_hidden = True, 0, 0
        self._running[THINKING_KEY] = self.thinking_clock.running() or "thinking"
        self._show_live()
        self._thinking_buf += delta
        *lines, self._thinking_buf = self._thinking_buf.split("\n")
        for line in lines:
            self._thinking_line(line)

    def _thinking_line(self, line: str) -> None:
        if not line.strip():
            return
        if self._thinking_shown < THINKING_LINES:
            self._thinking_shown += 1
            self.console.print(Text(f"  {line}", style="dim"))
        else:
            self._thinking_hidden += 1

    def _end_thinking(self) -> None:
        if self._thinking_open:
            self._thinking_line(self._thinking_buf)
            if self._thinking_hidden:
                self.console.print(Text(f"  … {self._thinking_hidden} more lines of thinking", style="dim italic"))
        self._thinking_open, self._thinking_buf = False, ""
        done = self.thinking_clock.stop()
        if done is not None:
            self._running.pop(THINKING_KEY, None)
            self._show_live()
            self.console.print(Text(f"✻ {done}", style="dim italic"))

    def end_text(self) -> None:
        """The streamed reply is complete: print what is left for good, once."""
        self._end_thinking()
        if self._live_text is not None:
            self._live_text = None
            self._show_live()
        if self._buffer.strip():
            self._print_block(self._buffer)
        self._buffer = ""
        self._blocks = 0
        self._last_refresh = 0.0  # the next reply's first words show at once, not after the throttle
        if self._printed_plain:
            self.console.file.write("\n")
            self.console.file.flush()
            self._printed_plain = False

    # -- tools -------------------------------------------------------------------------------
    def _refresh_tools_live(self) -> None:
        self._show_live()

    def _stop_tools_live(self) -> None:
        if self.area is not None:
            self.area.stop()

    def pause(self) -> None:
        """Empty the live area (before a permission question or any other input)."""
        self.end_text()
        self._stop_tools_live()

    def resume_live(self) -> None:
        self.asking = False
        self._show_live()

    def _tool_start(self, ev: ToolStartEvent) -> None:
        self.end_text()
        label = visible(tool_label(ev.name, ev.input, self.tools))
        self._running[ev.id] = label
        # The diff was taken before the tool ran (orchestration puts it on the start event): by the time this
        # event is drawn the file may already be written.
        lines = ev.diff if ev.diff is not None else diff_lines(ev.name, ev.input, self.cwd)
        if lines is not None:
            self._pending_diffs[ev.id] = lines
            self._pending_diffs[ev.id + "#fp"] = [_fingerprint(ev.name, ev.input)]
        if not self.live_enabled:
            self.console.print(Text(f"… {label}", style="dim"))
        else:
            self._refresh_tools_live()

    def progress(self, tool_id: str, text: str) -> None:
        """A running tool's progress (MCP progress notifications), shown on its line."""
        if tool_id not in self._running:
            return
        base = self._progress_base.setdefault(tool_id, self._running[tool_id])
        self._running[tool_id] = f"{base} · {text}"
        if not self.live_enabled:
            self.console.print(Text(f"… {base} · {text}", style="dim"))
        else:
            self._refresh_tools_live()

    def _tool_end(self, ev: ToolEndEvent) -> None:
        label = self._progress_base.pop(ev.id, None) or self._running.pop(ev.id, None) or ev.name
        self._running.pop(ev.id, None)
        diff = self._pending_diffs.pop(ev.id, None)
        fp = (self._pending_diffs.pop(ev.id + "#fp", None) or [""])[0]
        if ev.ok:
            line = Text("● ", style="green")
            line.append(visible(label), style="bold")
            if ev.summary:
                line.append(f" ({visible(ev.summary)})", style="dim")
            self.console.print(line)
            if diff and fp not in self.shown_diffs:
                self.console.print(diff_text(diff))
            elif _shows_output(ev.name) and ev.preview:
                self.console.print(output_preview(ev.preview, ev.lines))
        else:
            error = (ev.error or ev.summary or "failed").strip()
            first = error.splitlines()
            line = Text("✗ ", style="red")
            line.append(visible(label), style="bold red")
            if error.startswith(REJECT_MESSAGE[:40]):  # the model is told at length; the user sees what happened
                line.append(": rejected by you", style="red")
            else:
                line.append(f": {visible(first[0]) if first else 'failed'}", style="red")
            self.console.print(line)
            if _shows_output(ev.name) and ev.lines > 1:
                self.console.print(output_preview(ev.preview, ev.lines, style="red"))
        self.shown_diffs.discard(fp)
        self._refresh_tools_live()

    # -- everything --------------------------------------------------------------------------
    def notice(self, text: str, style: str = "dim") -> None:
        self.pause()
        self.console.print(Text(text, style=style))

    def discard_text(self) -> None:
        """A retried model call: the partial reply still in the live region is dropped, not printed."""
        self._live_text = None
        self._show_live()
        self._buffer = ""
        if self._blocks or self._printed_plain:
            # Paragraphs already printed for good cannot be taken back: say they are void.
            if self._printed_plain:
                self.console.file.write("\n")
                self.console.file.flush()
            self.console.print(Text("↻ the reply above was cut off; it is asked for again", style="dim"))
        self._blocks = 0
        self._printed_plain = False
        self._last_refresh = 0.0

    def event(self, ev: Any) -> None:
        if isinstance(ev, TextDeltaEvent):
            self._text_delta(ev.text)
        elif isinstance(ev, ThinkingDeltaEvent):
            self._thinking_delta(ev.text)
        elif isinstance(ev, RetryEvent):
            self.discard_text()
        elif isinstance(ev, AssistantEvent):
            self.end_text()
        elif isinstance(ev, ToolStartEvent):
            self._tool_start(ev)
        elif isinstance(ev, ToolEndEvent):
            self._tool_end(ev)
        elif isinstance(ev, NoticeEvent):
            self.end_text()
            self.console.print(Text(f"· {visible(ev.text)}", style="dim"))
        elif isinstance(ev, Terminal):
            self.close()
            self.terminal(ev)

    def terminal(self, ev: Terminal) -> None:
        if ev.reason == "aborted":
            if ev.error:
                self.console.print(Text(ev.error, style="yellow"))
            else:
                self.console.print(Text("Interrupted", style="yellow"))
        elif ev.reason == "error":
            first = (ev.error or "error").strip().splitlines()
            self.console.print(Text(f"Error: {first[0] if first else 'error'}", style="bold red"))
        elif ev.reason in ("refusal", "context_window_exceeded", "loop_detected"):
            self.console.print(Text(ev.error, style="bold red"))
        elif ev.reason == "max_tokens":
            self.console.print(Text(ev.error, style="yellow"))
        elif ev.reason == "max_turns":
            self.console.print(
                Text(f"Stopped: reached the turn limit ({ev.turns} model calls).", style="yellow")
            )

    def close(self) -> None:
        self._end_thinking()
        self.end_text()
        self._running.clear()
        self._stop_tools_live()

    def permission_question(self, tool_name: str, label: str, input: dict[str, Any], reason: str = "") -> None:
        """Print the question's body: the tool, its whole target (escapes made visible, never cut; the working
        directory when a command runs elsewhere) and, for Edit/Write, the diff."""
        self.pause()
        self.asking = True
        self.console.print(Text(f"Permission: {tool_name}", style="bold yellow"))
        command = input.get("command") if tool_name == "Bash" else None
        if isinstance(command, str):
            for row in visible(command).splitlines() or [""]:
                self.console.print(Text(f"  {row}"), soft_wrap=False, overflow="fold")
            if isinstance(input.get("description"), str):
                self.console.print(Text(f"  {visible(input['description'])}", style="dim"))
        else:
            self.console.print(Text(f"  {visible(label)}"), overflow="fold")
        if reason:
            self.console.print(Text(f"  {reason}", style="dim"))
        lines = diff_lines(tool_name, input, self.cwd)
        if lines:
            self.console.print(diff_text(lines))
            self.shown_diffs.add(_fingerprint(tool_name, input))


OUTPUT_SHOWN = ("Bash", "TaskOutput")  # tools whose output the REPL shows under the call (first lines)
OUTPUT_LINES = 4


def _shows_output(name: str) -> bool:
    """An MCP tool's result is the answer the user asked for (`42.0`): shown as Claude Code shows it."""
    return name in OUTPUT_SHOWN or name.startswith("mcp__")


def output_preview(preview: str, total: int, style: str = "dim") -> Text:
    """The first lines of a result, indented, and `… +N lines` for the rest (Claude Code's style)."""
    rows = preview.splitlines()[:OUTPUT_LINES]
    text = Text()
    for i, row in enumerate(rows):
        text.append(("  ⎿  " if i == 0 else "     ") + visible(row[:200]) + "\n", style=style)
    if total > len(rows):
        text.append(f"     … +{total - len(rows)} lines\n", style="dim")
    text.rstrip()
    return text


def past_lines(messages: list[Any]) -> list[tuple[str, str]]:
    """(style, text) lines that retell a conversation compactly: prompts, first lines of answers, tool calls."""
    out: list[tuple[str, str]] = []
    for m in messages:
        content = m.get("content")
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        if m.get("role") == "user":
            if m.get("meta"):
                continue  # injected context (mentions, hooks, notifications), not the user's words
            for b in blocks:
                if b.get("type") == "text" and b.get("text", "").strip():
                    first = b["text"].strip().splitlines()[0]
                    out.append(("bold", f"> {first[:200]}"))
        elif m.get("role") == "assistant":
            for b in blocks:
                if b.get("type") == "text" and b.get("text", "").strip():
                    lines = b["text"].strip().splitlines()
                    out.append(("", lines[0][:200] + (" …" if len(lines) > 1 else "")))
                elif b.get("type") == "tool_use":
                    out.append(("dim", f"● {tool_label(b.get('name', ''), b.get('input') or {})}"))
    return out
