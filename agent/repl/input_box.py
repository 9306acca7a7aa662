"""What the keys do (`agent/repl/keys.py` binds them): submitting, Ctrl-C / Ctrl-D / Esc as state-machine
events, signals from outside, Shift+Tab's permission mode, Alt+T's thinking, Ctrl-O's transcript, and
pasting (an image from the clipboard, a dropped image file, text)."""

from __future__ import annotations

import asyncio
from typing import Any

from prompt_toolkit.document import Document

from agent.repl.image_input import MAX_PASTE_BYTES, TooLarge, image_paths, read_clipboard_image
from agent.repl.parts import ReplParts
from agent.repl.permission_menu import visible
from agent.repl.state import CtrlC, CtrlD, Escape, Submit, Terminate
from tools.permissions import Mode


class InputPart(ReplParts):
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
