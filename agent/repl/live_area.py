"""Where the renderer draws what is still changing: the open Markdown block and the running tools' spinners.

Two implementations of one small interface (`show(parts)`, `stop()`):

- `AppLiveArea`: inside the REPL's prompt-toolkit application, above the input line. The prompt owns the
  terminal for the whole session, so the live region is part of its layout: redrawn by prompt-toolkit (which
  erases its own area properly on every redraw and on resize), never a second writer fighting it.
- `RichLiveArea`: a rich `Live` region, for a renderer used without the application (tests, tools).

Rendering a part to terminal text is done once per change and per width, so a keystroke's redraw only copies
cached fragments: typing stays fast while a long reply streams.
"""

from __future__ import annotations

import io
from typing import Any

from prompt_toolkit.formatted_text import ANSI, to_formatted_text
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner


class RichLiveArea:
    def __init__(self, console: Console):
        self.console = console
        self._live: Live | None = None

    def show(self, parts: list[RenderableType]) -> None:
        if not parts:
            self.stop()
            return
        if self._live is None:
            self._live = Live(console=self.console, refresh_per_second=10, transient=True,
                              vertical_overflow="crop")
            self._live.start()
        self._live.update(Group(*parts), refresh=True)

    def stop(self) -> None:
        if self._live is not None:
            self._live.update(Group(), refresh=True)
            self._live.stop()
            self._live = None


class AppLiveArea:
    """The live parts as prompt-toolkit fragments. `invalidate` asks the application for a redraw."""

    def __init__(self, console: Console, invalidate: Any = None, width: Any = None):
        self.console = console
        self.invalidate = invalidate or (lambda: None)
        self.width = width or (lambda: console.width)
        self.parts: list[RenderableType] = []
        self._cache: dict[tuple[int, int], list[tuple[str, str]]] = {}  # (index, width) -> fragments

    def show(self, parts: list[RenderableType]) -> None:
        self._cache = {}  # new parts: render again (a resize changes the width, and so the key)
        self.parts = list(parts)
        self.invalidate()

    def stop(self) -> None:
        self.show([])

    @property
    def animated(self) -> bool:
        return any(isinstance(p, Spinner) for p in self.parts)

    def fragments(self) -> list[tuple[str, str]]:
        width = max(20, int(self.width() or 80))
        out: list[tuple[str, str]] = []
        for i, part in enumerate(self.parts):
            key = (i, width)
            frags = None if isinstance(part, Spinner) else self._cache.get(key)  # spinners move: not cached
            if frags is None:
                frags = self._render(part, width)
                if not isinstance(part, Spinner):
                    self._cache[key] = frags
            out.extend(frags)
        return out

    def _render(self, part: RenderableType, width: int) -> list[tuple[str, str]]:
        buf = io.StringIO()
        c = Console(file=buf, width=width, force_terminal=True, color_system=self.console.color_system,  # type: ignore[arg-type]
                    no_color=self.console.no_color, highlight=False)
        c.print(part)
        return merge_fragments(to_formatted_text(ANSI(buf.getvalue())))


def merge_fragments(fragments: Any) -> list[tuple[str, str]]:
    """prompt-toolkit's ANSI parser gives one fragment per character: join runs of one style, so a redraw
    (one per keystroke) walks a few hundred fragments instead of every character of the live area."""
    out: list[tuple[str, str]] = []
    for style, text, *_ in fragments:
        if out and out[-1][0] == style:
            out[-1] = (style, out[-1][1] + text)
        else:
            out.append((style, text))
    return out
