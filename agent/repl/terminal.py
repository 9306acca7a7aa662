"""The terminal under the REPL: output written above the input box (a stdout proxy that survives the
terminal going away), and a stray task's exception traced rather than printed over the screen."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

from prompt_toolkit.patch_stdout import StdoutProxy

from agent.repl.parts import ReplParts
from agent.repl.permission_menu import ESCAPE_SEQUENCE
from services.trace import trace


def write_terminal(app_output: Any, text: str) -> None:
    """Bytes for the terminal itself (a notification), past the renderer: written raw, flushed."""
    app_output.write_raw(text)
    app_output.flush()


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


class TerminalPart(ReplParts):
    def _write_terminal(self, text: str) -> None:
        write_terminal(self.session.app.output, text)

    @staticmethod
    def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # A stray task's exception (a tool's helper task, say) must not garble the screen.
        exc = context.get("exception")
        trace("repl.loop_exception", message=context.get("message", ""), error=type(exc).__name__ if exc else "",
              where=repr(context.get("future") or context.get("handle") or "")[:200])

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
