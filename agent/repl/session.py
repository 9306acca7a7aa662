"""The interactive REPL: one prompt-toolkit application for the session, rich rendering above it, slash
commands, interrupts, permission questions.

Input: a `PromptSession` with per-project history in the agent home that stays on screen while turns run.
Enter submits (queued while a turn runs, sent when it ends), Alt-Enter / Ctrl-J / `\\`+Enter insert a
newline, a bracketed paste stays one message, Tab completes `/commands` and `@paths`, and a bottom toolbar
shows the queue, model, permission mode, `ctx ~N%` and cost. Turn handling is the state machine of
`agent/repl/state.py` (idle, running, asking, interrupted); the keys are in `agent/repl/keys.py`.

During a turn Ctrl-C or Esc aborts it through `engine.abort()` (a second Ctrl-C cancels the task). At an idle
prompt Ctrl-C clears a non-empty line; on an empty one the first press says `Press Ctrl-C again to exit` and
a second within 1 s exits 130. Ctrl-D exits 0 (typed during a turn: when it ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.layout import ConditionalContainer, HSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.patch_stdout import StdoutProxy
from rich.console import Console
from rich.text import Text

from agent.errors import os_error_line, set_transcript
from agent.loop.factory import AppOptions, ResumeError, build_engine, load_resume_target, start_mcp
from agent.repl.image_input import (
    MAX_PASTE_BYTES,
    PendingImages,
    TooLarge,
    image_blocks,
    image_paths,
    read_clipboard_image,
)
from agent.repl.keys import repl_key_bindings
from agent.repl.live_area import AppLiveArea
from agent.repl.permission_menu import ESCAPE_SEQUENCE, menu_lines, rejection, visible
from agent.repl.render import Renderer, make_console
from agent.repl.state import (
    BUSY,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Abort,
    AskEnded,
    AskStarted,
    Cancel,
    ClearInput,
    CtrlC,
    CtrlD,
    EditQueue,
    Escape,
    Exit,
    Phase,
    ReplState,
    Say,
    StartTurn,
    Submit,
    Terminate,
    TurnEnded,
    step,
)
from agent.repl.status_line import StatusLine, status_payload
from agent.slash.custom import command_model
from agent.slash.mcp import register_mcp_commands, wait_for_prompt_server
from agent.slash.router import CommandContext, CommandRouter, context_percent, context_tokens, default_router
from agent.slash.skills import register_custom_commands, register_skill_commands
from services.config import project_dir
from services.events import AssistantEvent, ToolEndEvent
from services.private_fs import append_private
from services.session import SessionLocked, privacy_warnings
from services.trace import trace
from tools.checkpoints import CHECKPOINTS_KEY, CheckpointStore
from tools.permissions import Answer, Mode, PermissionRequest, PermissionResult
from tools.todo import format_todos

PROMPT = "> "
MAX_PATH_COMPLETIONS = 200


def history_path(cwd: Path) -> Path:
    return project_dir(cwd) / "prompt_history"


class ReplCompleter(Completer):
    """`/name` at the start of the line completes commands; a word starting with `@` completes paths."""

    def __init__(self, router: CommandRouter, cwd: Path):
        self.router = router
        self.cwd = cwd
        self.mcp: Any = None  # set once MCP servers start: `@server:uri` completion

    async def get_completions_async(self, document: Document, complete_event: Any):  # noqa: ANN201
        for c in self.get_completions(document, complete_event):
            yield c
        word = document.get_word_before_cursor(WORD=True)
        if self.mcp is not None and word.startswith("@") and not document.text_before_cursor.startswith("/"):
            from agent.slash.mcp import mention_completions

            for text, meta in await mention_completions(self.mcp, word[1:]):
                yield Completion("@" + text, start_position=-len(word), display_meta=meta)

    def get_completions(self, document: Document, complete_event: Any) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            typed = before[1:].lower()
            for name in self.router.names():
                if name.lower().startswith(typed):
                    cmd = self.router.get(name)
                    yield Completion("/" + name, start_position=-len(before), display_meta=cmd.help if cmd else "")
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word[1:])

    def _paths(self, fragment: str) -> Iterable[Completion]:
        head, _, prefix = fragment.rpartition("/")
        base = Path(head).expanduser() if head else Path(".")
        directory = base if base.is_absolute() else self.cwd / base
        try:
            entries = sorted(directory.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        count = 0
        for entry in entries:
            name = entry.name
            if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
                continue
            suffix = "/" if entry.is_dir() else ""
            yield Completion(name + suffix, start_position=-len(prefix), display=name + suffix)
            count += 1
            if count >= MAX_PATH_COMPLETIONS:
                return


class _TerminalProxy(StdoutProxy):
    """prompt-toolkit's stdout proxy, minus its one failure mode: when the terminal goes away (the window is
    closed: EIO, EPIPE), a write must not raise in its flush thread or in a task nobody awaits. What cannot be
    written is dropped; SIGHUP ends the session, and the transcript already holds everything."""

    broken = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[str] = []  # text waiting, in order, for the application to know where it is
        self._deferred_since: float | None = None
        self._retry: Any = None

    def _emit(self, text: str) -> None:
        if self.broken:
            return
        try:
            self._output.enable_autowrap()
            self._output.write_raw(text) if self.raw else self._output.write(text)
            self._output.flush()
        except OSError:
            self.broken = True

    def _write_and_flush(self, loop: asyncio.AbstractEventLoop | None, text: str) -> None:
        if loop is None:
            self._emit(text)
            return

        def in_loop() -> None:
            self._pending.append(text)
            self._write_pending(loop)

        try:
            loop.call_soon_threadsafe(in_loop)
        except RuntimeError:  # the loop is closed: the session is over
            pass

    def _write_pending(self, loop: asyncio.AbstractEventLoop) -> None:
        self._retry = None
        if not self._pending:
            return
        app = self.app_session.app
        drawn = app is not None and app.is_running and not app.is_done and not app._running_in_terminal  # noqa: SLF001
        if drawn and app is not None and app.renderer.waiting_for_cpr:
            # A cursor report is on its way (start, resize, Ctrl-L): it will say how many rows are left below
            # the application *before* this write. Writing now would let that stale answer stretch the
            # application down and scroll the written text off the screen. Wait for it (at most 2 s).
            now = time.monotonic()
            self._deferred_since = self._deferred_since or now
            if now - self._deferred_since < 2.0:
                if self._retry is None:
                    self._retry = loop.call_later(0.01, self._write_pending, loop)
                return
        self._deferred_since = None
        text, self._pending = "".join(self._pending), []
        if drawn:
            self._write_above(app, lambda: self._emit(text), text)
        else:
            self._emit(text)  # nothing drawn (or something else owns the terminal): just write

    @staticmethod
    def _write_above(app: Any, write_and_flush: Any, text: str) -> None:
        """Erase the application, write, draw it again below: synchronously, in the loop.

        prompt-toolkit's own way (`run_in_terminal`) also detaches the input, switches the terminal to cooked
        mode and asks for the cursor position, then waits for the answer before the next write: a key typed
        meanwhile waits ~50 ms (measured: bench/bench_keystroke.py) or is echoed by the tty into the output.
        Here no mode changes and no round trip: the rows left below the application are worked out from what
        was written (rich wraps lines to the width, so newlines are rows), which keeps the toolbar drawn."""
        renderer = app.renderer
        rows_below = renderer._min_available_height  # noqa: SLF001 - known from the last cursor report
        renderer.erase()
        write_and_flush()
        if rows_below > 0:
            width = max(1, app.output.get_size().columns)
            rows = sum(1 + (len(ESCAPE_SEQUENCE.sub("", line)) - 1) // width if line else 1
                       for line in text.split("\n")[:-1])
            renderer._min_available_height = max(1, rows_below - rows)  # noqa: SLF001
        app._redraw()  # noqa: SLF001 - the public invalidate() would draw later, after the next key


@dataclass
class _Question:
    """An open question in the input area: the permission menu, or a line of text."""

    kind: str  # "menu" | "text"
    text: str = ""
    request: Any = None
    selected: int = 0
    kept: Any = None  # the input box's text, put back when the question closes
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def answer(self, value: str | None) -> None:
        if not self.future.done():
            self.future.set_result(value)


class Repl:
    """The REPL: one prompt-toolkit application for the whole session, driven by `agent/repl/state.py`.

    The input box stays live while a turn runs. Everything that happens (a submitted line, Ctrl-C, Esc,
    Ctrl-D, SIGTERM, a question, the end of a turn, a resize) goes through `dispatch`, which asks the pure
    state machine what to do and does it. Output is printed above the input (prompt-toolkit's stdout proxy on
    a terminal); what is still changing (the open Markdown block, the tools' spinners) is drawn inside the
    application by the live area.
    """

    def __init__(
        self,
        opts: AppOptions,
        deps: Any = None,
        *,
        input: Any = None,
        output: Any = None,
        console: Console | None = None,
        history: History | None = None,
        clock: Callable[[], float] = time.monotonic,
        router: CommandRouter | None = None,
        raw_stdin: bool | None = None,  # kept for callers; the application reads the terminal itself
    ):
        self.opts = opts
        self.cwd = opts.cwd
        self.console = console or make_console()
        self.clock = clock
        self.router = router or default_router()
        self.engine = build_engine(opts, deps=deps, ask=self.ask)
        register_custom_commands(self.router, self.engine, opts.trusted)  # before skills: a command wins
        register_skill_commands(self.router, getattr(self.engine, "skills", []) or [])
        self.mcp: Any = None
        self.state = ReplState()
        self.live = AppLiveArea(self.console, invalidate=self._invalidate)
        # On a terminal the live area is drawn by the application; printed to a buffer (tests), it is off.
        use_area = self.console.is_terminal and not self.console.is_dumb_terminal
        self.renderer = Renderer(self.console, {t.name: t for t in self.engine.tools}, self.cwd,
                                 live_area=self.live if use_area else None)
        if history is None:
            path = history_path(self.cwd)
            try:
                append_private(path, "")  # prompt-toolkit would create it with the umask's mode
                history = FileHistory(str(path))
            except OSError:
                history = InMemoryHistory()
        self.session: PromptSession = PromptSession(
            input=input,
            output=output,
            history=history,
            completer=ReplCompleter(self.router, self.cwd),
            complete_while_typing=False,
            key_bindings=repl_key_bindings(self),
            bottom_toolbar=self.toolbar,
            prompt_continuation=lambda width, line_number, is_soft_wrap: " " * width,
            enable_history_search=False,
        )
        self._add_live_window()
        self._started = time.time()
        self.status_line = self._make_status_line(opts)
        self.session.app.ttimeoutlen = 0.1  # a lone Esc acts after 0.1 s (Alt-Enter arrives as one write)
        self._turn_task: asyncio.Task | None = None
        self._question: _Question | None = None
        self._ask_lock = asyncio.Lock()
        self._permission_lock = asyncio.Lock()
        self._exit_code: int | None = None
        self._pending_inject: list[Any] = []  # `!command` runs, given to the model with the next prompt
        self.ctx = CommandContext(self.engine, self.console, self.cwd, self.router, opts=opts, pick=self.pick)
        self.ctx.extras["repl"] = self
        self.engine.gate.notify = lambda line: self.say(line, "dim")  # where a "don't ask again" rule went
        # Checkpoints of the files each turn's Edit/Write calls change (/rewind, Esc Esc).
        self.checkpoints = CheckpointStore(self.engine.session_dir / "checkpoints", self.engine.record)
        self.engine.state.extras[CHECKPOINTS_KEY] = self.checkpoints
        self.router.register("rewind", self.cmd_rewind, "restore the conversation and/or code to an earlier prompt")
        self.next_default = ""  # text put back in the input box (a rewound prompt)
        self.pending_images = PendingImages()  # `[Image #N]` in the input -> the pasted image
        self._clipboard_task: asyncio.Task | None = None

    # -- state -----------------------------------------------------------------------------------
    @property
    def queued(self) -> list[str]:
        return list(self.state.queued)

    def is_busy(self) -> bool:
        return self.state.phase in BUSY

    def dispatch(self, event: Any) -> None:
        """Feed one event to the state machine and carry out what it says."""
        before = self.state.phase
        transition = step(self.state, event)
        self.state = transition.state
        if self.state.phase is not before:
            trace("repl.phase", event=type(event).__name__, phase=self.state.phase.value)
        for effect in transition.effects:
            self._apply(effect)

    def _apply(self, effect: Any) -> None:
        if isinstance(effect, StartTurn):
            self._start_turn(effect.text)
        elif isinstance(effect, Abort):
            task = self._turn_task
            if task is not None and not task.done() and not self.engine.abort():
                task.cancel()  # nothing to abort gracefully (a slash command, a question): cancel it
            if self._question is not None:
                self.answer(None)
        elif isinstance(effect, Cancel):
            if self._turn_task is not None and not self._turn_task.done():
                self._turn_task.cancel()
        elif isinstance(effect, Exit):
            self._exit(effect.code)
        elif isinstance(effect, Say):
            self.say(effect.text, "dim")
        elif isinstance(effect, ClearInput):
            self.session.default_buffer.reset()
        elif isinstance(effect, EditQueue):
            buf = self.session.default_buffer
            buf.text = effect.text + ("\n" + buf.text if buf.text else "")
            buf.cursor_position = len(buf.text)
        self._invalidate()

    def _exit(self, code: int) -> None:
        trace("repl.exit", code=code)
        self._exit_code = code
        app = self.session.app
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result=code)

    def _invalidate(self) -> None:
        app = self.session.app
        if app.is_running:
            app.invalidate()

    # -- what is on screen -----------------------------------------------------------------------
    def _make_status_line(self, opts: AppOptions) -> StatusLine | None:
        config = opts.merged.status_line if opts.merged is not None else None
        if not config:
            return None
        width = lambda: self.session.app.output.get_size().columns  # noqa: E731
        return StatusLine(config["command"], self.cwd, config["padding"], on_change=self._invalidate, width=width)

    def refresh_status_line(self) -> None:
        """Ask the status line command for a new line (in the background, coalesced, at most every 300 ms)."""
        if self.status_line is None:
            return
        e = self.engine
        from agent import __version__

        try:
            payload = status_payload(e, self.cwd, e.usage.cost(e.config.model), context_tokens(e)[0], __version__,
                                     self._started)
        except Exception as exc:  # noqa: BLE001 - a status line must never break the session
            trace("statusline.payload", error=f"{type(exc).__name__}: {exc}"[:200])
            return
        self.status_line.request(payload)

    def _add_live_window(self) -> None:
        """The live area is its own window at the top of the prompt's layout, not part of the prompt message:
        prompt-toolkit splits a multi-line message character by character several times per redraw, which
        made every keystroke pay for the 20 streamed lines above it (bench/bench_keystroke.py)."""
        window = Window(FormattedTextControl(lambda: FormattedText(self.live.fragments())),
                        dont_extend_height=True, wrap_lines=False)
        shown = Condition(lambda: self._question is None and bool(self.live.parts))
        root = cast(HSplit, self.session.layout.container)  # PromptSession's layout is an HSplit
        root.children.insert(0, ConditionalContainer(window, filter=shown))

    def message(self) -> Any:
        """Above the input line: the open question (the live area is hidden meanwhile); then the prompt sign."""
        q = self._question
        if q is not None:
            if q.kind == "menu":
                return FormattedText(menu_lines(q.request, q.selected))
            return FormattedText([("bold", q.text)])
        return FormattedText([("bold", PROMPT)])

    def toolbar(self) -> Any:
        e = self.engine
        cost = e.usage.cost(e.config.model)
        lines: list[tuple[str, str]] = []
        if self.status_line is not None and self.status_line.fragments:
            lines += [*self.status_line.fragments, ("", "\n")]
        for line in self.state.queued:  # lines typed during the turn, shown under the input until sent
            first = visible(line.splitlines()[0] if line else "")
            lines.append(("", f" queued: {first[:100]}\n"))
        phase = self.state.phase
        hint = {Phase.RUNNING: "esc to interrupt" + (" · esc edits the queue" if self.state.queued else ""),
                Phase.INTERRUPTED: "interrupting…", Phase.ASKING: "answer the question"}.get(phase, "/help")
        if self.state.exit_after_turn is not None:
            hint += " · exiting after this turn"
        lines.append(("", f" {e.config.model} · {e.gate.mode} (shift+tab) · ctx ~{context_percent(e)}% · "
                          f"${cost:.2f} · {hint}"))
        return FormattedText(lines)

    def cycle_mode(self) -> None:
        """Shift+Tab: default -> acceptEdits -> plan -> default (bypassPermissions only if it was chosen)."""
        order: list[Mode] = ["default", "acceptEdits", "plan"]
        if self.opts.permission_mode == "bypassPermissions":
            order.append("bypassPermissions")
        mode = self.engine.gate.mode
        self.engine.gate.mode = order[(order.index(mode) + 1) % len(order)] if mode in order else "default"
        self.refresh_status_line()

    def toggle_thinking(self) -> None:
        """Alt+T: thinking off (or back on) for the rest of the session; the next request follows."""
        from services.thinking import ThinkingOptions, describe

        config = self.engine.config
        config.thinking = (config.thinking or ThinkingOptions()).toggled()
        self.say(f"Thinking: {describe(config.model, config.thinking)}", "dim")

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    # -- keys (called by agent/repl/keys.py) -------------------------------------------------------
    def submit_buffer(self, buf: Any) -> None:
        text = buf.text
        if text.strip():
            buf.append_to_history()
        buf.reset()
        self.submit_text(text)

    def submit_text(self, text: str) -> None:
        self.dispatch(Submit(text))

    def on_ctrl_c(self) -> None:
        self.dispatch(CtrlC(self.clock(), input_empty=not self.session.default_buffer.text))

    def on_ctrl_d(self) -> None:
        self.dispatch(CtrlD(input_empty=not self.session.default_buffer.text))

    def on_escape(self) -> None:
        self.dispatch(Escape())

    def _on_sigint(self) -> None:
        """SIGINT from outside (kill -INT): like Ctrl-C; while a question is open, it refuses it."""
        if self._question is not None:
            self.answer("deny" if self._question.kind == "menu" else None)
            return
        self.on_ctrl_c()

    def _terminate(self) -> None:
        """SIGTERM / SIGHUP: end like Ctrl-C ends a turn, then leave the REPL."""
        self.dispatch(Terminate())

    def asking_kind(self) -> str | None:
        return self._question.kind if self._question is not None else None

    def move_selection(self, delta: int) -> None:
        if self._question is not None:
            self._question.selected = (self._question.selected + delta) % 3
            self._invalidate()

    def selected_choice(self) -> str:
        return ("once", "always", "note")[self._question.selected if self._question else 0]

    def answer(self, value: str | None) -> None:
        """Close the open question now, synchronously: keys that follow in the same read (type-ahead after
        the answer) must already reach the input box, not the question."""
        q = self._question
        if q is None:
            return
        self._question = None
        q.answer(value)
        self.session.default_buffer.reset(document=q.kept)
        self.dispatch(AskEnded())
        self.renderer.resume_live()

    def show_transcript(self) -> None:
        """Ctrl-O: the whole conversation, expanded (thinking, full tool output)."""
        from agent.repl.transcript_view import show_transcript

        show_transcript(self.ctx, "")

    def paste_image(self, buf: Any) -> None:
        """Ctrl-V: the clipboard's image as `[Image #N]` at the cursor. The clipboard tool runs in a thread
        (a clipboard owner that hangs must not freeze the input); one paste at a time."""
        if self._clipboard_task is not None and not self._clipboard_task.done():
            return

        async def paste() -> None:
            try:
                got = await asyncio.to_thread(read_clipboard_image)
            except Exception as exc:  # noqa: BLE001 - one line, never a traceback
                got = f"Could not paste the image: {type(exc).__name__}: {exc}"
            if isinstance(got, str):
                self.say(got, "dim")
                return
            mark = self.pending_images.add(got.media_type, got.data, "clipboard") + " "
            q = self._question
            if q is not None and q.kept is not None:  # a question opened meanwhile: the input comes back after
                q.kept = Document(q.kept.text + mark, len(q.kept.text) + len(mark))
            else:
                buf.insert_text(mark)
            self._invalidate()

        self._clipboard_task = asyncio.ensure_future(paste())
        self._clipboard_task.add_done_callback(lambda t: t.cancelled() or t.exception())

    def paste_text(self, buf: Any, data: str) -> None:
        """A bracketed paste: image file paths (a dropped file) become `[Image #N]`; anything else is
        inserted as it is, newlines included (a paste stays one message)."""
        try:
            found = image_paths(data, self.engine.state.cwd) if data.strip() else None
        except TooLarge as exc:
            self.say(f"{visible(str(exc))} is over {MAX_PASTE_BYTES // (1024 * 1024)} MB: pasted as text", "dim")
            found = None
        if not found:
            buf.insert_text(data.replace("\r\n", "\n").replace("\r", "\n"))
            return
        marks = [self.pending_images.add(f.media_type, f.data, f.path) for f in found]
        buf.insert_text(" ".join(marks) + " ")

    # -- questions -------------------------------------------------------------------------------
    async def _ask(self, question: _Question) -> str | None:
        """Open a question in the input area; the input box's text is kept aside and put back after."""
        async with self._ask_lock:
            if not self.session.app.is_running:  # no prompt on screen: nobody to answer
                return None
            buf = self.session.default_buffer
            question.kept = buf.document
            buf.reset()
            self._question = question
            self.renderer.pause()
            self.renderer.asking = True
            self.dispatch(AskStarted())
            try:
                return await question.future
            finally:
                if self._question is question:  # cancelled (an interrupt) rather than answered
                    self.answer(None)

    async def ask_text(self, question: str) -> str | None:
        """One line from the user while a turn may be running (a note, a number, MCP forms)."""
        return await self._ask(_Question("text", text=question))

    async def ask_yes_no(self, question: str) -> bool:
        answer = await self.ask_text(f"{question} [y/n]: ")
        return (answer or "").strip().lower() in ("y", "yes")

    async def pick(self, title: str, options: list[tuple[str, str]]) -> str | None:
        self.say(title, "bold")
        for i, (value, label) in enumerate(options, 1):
            self.say(f"{i:>2}. {label}" if value == str(i) else f"{i:>2}. {value}  {label}")
        answer = ((await self.ask_text("Number (Enter to cancel): ")) or "").strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1][0]
        for value, _ in options:
            if value == answer:
                return value
        self.say(f"No choice {answer!r}.", "yellow")
        return None

    async def ask(self, request: PermissionRequest) -> Answer | PermissionResult:
        """The permission question: Claude Code's numbered menu (Enter = Yes)."""
        async with self._permission_lock:  # parallel tool calls ask one at a time
            self.renderer.permission_question(request.tool.name, request.label, request.input, request.reason)
            answer = await self._ask(_Question("menu", request=request)) or "deny"
            note = ""
            if answer == "note":
                note = await self.ask_text("Tell the agent what to do differently (Enter to skip): ") or ""
        result: Answer | PermissionResult
        if answer == "once":
            self.say("Allowed once.", "dim")
            result = "once"
        elif answer == "always":
            rule = getattr(request, "always_rule", None) or f"{request.tool.name} (this session)"
            self.say(f"Allowed from now on: {visible(rule)}", "dim")
            result = "always"
        elif answer == "note" and note.strip():
            self.say("Denied; the agent was told what to do instead.", "yellow")
            result = PermissionResult("deny", message=rejection(note))
        else:
            self.say("Denied.", "yellow")
            result = "deny"
        return result

    # -- turns -----------------------------------------------------------------------------------
    def _start_turn(self, text: str) -> None:
        self.console.print(Text(f"{PROMPT}{visible(text)}", style="bold"))
        images = self.pending_images.take(text)  # the line's images; queued lines keep theirs until sent
        self.pending_images.prune([self.session.default_buffer.text, *self.state.queued])
        self._turn_task = asyncio.ensure_future(self._run_line(text, images))

    async def _run_line(self, text: str, images: list[Any] | None = None) -> None:
        code: int | None = None
        try:
            code = await self.handle_line(text, images)
        except asyncio.CancelledError:
            self._report("Interrupted", "yellow")
        except OSError as exc:  # disk full, read-only...: one line naming the path
            self._report(os_error_line(exc), "bold red")
        except Exception as exc:  # noqa: BLE001 - a command's bug must not end the session
            self._report(f"Error: {type(exc).__name__}: {exc}", "bold red")
        finally:
            self._turn_task = None
        if self.next_default and not self.session.default_buffer.text:
            self.session.default_buffer.text = self.next_default
            self.session.default_buffer.cursor_position = len(self.next_default)
        self.next_default = ""
        self.dispatch(TurnEnded(code))
        self.refresh_status_line()

    def _report(self, line: str, style: str) -> None:
        """How a turn ended badly; if even that cannot be written (the terminal is gone), it is only traced."""
        try:
            self.renderer.close()
            self.say(line, style)
        except OSError as exc:
            trace("repl.unreported", line=line[:200], error=exc.strerror or "")

    async def run_turn(self, text: str, inject: list | None = None, images: list[Any] | None = None,
                       extra_blocks: list[Any] | None = None) -> None:
        blocks: list[Any] = list(extra_blocks or [])  # a custom command's body goes after its header
        if images:  # fitted to the API's limits off the event loop (Pillow); a bad one is a note, not sent
            fitted, notes = await asyncio.to_thread(image_blocks, images)
            blocks += fitted
            for note in notes:
                self.say(note, "yellow")
        inject = [*self._carry_over(), *(inject or [])]
        self.checkpoints.directory = self.engine.session_dir / "checkpoints"  # /clear starts a new session
        self.checkpoints.record = self.engine.record
        self.checkpoints.begin_turn(-1)  # set once the prompt is in the history (first event below)
        try:
            async for ev in self.engine.run_turn(text, inject_before=inject or None, images=blocks or None):
                if self.checkpoints.turn < 0:  # the turn's checkpoints are keyed by its prompt's index
                    self.checkpoints.begin_turn(_last_prompt_index(self.engine.messages))
                self.renderer.event(ev)
                if isinstance(ev, (AssistantEvent, ToolEndEvent)):  # a reply or a tool result: the line may change
                    self.refresh_status_line()
                if isinstance(ev, ToolEndEvent) and ev.name == "TodoWrite" and ev.ok:
                    # The plan changed: show it compactly.
                    self.say(format_todos(self.engine.state.extras.get("todos") or []), "dim")
        finally:
            self.renderer.close()

    # -- the loop ------------------------------------------------------------------------------
    def banner(self) -> None:
        e = self.engine
        head = Text("react-agent", style="bold")
        head.append(f"  {e.config.model} · {e.gate.mode} · {self.cwd}", style="dim")
        self.console.print(head)
        self.say("/help for commands · Alt-Enter for a new line · Ctrl-C interrupts · Ctrl-D exits", "dim")

    def start(self, continue_: bool = False, resume: str | None = None) -> int | None:
        """Resume the requested session, if any. Returns an exit code when the REPL cannot start."""
        try:
            loaded = load_resume_target(self.cwd, continue_, resume)
        except ResumeError as exc:
            self.say(f"error: {exc}", "bold red")
            return 1
        self.banner()
        set_transcript(lambda: self.engine.paths.transcript)
        for warning in privacy_warnings(self.cwd):
            self.say(f"warning: {warning}", "yellow")
        for notice in self.engine.notices_at_start:  # command / skill files skipped (links out of scope)
            self.say(f"notice: {notice}", "yellow")
        if loaded is not None:
            for warning in loaded.warnings:
                self.say(f"warning: {warning}", "yellow")
            try:
                fork = (self.opts.session_id or True) if self.opts.fork_session else False
                self.engine.resume(loaded, fork=fork)
            except SessionLocked as exc:
                self.say(f"error: {exc}", "bold red")
                return 1
            self.checkpoints.load(loaded.records)
            self.show_past(loaded.messages)
            self.say(f"Resumed session {loaded.session_id} ({len(loaded.messages)} messages).", "dim")
        return None

    async def cmd_rewind(self, ctx: Any, args: str) -> None:
        """Pick an earlier prompt; restore the conversation to just before it, the code, or both."""
        prompts = [(i, m) for i, m in enumerate(self.engine.messages)
                   if m.get("role") == "user" and not m.get("meta") and _prompt_text(m)]
        if not prompts:
            self.say("Nothing to rewind to yet.", "dim")
            return
        shown = prompts[-20:]
        options = [(str(n), _prompt_text(m).splitlines()[0][:100]) for n, (_, m) in enumerate(shown, 1)]
        picked = await self.pick("Rewind to just before which prompt?", options)
        if picked is None:
            return
        index = shown[int(picked) - 1][0]
        from agent.slash.rewind import report_hand_edits

        keep = await asyncio.to_thread(self.checkpoints.changed_by_others, index)
        report_hand_edits(self.say, keep)
        # Bash snapshots are compared with the tree through git: off the event loop, the prompt stays live.
        changed = await asyncio.to_thread(self.checkpoints.files_since, index)
        for cp in changed[:10]:
            self.say(f"  {visible(cp.path)}", "dim")
        if len(changed) > 10:
            self.say(f"  … {len(changed) - 10} more", "dim")
        if changed:
            self.say("Restoring code also undoes later changes you made to these files by hand.", "dim")
        how = await self.pick("Restore:", [("both", f"conversation and code ({len(changed)} files)"),
                                           ("conversation", "conversation only"),
                                           ("code", f"code only ({len(changed)} files)")])
        if how is None:
            return
        if how in ("both", "code"):
            restored, problems = await asyncio.to_thread(self.checkpoints.restore, index, frozenset(keep))
            self.say(f"Restored {len(restored)} file(s).", "dim")
            for p in problems:
                self.say(f"not restored: {visible(p)}", "yellow")
        if how in ("both", "conversation"):
            text = _prompt_text(self.engine.messages[index])
            self.engine.replace_history(self.engine.messages[:index])
            if how == "conversation":
                self.checkpoints.forget(index)  # later turns reuse these numbers (restore forgets them itself)
            self.next_default = text  # the prompt comes back in the input box, to edit and send again
            self.say(f"Conversation rewound to before: {visible(text.splitlines()[0][:100])}", "dim")

    def show_past(self, messages: list[Any], limit: int = 40) -> None:
        """The earlier conversation, compactly: the user's prompts, the answers' first lines, tool calls."""
        from agent.repl.render import past_lines

        lines = past_lines(messages)
        if len(lines) > limit:
            self.say(f"… {len(lines) - limit} earlier lines", "dim")
            lines = lines[-limit:]
        for style, text in lines:
            self.console.print(Text(visible(text), style=style))

    async def handle_line(self, line: str, images: list[Any] | None = None) -> int | None:
        """One submitted line: a slash command or a message to the model (with the images pasted into it).
        Returns an exit code to stop."""
        text = line.strip()
        if not text:
            return None
        if images and (text.startswith(("!", "#")) or self.router.is_command(text)):
            self.say(f"Images go only with a message to the model: {len(images)} not sent", "dim")
        if text.startswith("!"):
            await self.bash_mode(text[1:].strip())
            return None
        if text.startswith("#") and not text.startswith("#!"):
            await self.remember(text[1:].strip())
            return None
        if self.router.is_command(text):
            if self.mcp is not None:  # a prompt of a server still starting: wait for it
                await wait_for_prompt_server(self.router, self.mcp, text)
            result = await self.router.dispatch(text, self.ctx)
            if result.exit:
                return result.exit_code
            if result.run_turn is not None:
                turn_text, inject = result.run_turn
                with command_model(self.engine, result.model):
                    await self.run_turn(turn_text, inject, extra_blocks=result.blocks)
            return None
        inject = []
        if self.mcp is not None and "@" in text:
            from services.mcp.content import expand_mentions

            out = await expand_mentions(self.mcp, text, self.engine.session_dir / "tool-results")
            for w in out.warnings:
                self.say(f"warning: {w}", "yellow")
            for n in out.notices:
                self.say(n, "dim")
            inject = out.messages
        await self.run_turn(text, inject or None, images=images)
        return None

    def _carry_over(self) -> list[Any]:
        """What the model is told before the next prompt: `!command` runs and finished background tasks."""
        from services.messages import user_message
        from tools.background_tasks import registry

        out, self._pending_inject = self._pending_inject, []
        for note in registry(self.engine.state).take_notifications():
            out.append(user_message(note, meta={"origin": "task-notification"}))
        return out

    async def bash_mode(self, command: str) -> None:
        """`!command`: run it now in the session's directory; command and output go to the next prompt."""
        from services.messages import user_message
        from tools.bash import run_direct

        if not command:
            self.say("Usage: !command (runs in bash; its output goes to the model with your next message)", "dim")
            return
        out, code = await run_direct(command, self.engine.state.cwd, sandbox=getattr(self.engine.gate, "sandbox", None))
        if out:
            self.console.print(Text(visible(out.rstrip("\n"))))
        if code:
            self.say(f"exit {code}", "yellow")
        self._pending_inject += [
            user_message(f"<bash-input>{command}</bash-input>", meta={"origin": "bash-mode"}),
            user_message(f"<bash-stdout>{out.rstrip()}</bash-stdout><bash-stderr></bash-stderr>"
                         + (f"\n[exit code {code}]" if code else ""), meta={"origin": "bash-mode"}),
        ]

    async def remember(self, note: str) -> None:
        """`# note`: append the note to an instruction file (Enter: the project's CLAUDE.md / AGENTS.md)."""
        from agent.repl.memory_note import claude_dir_of, remember_note

        await remember_note(note, self.cwd, claude_dir_of(self.engine), self.say, self.ask_text,
                            trusted=bool(getattr(self.engine.prompt_builder, "trusted", True)))

    async def start_mcp(self) -> None:
        """Start MCP servers in the background (if any are configured): `/mcp`, prompt commands as servers
        become ready, and the answers to their sampling and elicitation requests. Their tools reach the
        model before its next call (the engine's refresher), with a notice."""
        from agent.loop.mcp_hooks import make_elicitation_handler, make_sampling_handler

        self.mcp = await start_mcp(self.cwd, warn=lambda w: self.say(f"warning: {w}", "yellow"),
                                   opts=self.opts)
        register_mcp_commands(self.router, self.mcp, ask=self.ask_text)
        if self.mcp is not None:
            from agent.loop.factory import mcp_refresher

            self.session.completer.mcp = self.mcp  # type: ignore[union-attr]
            self.mcp.handlers.progress = self.renderer.progress
            notify = lambda text: self.say(text, "dim")  # noqa: E731
            self.mcp.handlers.sample = make_sampling_handler(self.engine, self.ask_yes_no, notify)
            self.mcp.handlers.elicit = make_elicitation_handler(self.ask_text, notify)
            blocked = {r for r in self.engine.gate.disallowed_tools if "(" not in r}
            refresh = mcp_refresher(self.engine, self.mcp, blocked)

            def refresh_and_render() -> list[tuple[str, str]]:
                notices = refresh()
                self.renderer.tools.update({t.name: t for t in self.engine.tools})
                return notices

            self.engine.attach_mcp(refresh_and_render, self.mcp.instructions)

    @staticmethod
    def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # A stray task's exception (a tool's helper task, say) must not garble the screen.
        exc = context.get("exception")
        trace("repl.loop_exception", message=context.get("message", ""), error=type(exc).__name__ if exc else "",
              where=repr(context.get("future") or context.get("handle") or "")[:200])

    async def run(self, continue_: bool = False, resume: str | None = None, initial_prompt: str | None = None) -> int:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._loop_exception)
        handled: list[signal.Signals] = []
        for sig, handler in ((signal.SIGTERM, self._terminate), (signal.SIGHUP, self._terminate),
                             (signal.SIGINT, self._on_sigint)):
            try:
                loop.add_signal_handler(sig, handler)
                handled.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        from services.session import PICK_SESSION

        pick = resume == PICK_SESSION
        code = self.start(continue_, None if pick else resume)
        if code is not None:
            self.engine.close()
            return code
        ticker: asyncio.Task | None = None
        try:
            with self._output_above_prompt():
                try:
                    await self.start_mcp()

                    def pre_run() -> None:
                        nonlocal ticker
                        ticker = asyncio.ensure_future(self._tick())
                        self.refresh_status_line()
                        if pick:  # `--resume` without an id: the picker, as a turn of its own
                            self.submit_text("/resume")
                        if initial_prompt:  # `agent "task"` on a terminal: the task is the first message
                            self.submit_text(initial_prompt)

                    result = await self.session.prompt_async(
                        self.message, default=self.next_default, pre_run=pre_run,
                        set_exception_handler=False, handle_sigint=False)
                    return int(result) if isinstance(result, int) else EXIT_OK
                finally:
                    # While output still goes above the prompt (or nowhere, if the terminal is gone).
                    if ticker is not None:
                        ticker.cancel()
                    if self.status_line is not None:
                        self.status_line.close()
                    await self._stop_turn()
                    with contextlib.suppress(OSError):
                        self.renderer.close()
        except EOFError:
            return EXIT_INTERRUPTED if self.state.exit_after_turn else EXIT_OK
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EPIPE, errno.ENXIO, errno.EBADF):
                trace("repl.terminal_gone", error=exc.strerror or "")
                return EXIT_INTERRUPTED  # the window was closed: nothing left to tell anyone
            raise
        finally:
            for sig in handled:
                try:
                    loop.remove_signal_handler(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
            self.engine.close()  # background tasks are killed with the session
            if self.mcp is not None:
                await self.mcp.close()

    async def _stop_turn(self) -> None:
        """Cancel a turn still running when the session ends, and take its outcome (never left unretrieved)."""
        task = self._turn_task
        if task is None:
            return
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=5)
        if task.done() and not task.cancelled():
            task.exception()

    async def _tick(self) -> None:
        """Redraw while something moves (spinners) so they animate; the input itself redraws on keys."""
        while True:
            await asyncio.sleep(0.1)
            if self.live.animated:
                self._invalidate()

    @contextlib.contextmanager
    def _output_above_prompt(self) -> Any:
        """On a terminal, everything written to stdout/stderr (rich's prints, TRACE lines) goes above the
        input box instead of through it. In tests the console writes to a buffer and nothing is patched."""
        if self.console._file is not None or not sys.stdout.isatty():  # noqa: SLF001 - rich has no accessor
            yield
            return
        proxy = _TerminalProxy(raw=True, sleep_between_writes=0.02)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = proxy
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved
            try:
                proxy.close()
            except Exception:  # noqa: BLE001
                pass


def ask_folder_trust(cwd: Path, home: Path) -> bool:
    """On first open of a folder with its own configuration, ask once whether to trust it.

    The answer is recorded in the agent home either way ("no" is not asked again: `agent trust` changes
    it). A folder without project configuration is not asked about and stays untrusted.
    """
    from services.settings import load_settings
    from services.trust import folder_requests, trust

    requests = folder_requests(cwd, load_settings(cwd, home, trusted=False).ignored)
    if not requests.has_config or _trust_answered(cwd, home):
        return False
    out = sys.stderr
    out.write(f"\nThis folder has its own agent configuration: {cwd}\n")
    out.write(f"Files: {', '.join(requests.files)}\n")
    for want in requests.wants or ["only restrictions (deny/ask rules)"]:
        out.write(f"  - {want}\n")
    out.write("Trusting it lets these run and apply. Only trust folders whose contents you trust.\n")
    out.write("Trust this folder? [y/N] ")
    out.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError, OSError):
        answer = ""
    _record_answer(cwd, home)
    if answer in ("y", "yes"):
        trust(cwd, home)
        out.write("Trusted. (agent trust --revoke undoes it.)\n")
        return True
    out.write("Not trusted: only its deny/ask rules apply. (agent trust trusts it later.)\n")
    return False


def _answered_file(home: Path) -> Path:
    return home / "trust-asked.txt"


def _trust_answered(cwd: Path, home: Path) -> bool:
    try:
        return str(cwd.resolve()) in _answered_file(home).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False


def _record_answer(cwd: Path, home: Path) -> None:
    try:
        append_private(_answered_file(home), str(cwd.resolve()) + "\n")
    except OSError:
        pass


def run_repl(opts: AppOptions, continue_: bool = False, resume: str | None = None,
             initial_prompt: str | None = None) -> int:
    repl = Repl(opts)
    try:
        return asyncio.run(repl.run(continue_=continue_, resume=resume, initial_prompt=initial_prompt))
    except KeyboardInterrupt:  # a SIGINT that landed between the prompt and a turn
        sys.stderr.write("Interrupted\n")
        return EXIT_INTERRUPTED


def _prompt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text").strip()


def _last_prompt_index(messages: Sequence[Mapping[str, Any]]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not messages[i].get("meta") and _prompt_text(messages[i]):
            return i
    return len(messages)
