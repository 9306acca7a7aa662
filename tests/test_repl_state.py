"""The REPL's state machine (agent/repl/state.py): every transition, and properties over random key storms."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.repl.state import (
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
    Redraw,
    ReplState,
    Resize,
    Say,
    StartTurn,
    Submit,
    Terminate,
    TurnEnded,
    step,
)

IDLE, RUNNING, ASKING, INTERRUPTED = Phase.IDLE, Phase.RUNNING, Phase.ASKING, Phase.INTERRUPTED


def at(phase: Phase, **kw) -> ReplState:
    return ReplState(phase=phase, **kw)


def test_submit_starts_a_turn_when_idle_and_queues_when_busy() -> None:
    t = step(ReplState(), Submit("  hello  "))
    assert t.state.phase is RUNNING and t.effects == [StartTurn("hello")]
    assert step(ReplState(), Submit("   ")).effects == []  # an empty line does nothing
    for phase in (RUNNING, ASKING, INTERRUPTED):
        t = step(at(phase, queued=("a",)), Submit("b"))
        assert t.state.queued == ("a", "b") and t.state.phase is phase
        assert not any(isinstance(e, StartTurn) for e in t.effects)


def test_turn_end_sends_the_queue_in_order_then_goes_idle() -> None:
    s = at(RUNNING, queued=("a", "b"))
    t = step(s, TurnEnded())
    assert t.effects == [StartTurn("a")] and t.state.queued == ("b",) and t.state.phase is RUNNING
    t = step(t.state, TurnEnded())
    assert t.effects == [StartTurn("b")] and t.state.queued == ()
    t = step(t.state, TurnEnded())
    assert t.state.phase is IDLE and t.effects == [Redraw()]
    # an interrupted turn ends the same way
    assert step(at(INTERRUPTED, queued=("x",)), TurnEnded()).effects == [StartTurn("x")]
    assert step(ReplState(), TurnEnded()).effects == []  # a stray end changes nothing


def test_ctrl_c_clears_then_warns_then_exits_within_the_window() -> None:
    t = step(ReplState(), CtrlC(10.0, input_empty=False))
    assert t.effects == [ClearInput()] and t.state.ctrl_c_at is None
    t = step(ReplState(), CtrlC(10.0))
    assert t.effects == [Say("Press Ctrl-C again to exit")] and t.state.ctrl_c_at == 10.0
    assert step(t.state, CtrlC(10.9)).effects == [Exit(130)]
    far = step(t.state, CtrlC(12.0))  # too late: warns again
    assert far.effects == [Say("Press Ctrl-C again to exit")] and far.state.ctrl_c_at == 12.0
    # a submitted line in between forgets the first press
    s = step(t.state, Submit("x")).state
    assert s.ctrl_c_at is None


def test_ctrl_c_and_esc_interrupt_a_turn_a_second_ctrl_c_cancels() -> None:
    t = step(at(RUNNING), CtrlC(1.0, input_empty=False))  # text in the box does not stop the interrupt
    assert t.state.phase is INTERRUPTED and t.effects == [Abort()]
    assert step(t.state, CtrlC(1.1)).effects == [Cancel()]
    assert step(t.state, Escape()).effects == []  # Esc again: already interrupting
    t = step(at(RUNNING), Escape())
    assert t.state.phase is INTERRUPTED and t.effects == [Abort()]
    assert step(at(ASKING), CtrlC(1.0)).effects == []  # the question's keys answer it


def test_esc_with_a_queue_takes_it_back_to_edit_and_the_turn_goes_on() -> None:
    t = step(at(RUNNING, queued=("one", "two")), Escape())
    assert t.state.phase is RUNNING and t.state.queued == ()
    assert t.effects == [EditQueue("one\ntwo")]
    assert step(ReplState(), Escape()).effects == []  # idle: nothing (Esc Esc is /rewind, a key of its own)


def test_ctrl_d_exits_when_idle_and_after_the_queue_when_busy() -> None:
    assert step(ReplState(), CtrlD()).effects == [Exit(0)]
    assert step(ReplState(), CtrlD(input_empty=False)).effects == []
    t = step(at(RUNNING, queued=("later",)), CtrlD())
    assert t.state.exit_after_turn == 0 and t.effects == [Say("Ctrl-D: exiting when this turn ends")]
    assert step(t.state, CtrlD()).effects == []  # said once
    t = step(t.state, TurnEnded())
    assert t.effects == [StartTurn("later")]  # typed before the Ctrl-D: still sent
    assert step(t.state, TurnEnded()).effects == [Exit(0)]


def test_a_command_asking_to_exit_wins_over_the_queue() -> None:
    t = step(at(RUNNING, queued=("more",)), TurnEnded(exit_code=3))
    assert t.effects == [Exit(3)]


def test_terminate_aborts_drops_the_queue_and_exits_130_after_the_turn() -> None:
    assert step(ReplState(), Terminate()).effects == [Exit(130)]
    for phase in (RUNNING, ASKING):
        t = step(at(phase, queued=("x",)), Terminate())
        assert t.effects == [Abort()] and t.state.queued == () and t.state.phase is INTERRUPTED
        assert step(t.state, TurnEnded()).effects == [Exit(130)]
    assert step(at(INTERRUPTED), Terminate()).effects == []


def test_asking_returns_to_the_phase_it_came_from() -> None:
    t = step(at(RUNNING), AskStarted())
    assert t.state.phase is ASKING
    assert step(t.state, AskEnded()).state.phase is RUNNING
    t = step(at(INTERRUPTED), AskStarted())
    assert step(t.state, AskEnded()).state.phase is INTERRUPTED
    assert step(ReplState(), AskStarted()).state.phase is IDLE  # a question outside a turn (an MCP form)
    assert step(ReplState(), AskEnded()).state.phase is IDLE


def test_resize_only_redraws() -> None:
    for phase in Phase:
        s = at(phase, queued=("q",))
        t = step(s, Resize())
        assert t.state == s and t.effects == [Redraw()]


# -- properties --------------------------------------------------------------------------------------
events = st.one_of(
    st.builds(Submit, st.sampled_from(["a", "b", "c", "", "  "])),
    st.builds(CtrlC, st.floats(0, 100), st.booleans()),
    st.just(Escape()),
    st.builds(CtrlD, st.booleans()),
    st.just(AskStarted()),
    st.just(AskEnded()),
    st.just(TurnEnded()),
    st.just(Resize()),
)


@settings(max_examples=400)
@given(st.lists(events, max_size=60))
def test_no_key_storm_starts_two_turns_at_once_or_loses_a_line(seq) -> None:
    """At most one turn runs at a time; every non-empty submitted line is started once, in order, or is
    still queued, or was handed back to the input box by Esc (never silently dropped)."""
    s = ReplState()
    running = False
    submitted: list[str] = []
    started: list[str] = []
    handed_back: list[str] = []
    exited = False
    for ev in seq:
        if exited:
            break
        if isinstance(ev, TurnEnded) and not running:
            continue  # only a running turn can end
        if isinstance(ev, Submit) and ev.text.strip():
            submitted.append(ev.text.strip())
        t = step(s, ev)
        if isinstance(ev, TurnEnded):
            running = False
        for e in t.effects:
            if isinstance(e, StartTurn):
                assert not running, "a turn started while another runs"
                running = True
                started.append(e.text)
            elif isinstance(e, EditQueue):
                handed_back += e.text.split("\n")
            elif isinstance(e, Exit):
                exited = True
        s = t.state
        phase = s.asked_from if s.phase is ASKING else s.phase  # a question may outlive its turn
        assert (phase is IDLE) == (not running) or exited
    if not exited:
        assert sorted(started + list(s.queued) + handed_back) == sorted(submitted)
