"""The REPL's turn handling as one explicit state machine: idle, running, asking, interrupted.

The prompt stays on screen for the whole session (one prompt-toolkit application on one asyncio loop); keys,
signals, the running turn and the permission questions all become events here, and `step` says what the
REPL must do about each one. It is a pure function of (state, event): the REPL applies the effects, and the
tests can walk every transition without a terminal.

  idle        --submit-->     running      (start the turn)
  running     --submit-->     running      (queued: sent when the turn ends, in order)
  running     --ctrl-c/esc--> interrupted  (abort: the tool is killed, the turn ends with what it has)
  interrupted --ctrl-c-->     interrupted  (cancel the task outright)
  running     --ask-->        asking       (a permission question or a line of input)
  asking      --answered-->   the phase it came from
  running     --turn ended--> running with the next queued line, or idle (or exit, after Ctrl-D, once
                              the queue is empty)
  idle        --ctrl-d-->     exit 0;       idle --ctrl-c twice within 1 s--> exit 130
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

DOUBLE_PRESS_WINDOW = 1.0  # seconds: a second Ctrl-C at an empty prompt within this exits
EXIT_OK, EXIT_INTERRUPTED = 0, 130


class Phase(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    ASKING = "asking"
    INTERRUPTED = "interrupted"


BUSY = (Phase.RUNNING, Phase.ASKING, Phase.INTERRUPTED)


@dataclass(frozen=True)
class ReplState:
    phase: Phase = Phase.IDLE
    queued: tuple[str, ...] = ()  # lines submitted while busy, sent in order when the turn ends
    exit_after_turn: int | None = None  # exit code to leave with once the turn ends (Ctrl-D, SIGTERM)
    ctrl_c_at: float | None = None  # when Ctrl-C was last pressed at an empty idle prompt
    asked_from: Phase = Phase.RUNNING  # the phase a question returns to


# -- events --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Submit:
    text: str


@dataclass(frozen=True)
class CtrlC:
    now: float
    input_empty: bool = True


@dataclass(frozen=True)
class Escape:
    pass


@dataclass(frozen=True)
class CtrlD:
    input_empty: bool = True


@dataclass(frozen=True)
class Terminate:  # SIGTERM / SIGHUP
    pass


@dataclass(frozen=True)
class AskStarted:
    pass


@dataclass(frozen=True)
class AskEnded:
    pass


@dataclass(frozen=True)
class TurnEnded:
    exit_code: int | None = None  # a command such as /exit asked to leave


@dataclass(frozen=True)
class Resize:
    pass


Event = Submit | CtrlC | Escape | CtrlD | Terminate | AskStarted | AskEnded | TurnEnded | Resize


# -- effects -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StartTurn:
    text: str


@dataclass(frozen=True)
class Abort:  # ask the running turn to stop (kills the tool, keeps the transcript valid)
    pass


@dataclass(frozen=True)
class Cancel:  # cancel the turn's task outright (a second Ctrl-C while the abort is still under way)
    pass


@dataclass(frozen=True)
class Exit:
    code: int


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class ClearInput:
    pass


@dataclass(frozen=True)
class EditQueue:  # put the queued lines back into the input box, to edit them
    text: str


@dataclass(frozen=True)
class Redraw:
    pass


Effect = StartTurn | Abort | Cancel | Exit | Say | ClearInput | EditQueue | Redraw


@dataclass
class Transition:
    state: ReplState
    effects: list[Effect] = field(default_factory=list)


def step(state: ReplState, event: Event) -> Transition:
    """The next state and what to do, for one event. Pure: no I/O, no clock (the time comes in the event)."""
    for kind in type(event).__mro__:  # one handler per event kind, below
        handler = _STEPS.get(kind)
        if handler is not None:
            return handler(state, event)
    raise TypeError(f"not a REPL event: {event!r}")


def _on_submit(state: ReplState, event: Submit) -> Transition:
    phase = state.phase
    text = event.text.strip()
    if not text:
        return Transition(state)
    if phase is Phase.IDLE:
        return Transition(replace(state, phase=Phase.RUNNING, ctrl_c_at=None), [StartTurn(text)])
    return Transition(replace(state, queued=(*state.queued, text)), [Redraw()])


def _on_ctrl_c(state: ReplState, event: CtrlC) -> Transition:
    phase = state.phase
    if phase is Phase.IDLE:
        if not event.input_empty:
            return Transition(replace(state, ctrl_c_at=None), [ClearInput()])
        last = state.ctrl_c_at
        if last is not None and 0 <= event.now - last <= DOUBLE_PRESS_WINDOW:
            return Transition(state, [Exit(EXIT_INTERRUPTED)])
        return Transition(replace(state, ctrl_c_at=event.now), [Say("Press Ctrl-C again to exit")])
    if phase is Phase.RUNNING:
        return Transition(replace(state, phase=Phase.INTERRUPTED), [Abort()])
    if phase is Phase.INTERRUPTED:
        return Transition(state, [Cancel()])
    return Transition(state)  # asking: the question's own keys answer Ctrl-C (a refusal)


def _on_escape(state: ReplState, event: Escape) -> Transition:
    phase = state.phase
    if phase is Phase.RUNNING:
        if state.queued:  # Esc with lines queued: take them back to edit, the turn goes on
            return Transition(replace(state, queued=()), [EditQueue("\n".join(state.queued))])
        return Transition(replace(state, phase=Phase.INTERRUPTED), [Abort()])
    return Transition(state)


def _on_ctrl_d(state: ReplState, event: CtrlD) -> Transition:
    phase = state.phase
    if phase is Phase.IDLE:
        return Transition(state, [Exit(EXIT_OK)] if event.input_empty else [])
    if state.exit_after_turn is None:
        return Transition(replace(state, exit_after_turn=EXIT_OK), [Say("Ctrl-D: exiting when this turn ends")])
    return Transition(state)


def _on_terminate(state: ReplState, event: Terminate) -> Transition:
    phase = state.phase
    if phase is Phase.IDLE:
        return Transition(state, [Exit(EXIT_INTERRUPTED)])
    effects: list[Effect] = [Abort()] if phase in (Phase.RUNNING, Phase.ASKING) else []
    return Transition(replace(state, phase=Phase.INTERRUPTED, queued=(), exit_after_turn=EXIT_INTERRUPTED),
                      effects)


def _on_ask_started(state: ReplState, event: AskStarted) -> Transition:
    phase = state.phase
    if phase in (Phase.RUNNING, Phase.INTERRUPTED):
        return Transition(replace(state, phase=Phase.ASKING, asked_from=phase), [Redraw()])
    return Transition(state)


def _on_ask_ended(state: ReplState, event: AskEnded) -> Transition:
    phase = state.phase
    if phase is Phase.ASKING:
        return Transition(replace(state, phase=state.asked_from), [Redraw()])
    return Transition(state)


def _on_turn_ended(state: ReplState, event: TurnEnded) -> Transition:
    phase = state.phase
    if phase is Phase.ASKING:  # a question outlived its turn (an MCP server asking): it returns to after
        after = step(replace(state, phase=state.asked_from), event)
        return Transition(replace(after.state, phase=Phase.ASKING, asked_from=after.state.phase), after.effects)
    if phase is Phase.IDLE:
        return Transition(state)
    if event.exit_code is not None:
        return Transition(replace(state, phase=Phase.IDLE, queued=()), [Exit(event.exit_code)])
    if state.queued:  # lines typed before a Ctrl-D are still sent (SIGTERM empties the queue)
        first, *rest = state.queued
        return Transition(replace(state, phase=Phase.RUNNING, queued=tuple(rest)), [StartTurn(first)])
    if state.exit_after_turn is not None:
        return Transition(replace(state, phase=Phase.IDLE), [Exit(state.exit_after_turn)])
    return Transition(replace(state, phase=Phase.IDLE), [Redraw()])


def _on_resize(state: ReplState, event: Resize) -> Transition:
    return Transition(state, [Redraw()])


_STEPS: dict[type, Callable[[ReplState, Any], Transition]] = {
    Submit: _on_submit,
    CtrlC: _on_ctrl_c,
    Escape: _on_escape,
    CtrlD: _on_ctrl_d,
    Terminate: _on_terminate,
    AskStarted: _on_ask_started,
    AskEnded: _on_ask_ended,
    TurnEnded: _on_turn_ended,
    Resize: _on_resize,
}
