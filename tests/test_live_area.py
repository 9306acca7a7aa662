"""The live area's fragments: rendered once per change and width, one fragment per run of a style (a redraw per
keystroke walks them all), the same text as rendering character by character."""

from __future__ import annotations

import io

from prompt_toolkit.formatted_text import ANSI, to_formatted_text
from rich.console import Console
from rich.text import Text

from agent.repl.live_area import AppLiveArea, merge_fragments


def test_fragments_are_runs_of_one_style_with_the_same_text() -> None:
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="256")
    area = AppLiveArea(console, width=lambda: 80)
    body = Text("\n".join(f"line {i:02d} " + "x" * 60 for i in range(20)))
    body.stylize("bold red", 0, 5)
    area.show([body])
    frags = area.fragments()
    text = "".join(t for _, t in frags)
    assert "line 19" in text and text.count("\n") >= 20
    assert len(frags) < 10  # per character this would be over 1,300
    assert frags[0][1] == "line " and "ansired" in frags[0][0] and "bold" in frags[0][0]
    assert area.fragments() == frags


def test_merge_fragments_keeps_order_and_styles() -> None:
    frags = to_formatted_text(ANSI("\x1b[31mab\x1b[0mc\x1b[31md"))
    assert merge_fragments(frags) == [("ansired", "ab"), ("", "c"), ("ansired", "d")]
