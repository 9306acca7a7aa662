"""What the REPL draws: the prompt sign or the open question, the live area's window, the bottom toolbar,
the status line, the banner and the earlier conversation of a resumed session."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.layout import ConditionalContainer, HSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from rich.text import Text

from agent.loop.factory import AppOptions
from agent.repl.parts import ReplParts
from agent.repl.permission_menu import menu_lines, visible
from agent.repl.state import Phase
from agent.repl.status_line import StatusLine, status_payload
from agent.slash.router import context_percent, context_tokens, percent_label
from services.trace import trace

PROMPT = "> "


class ScreenPart(ReplParts):
    def _invalidate(self) -> None:
        app = self.session.app
        if app.is_running:
            app.invalidate()

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
        lines.append(("", f" {e.config.model} · {e.gate.mode} (shift+tab) · ctx ~{percent_label(context_percent(e))}% · "
                          f"${cost:.2f} · {hint}"))
        return FormattedText(lines)

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    def banner(self) -> None:
        e = self.engine
        head = Text("react-agent", style="bold")
        head.append(f"  {e.config.model} · {e.gate.mode} · {self.cwd}", style="dim")
        self.console.print(head)
        self.say("/help for commands · Alt-Enter for a new line · Ctrl-C interrupts · Ctrl-D exits", "dim")

    def show_past(self, messages: list[Any], limit: int = 40) -> None:
        """The earlier conversation, compactly: the user's prompts, the answers' first lines, tool calls."""
        from agent.repl.render import past_lines

        lines = past_lines(messages)
        if len(lines) > limit:
            self.say(f"… {len(lines) - limit} earlier lines", "dim")
            lines = lines[-limit:]
        for style, text in lines:
            self.console.print(Text(visible(text), style=style))

    async def _tick(self) -> None:
        """Redraw while something moves (spinners) so they animate; the input itself redraws on keys."""
        while True:
            await asyncio.sleep(0.1)
            if self.live.animated:
                self._invalidate()
