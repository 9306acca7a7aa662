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

`Repl` is a thin coordinator assembled from one part per concern: `screen.py` (what is drawn),
`input_box.py` (what the keys do), `questions.py` (the permission menu, lines and picks asked in the input
area), `turns.py` (running a submitted line), `rewind.py`, `mcp_start.py` and `terminal.py` (output above the
input box). This module builds the parts' shared state, feeds events to the state machine and runs the
session.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from rich.console import Console

from agent.errors import set_transcript
from agent.loop.budget_guard import install_budget
from agent.loop.factory import AppOptions, ResumeError, build_engine, load_resume_target
from agent.repl.completion import ReplCompleter, history_path, slash_name_typed
from agent.repl.image_input import PendingImages
from agent.repl.input_box import InputPart
from agent.repl.keys import repl_key_bindings
from agent.repl.live_area import AppLiveArea
from agent.repl.mcp_start import McpPart
from agent.repl.notifications import DEFAULT_TURN_SECONDS, TerminalNotifier
from agent.repl.parts import Question
from agent.repl.questions import QuestionsPart
from agent.repl.render import Renderer, make_console
from agent.repl.rewind import RewindPart
from agent.repl.screen import ScreenPart
from agent.repl.state import (
    BUSY,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Abort,
    Cancel,
    ClearInput,
    EditQueue,
    Exit,
    ReplState,
    Say,
    StartTurn,
    step,
)
from agent.repl.terminal import TerminalPart
from agent.repl.turns import TurnsPart
from agent.slash.router import CommandContext, CommandRouter, default_router
from agent.slash.skills import register_custom_commands, register_skill_commands
from services.config import agent_environ, env_int
from services.private_fs import append_private
from services.session import SessionLocked, privacy_warnings
from services.trace import trace
from tools.checkpoints import CheckpointStore

__all__ = ["Repl", "ReplCompleter", "history_path", "run_repl"]


class Repl(ScreenPart, InputPart, QuestionsPart, TurnsPart, RewindPart, McpPart, TerminalPart):
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
        install_budget(self.engine, opts.max_budget_usd, lambda line: self.say(line, "yellow"))
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
            complete_while_typing=slash_name_typed,
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
        self._question: Question | None = None
        self._ask_lock = asyncio.Lock()
        self._permission_lock = asyncio.Lock()
        self._exit_code: int | None = None
        self._pending_inject: list[Any] = []  # `!command` runs, given to the model with the next prompt
        self.ctx = CommandContext(self.engine, self.console, self.cwd, self.router, opts=opts, pick=self.pick)
        self.ctx.extras["repl"] = self
        self.engine.gate.notify = lambda line: self.say(line, "dim")  # where a "don't ask again" rule went
        self.notifier = TerminalNotifier(self._write_terminal, lambda: self.engine.hooks,
                                         opts.merged.notif_channel if opts.merged else None, agent_environ(),
                                         float(env_int("AGENT_NOTIFY_TURN_SECONDS", int(DEFAULT_TURN_SECONDS), minimum=0)))
        # Checkpoints of the files each turn's Edit/Write calls change (/rewind, Esc Esc).
        self.checkpoints = CheckpointStore(self.engine.session_dir / "checkpoints", self.engine.record)
        self.engine.state.checkpoints = self.checkpoints
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

    # -- the session -----------------------------------------------------------------------------
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
            await self.engine.end_session("prompt_input_exit")
            self.engine.close()  # background tasks are killed with the session
            if self.mcp is not None:
                await self.mcp.close()


def run_repl(opts: AppOptions, continue_: bool = False, resume: str | None = None,
             initial_prompt: str | None = None) -> int:
    repl = Repl(opts)
    try:
        return asyncio.run(repl.run(continue_=continue_, resume=resume, initial_prompt=initial_prompt))
    except KeyboardInterrupt:  # a SIGINT that landed between the prompt and a turn
        sys.stderr.write("Interrupted\n")
        return EXIT_INTERRUPTED
