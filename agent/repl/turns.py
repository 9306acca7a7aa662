"""Running what was submitted: a slash command, `!command` (bash mode), `# note` (memory) or a message to
the model, whose events go to the renderer; how a turn that fails or is interrupted is reported."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text

from agent.errors import os_error_line
from agent.loop.budget_guard import spent
from agent.message_display import MessageDisplay
from agent.repl.image_input import image_blocks
from agent.repl.parts import ReplParts
from agent.repl.permission_menu import visible
from agent.repl.rewind import last_prompt_index
from agent.repl.screen import PROMPT
from agent.repl.state import TurnEnded
from agent.slash.custom import command_model
from agent.slash.mcp import wait_for_prompt_server
from services.events import AssistantEvent, ToolEndEvent
from services.trace import trace
from tools.todo import format_todos


class TurnsPart(ReplParts):
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
        if self._budget_refuses(text):
            return
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
        began = self.clock()
        try:
            display = MessageDisplay(self.engine.hooks)  # a hook may rewrite what is shown, by whole lines
            async for ev in display.stream(self.engine.run_turn(text, inject_before=inject or None,
                                                                images=blocks or None)):
                if self.checkpoints.turn < 0:  # the turn's checkpoints are keyed by its prompt's index
                    self.checkpoints.begin_turn(last_prompt_index(self.engine.messages))
                self.renderer.event(ev)
                if isinstance(ev, (AssistantEvent, ToolEndEvent)):  # a reply or a tool result: the line may change
                    self.refresh_status_line()
                if isinstance(ev, ToolEndEvent) and ev.name == "TodoWrite" and ev.ok:
                    # The plan changed: show it compactly.
                    self.say(format_todos(self.engine.state.todos or []), "dim")
        finally:
            self.renderer.close()
            for line in self.engine.budget.notices(spent(self.engine)):
                self.say(line, "yellow")
        await self.notifier.turn_ended(self.clock() - began)  # not after an interrupt: the user is here

    def _budget_refuses(self, text: str) -> bool:
        """A spent budget: the prompt is not sent but put back in the input box, and the user is told."""
        reason = self.engine.budget.refuse(spent(self.engine))
        if reason is None:
            return False
        self.say(reason, "yellow")
        self.next_default = self.next_default or text
        return True

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
