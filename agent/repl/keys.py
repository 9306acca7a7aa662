"""The REPL's keys: one prompt-toolkit key map whose filters follow the REPL's phase (`agent/repl/state.py`).

While a question is open its keys win (the permission menu's digits and arrows, or Enter answering a line);
otherwise the input box is always live: Enter submits (or queues, while a turn runs), Esc interrupts a turn
(or takes queued lines back to edit), Ctrl-C and Ctrl-D are events for the state machine, Esc Esc at an idle
prompt opens /rewind, Shift+Tab cycles the permission mode, `\\`+Enter, Alt-Enter and Ctrl-J insert a newline,
Ctrl-V pastes the clipboard's image and a pasted image file path (a dropped file) becomes `[Image #N]`.
"""

from __future__ import annotations

from typing import Any

from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

MENU_PICKS = {"1": "once", "2": "always", "3": "note", "y": "once", "Y": "once", "a": "always", "A": "always",
              "n": "deny", "N": "deny"}


def repl_key_bindings(repl: Any) -> KeyBindings:
    kb = KeyBindings()
    menu = Condition(lambda: repl.asking_kind() == "menu")
    text_ask = Condition(lambda: repl.asking_kind() == "text")
    free = Condition(lambda: repl.asking_kind() is None)
    busy = Condition(lambda: repl.is_busy())
    idle = Condition(lambda: not repl.is_busy())
    _menu_keys(kb, repl, menu)
    _text_keys(kb, repl, text_ask)
    _editing_keys(kb, repl, free, busy, idle)
    _thinking_key(kb, repl, free)
    _control_keys(kb, repl, free)
    return kb


def _menu_keys(kb: KeyBindings, repl: Any, menu: Condition) -> None:
    """The permission menu: digits and letters pick, arrows move, Enter takes the selection."""
    for key, value in MENU_PICKS.items():
        kb.add(key, filter=menu)(lambda event, v=value: repl.answer(v))

    @kb.add("up", filter=menu)
    @kb.add("k", filter=menu)
    def _up(event: Any) -> None:
        repl.move_selection(-1)

    @kb.add("down", filter=menu)
    @kb.add("j", filter=menu)
    @kb.add("tab", filter=menu)
    def _down(event: Any) -> None:
        repl.move_selection(1)

    @kb.add("enter", filter=menu)
    def _menu_enter(event: Any) -> None:
        repl.answer(repl.selected_choice())

    @kb.add("escape", filter=menu, eager=True)
    @kb.add("c-c", filter=menu)
    @kb.add("c-d", filter=menu)
    def _menu_refuse(event: Any) -> None:
        repl.answer("deny")

    @kb.add(Keys.Any, filter=menu)
    @kb.add(Keys.BracketedPaste, filter=menu)
    def _menu_ignore(event: Any) -> None:  # a stray key (or paste) never answers a question by accident
        pass


def _text_keys(kb: KeyBindings, repl: Any, text_ask: Condition) -> None:
    """A line asked for (a note, a number, an MCP form field)."""

    @kb.add("enter", filter=text_ask)
    def _text_enter(event: Any) -> None:
        repl.answer(event.current_buffer.text)

    @kb.add("escape", filter=text_ask, eager=True)
    @kb.add("c-c", filter=text_ask)
    @kb.add("c-d", filter=text_ask)
    def _text_cancel(event: Any) -> None:
        repl.answer(None)


def _editing_keys(kb: KeyBindings, repl: Any, free: Condition, busy: Condition, idle: Condition) -> None:
    """The input box: newlines, Enter, Esc, Esc Esc, Shift+Tab."""

    @kb.add("escape", "enter", filter=free)
    @kb.add("c-j", filter=free)
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("enter", filter=free)
    def _enter(event: Any) -> None:
        buf = event.current_buffer
        state = buf.complete_state
        if state is not None and state.current_completion is not None:
            buf.apply_completion(state.current_completion)  # Enter in the completion menu takes the choice
            return
        if buf.document.text_before_cursor.endswith("\\") and not buf.document.text_after_cursor:
            buf.delete_before_cursor(1)  # `\` then Enter: a newline, as in Claude Code
            buf.insert_text("\n")
            return
        repl.submit_buffer(buf)

    @kb.add("escape", filter=free & busy)
    def _esc(event: Any) -> None:
        repl.on_escape()

    @kb.add("escape", "escape", filter=free & idle)
    def _rewind(event: Any) -> None:  # Esc Esc at the prompt: /rewind, as in Claude Code
        repl.submit_text("/rewind")

    @kb.add("s-tab", filter=free)
    def _cycle(event: Any) -> None:
        repl.cycle_mode()
        event.app.invalidate()


def _control_keys(kb: KeyBindings, repl: Any, free: Condition) -> None:
    """Ctrl-C, Ctrl-D, Ctrl-O and pasting, at the input box."""

    @kb.add("c-c", filter=free)
    def _ctrl_c(event: Any) -> None:
        repl.on_ctrl_c()

    @kb.add("c-d", filter=free)
    def _ctrl_d(event: Any) -> None:
        buf = event.current_buffer
        if buf.text and not repl.is_busy():
            buf.delete(1)  # the usual meaning of Ctrl-D in a line with text
            return
        repl.on_ctrl_d()

    @kb.add("c-o", filter=free)
    def _expand(event: Any) -> None:  # Ctrl-O: the whole transcript, expanded (Claude Code's key)
        repl.show_transcript()

    @kb.add("c-v", filter=free)
    def _paste_image(event: Any) -> None:  # Ctrl-V: an image from the clipboard (text paste is the terminal's)
        repl.paste_image(event.current_buffer)

    @kb.add(Keys.BracketedPaste, filter=free)
    def _paste(event: Any) -> None:  # a dropped image file arrives as its pasted path: `[Image #N]`
        repl.paste_text(event.current_buffer, event.data)


def _thinking_key(kb: KeyBindings, repl: Any, free: Any) -> None:
    @kb.add("escape", "t", filter=free)
    def _thinking(event: Any) -> None:  # Alt+T (Meta+T): thinking on/off for the session, Claude Code's key
        repl.toggle_thinking()
        event.app.invalidate()
