"""The REPL in-process: prompt-toolkit pipe input, a dummy prompt output, rich rendering into a buffer,
and a scripted model through the deps seam."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions
from agent.loop.query import INTERRUPTED_NOTE
from agent.model.scripted import ScriptedModel, reply, tool_call
from agent.repl.render import Renderer, diff_lines, make_console
from agent.repl.session import Repl, history_path
from services.config import Settings
from services.events import AssistantEvent, NoticeEvent, TextDeltaEvent, ToolEndEvent, ToolStartEvent
from services.messages import assistant_message, text_block
from services.model_types import ModelResponse, TextDelta
from services.session import list_sessions, load_transcript
from tools.base import Tool, ToolContext, ToolOutput
from tools.permissions import REJECT_MESSAGE


class WriteTool(Tool):
    """A minimal write tool (not read-only, so the gate asks)."""

    name = "Write"
    description = "Write a file."
    input_schema = {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    }

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(input["file_path"])
        path.write_text(input["content"])
        return ToolOutput(f"wrote {path}", summary=f"{len(input['content'].splitlines())} lines")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ALLOW_WRITE", raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


def make_repl(project: Path, model: Any, inp: Any, **kw: Any) -> tuple[Repl, io.StringIO]:
    opts = AppOptions(cwd=project, settings=Settings(model="claude-sonnet-4-5"), interactive=True, trusted=True)
    buf = io.StringIO()
    console = make_console(file=buf, width=100, force_terminal=False, color_system=None)
    repl = Repl(opts, deps=QueryDeps(call_model=model), input=inp, output=DummyOutput(), console=console, **kw)
    return repl, buf


def user_texts(request: Any) -> list[str]:
    out = []
    for m in request.messages:
        if m["role"] == "user":
            for b in m["content"]:
                if b.get("type") == "text":
                    out.append(b["text"])
    return out


async def wait_for(cond, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# -- turns, commands, input ------------------------------------------------------------------------
async def test_prompt_runs_a_turn_and_ctrl_d_exits_0(project: Path) -> None:
    model = ScriptedModel([reply("Hello from the model.")])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("say hello\r")
        inp.send_text("\x04")
        code = await repl.run()
    assert code == 0
    model.assert_done()
    assert user_texts(model.requests[0])[-1] == "say hello"
    out = buf.getvalue()
    assert out.count("Hello from the model.") == 1  # streamed once, never re-printed
    # the session is on disk
    assert list_sessions(project)[0].stem == repl.engine.session_id


async def test_slash_commands_never_reach_the_model(project: Path) -> None:
    model = ScriptedModel([])  # any model call fails the test
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("/help\r/cost\r/context\r/nope\r/srv:prompt x\r/status\r/exit\r")
        code = await repl.run()
    assert code == 0
    assert model.requests == []
    out = buf.getvalue()
    assert "Commands:" in out and "/compact" in out
    assert "Estimated cost: $0.0000" in out
    assert "ctx ~" in out
    assert "Unknown command: /nope" in out
    assert "Unknown command: /srv:prompt" in out
    assert f"Session: {repl.engine.session_id}" in out


async def test_quit_alias_exits(project: Path) -> None:
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, ScriptedModel([]), inp)
        inp.send_text("/quit\r")
        assert await repl.run() == 0


async def test_alt_enter_inserts_a_newline(project: Path) -> None:
    model = ScriptedModel([reply("ok")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("line one\x1b\rline two\r\x04")
        assert await repl.run() == 0
    assert user_texts(model.requests[0])[-1] == "line one\nline two"


async def test_bracketed_paste_stays_one_message(project: Path) -> None:
    model = ScriptedModel([reply("ok")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("\x1b[200~first line\nsecond line\nthird\x1b[201~\r\x04")
        assert await repl.run() == 0
    assert user_texts(model.requests[0])[-1] == "first line\nsecond line\nthird"


async def test_history_persists_per_project(project: Path) -> None:
    model = ScriptedModel([reply("one"), reply("two")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("remember this prompt\r\x04")
        assert await repl.run() == 0
    path = history_path(project)
    assert path.is_file() and "remember this prompt" in path.read_text()
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("\x1b[A\r\x04")  # Up recalls the previous session's prompt
        assert await repl.run() == 0
    assert user_texts(model.requests[1])[-1] == "remember this prompt"


async def test_ctrl_c_twice_at_empty_prompt_exits_130(project: Path) -> None:
    times = iter([100.0, 100.4])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, ScriptedModel([]), inp, clock=lambda: next(times))
        inp.send_text("\x03\x03")
        assert await repl.run() == 130
    assert buf.getvalue().count("Press Ctrl-C again to exit") == 1


async def test_ctrl_c_presses_far_apart_do_not_exit(project: Path) -> None:
    times = iter([100.0, 102.5])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, ScriptedModel([]), inp, clock=lambda: next(times))
        inp.send_text("\x03\x03\x04")
        assert await repl.run() == 0
    assert buf.getvalue().count("Press Ctrl-C again to exit") == 2


async def test_ctrl_c_clears_a_non_empty_line(project: Path) -> None:
    model = ScriptedModel([])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("half a thought\x03\x04")
        assert await repl.run() == 0
    assert model.requests == []
    assert "Press Ctrl-C again" not in buf.getvalue()


# -- interrupts ------------------------------------------------------------------------------------
class HangingModel:
    """Streams one delta, then waits forever (until the stream is cancelled)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False
        self.requests: list[Any] = []

    def __call__(self, request: Any):
        self.requests.append(request)
        return self._stream()

    async def _stream(self):
        yield TextDelta("Thinking about it")
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        yield ModelResponse(assistant_message([text_block("never")]), "end_turn", {})


@pytest.mark.parametrize("via_signal", [False, True])
async def test_ctrl_c_during_a_turn_interrupts_and_returns_to_the_prompt(project: Path, via_signal: bool) -> None:
    model = HangingModel()
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("long task\r")
        run = asyncio.ensure_future(repl.run())
        await asyncio.wait_for(model.started.wait(), 10)
        await wait_for(lambda: repl._turn_task is not None)
        if via_signal:  # kill -INT from outside: the REPL's own handler, same as the key
            os.kill(os.getpid(), signal.SIGINT)
        else:
            inp.send_text("\x03")  # the key: the application reads it in raw mode
        await wait_for(lambda: repl.state.phase.value in ("interrupted", "idle"))
        await wait_for(lambda: "Interrupted" in buf.getvalue())
        assert not run.done()  # back at the prompt, not exited
        inp.send_text("\x04")
        code = await asyncio.wait_for(run, 10)
    assert code == 0
    assert model.cancelled
    msgs = repl.engine.messages
    assert msgs[-2]["role"] == "assistant" and msgs[-2]["content"][0]["text"] == "Thinking about it"
    assert msgs[-1]["content"][0]["text"] == INTERRUPTED_NOTE
    # the interruption is in the transcript too
    loaded = load_transcript(repl.engine.paths.transcript)
    assert loaded.messages[-1]["content"][0]["text"] == INTERRUPTED_NOTE


async def test_interrupt_while_a_tool_runs_keeps_pairing(project: Path) -> None:
    started = asyncio.Event()

    class SlowTool(Tool):
        name = "Slow"
        input_schema = {"type": "object", "properties": {}}

        def is_read_only(self, input: dict[str, Any]) -> bool:
            return True

        async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            started.set()
            await asyncio.sleep(3600)
            return ToolOutput("never")

    model = ScriptedModel([reply("Running it.", tool_call("Slow", {}, id="toolu_slow"))])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        repl.engine.tools.append(SlowTool())
        inp.send_text("go\r")
        run = asyncio.ensure_future(repl.run())
        await asyncio.wait_for(started.wait(), 10)
        inp.send_text("\x1b")  # Esc interrupts a running turn, as in Claude Code
        await wait_for(lambda: "Interrupted" in buf.getvalue())
        inp.send_text("\x04")
        assert await asyncio.wait_for(run, 10) == 0
    last = repl.engine.messages[-1]
    assert last["role"] == "user"
    results = [b for b in last["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_slow"] and results[0]["is_error"]


# -- permission questions --------------------------------------------------------------------------
def write_script(path: str, content: str, then: list) -> ScriptedModel:
    return ScriptedModel([reply("Writing.", tool_call("Write", {"file_path": path, "content": content})), *then])


async def _answer(project: Path, model: ScriptedModel, key: str) -> tuple[Repl, str]:
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        repl.engine.tools.append(WriteTool())
        inp.send_text("write the file\r")
        run = asyncio.ensure_future(repl.run())
        await wait_for(lambda: "Allow?" in buf.getvalue() or "Permission: Write" in buf.getvalue())
        inp.send_text(key)
        await wait_for(lambda: repl._turn_task is None and len(model.steps) == 0)
        inp.send_text("\x04")
        assert await asyncio.wait_for(run, 10) == 0
    return repl, buf.getvalue()


async def test_permission_yes_runs_the_tool_and_shows_the_diff(project: Path) -> None:
    (project / "notes.txt").write_text("old line\n")
    model = write_script("notes.txt", "new line\n", [reply("Done.")])
    repl, out = await _answer(project, model, "y")
    assert (project / "notes.txt").read_text() == "new line\n"
    assert "Permission: Write" in out
    assert "-old line" in out and "+new line" in out
    assert out.count("+new line") == 1  # shown in the question, not again after the tool ran
    assert "● Write notes.txt (1 lines)" in out
    model.assert_done()
    assert repl.engine.gate.session_rules == []


async def test_permission_always_adds_a_session_rule(project: Path) -> None:
    model = write_script("a.txt", "x", [reply("Done.")])
    repl, _ = await _answer(project, model, "a")
    assert (project / "a.txt").read_text() == "x"
    assert repl.engine.gate.session_rules == [("Write", "a.txt")]
    saved = project / ".claude" / "settings.local.json"  # where Claude Code keeps it: the next session's too
    assert json.loads(saved.read_text()) == {"permissions": {"allow": ["Write(a.txt)"]}}


async def test_permission_no_denies_and_ends_the_turn(project: Path) -> None:
    model = write_script("b.txt", "x", [])  # no second model call: a denial ends the turn
    repl, out = await _answer(project, model, "n")
    assert not (project / "b.txt").exists()
    assert "Denied." in out
    results = [b for b in repl.engine.messages[-1]["content"] if b.get("type") == "tool_result"]
    assert results[0]["is_error"] and results[0]["content"] == REJECT_MESSAGE
    model.assert_done()


async def test_permission_arrow_down_then_enter_picks_always(project: Path) -> None:
    model = write_script("c.txt", "x", [reply("Done.")])
    repl, _ = await _answer(project, model, "\x1b[B\r")
    assert (project / "c.txt").read_text() == "x"
    assert repl.engine.gate.session_rules == [("Write", "c.txt")]


async def test_escapes_in_a_path_diff_and_summary_are_shown_not_obeyed(project: Path) -> None:
    # A Write whose path and content carry ESC[2J (clear screen): the question's diff headers and body,
    # the tool line and its summary all print the written-out form, never a raw ESC.
    name = "x\x1b[2J" + "a" * 100 + ".txt"
    model = write_script(name, "line\x1b]0;pwned\x07\n", [reply("Done.")])
    repl, out = await _answer(project, model, "\r")
    assert "\x1b" not in out and "\x07" not in out
    flat = "".join(out.split())  # the console folds long words
    assert "b/x\\x1b[2J" + "a" * 100 + ".txt" in flat
    assert "+line\\x1b]0;pwned\\x07" in flat


# -- sessions --------------------------------------------------------------------------------------
async def test_clear_starts_a_new_session(project: Path) -> None:
    model = ScriptedModel([reply("first"), reply("second")])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("one\r")
        run = asyncio.ensure_future(repl.run())
        await wait_for(lambda: len(repl.engine.messages) == 2)
        first_id = repl.engine.session_id
        inp.send_text("/clear\rtwo\r\x04")
        assert await asyncio.wait_for(run, 10) == 0
    assert repl.engine.session_id != first_id
    assert user_texts(model.requests[1]) == ["two"]  # nothing of the old conversation
    assert "Started a new conversation" in buf.getvalue()
    assert {p.stem for p in list_sessions(project)} == {first_id, repl.engine.session_id}


async def test_resume_picks_an_earlier_session(project: Path) -> None:
    model = ScriptedModel([reply("earlier answer"), reply("later answer")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("earlier question\r\x04")
        assert await repl.run() == 0
    old_id = repl.engine.session_id
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("/resume\r")
        run = asyncio.ensure_future(repl.run())
        await wait_for(lambda: "Number" in buf.getvalue() or "Resume which session?" in buf.getvalue())
        inp.send_text("1\r")
        await wait_for(lambda: "Resumed session" in buf.getvalue())
        inp.send_text("and now?\r\x04")
        assert await asyncio.wait_for(run, 10) == 0
    assert repl.engine.session_id == old_id
    assert user_texts(model.requests[1]) == ["earlier question", "and now?"]
    assert "earlier question" in buf.getvalue()  # the pick list shows the first prompt


async def test_continue_resumes_the_newest_session(project: Path) -> None:
    model = ScriptedModel([reply("a1"), reply("a2")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, model, inp)
        inp.send_text("q1\r\x04")
        assert await repl.run() == 0
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("q2\r\x04")
        assert await repl.run(continue_=True) == 0
    assert user_texts(model.requests[1]) == ["q1", "q2"]
    assert "Resumed session" in buf.getvalue()


async def test_resume_unknown_id_fails_cleanly(project: Path) -> None:
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, ScriptedModel([]), inp)
        assert await repl.run(resume="nope") == 1
    assert "no session 'nope'" in buf.getvalue()


# -- rendering -------------------------------------------------------------------------------------
def plain_renderer(tmp_path: Path | None = None, tools: dict | None = None) -> tuple[Renderer, io.StringIO]:
    buf = io.StringIO()
    console = make_console(file=buf, width=100, force_terminal=False, color_system=None)
    return Renderer(console, tools, tmp_path), buf


def test_plain_rendering_streams_text_once() -> None:
    r, buf = plain_renderer()
    for chunk in ("Hello ", "**world**", "\n\nSecond para."):
        r.event(TextDeltaEvent(chunk))
    r.event(AssistantEvent(assistant_message([text_block("Hello **world**\n\nSecond para.")])))
    assert buf.getvalue() == "Hello **world**\n\nSecond para.\n"


def test_live_rendering_ends_with_the_markdown_once() -> None:
    buf = io.StringIO()
    console = make_console(file=buf, width=80, force_terminal=True, color_system=None)
    r = Renderer(console)
    text = "First paragraph.\n\n```python\nx = 1\n\ny = 2\n```\n\nLast words."
    for i in range(0, len(text), 5):
        r.event(TextDeltaEvent(text[i : i + 5]))
    r.event(AssistantEvent(assistant_message([text_block(text)])))
    out = buf.getvalue()
    assert "First paragraph." in out and "Last words." in out and "x = 1" in out


def test_tool_lines_and_errors() -> None:
    r, buf = plain_renderer()
    r.event(ToolStartEvent("t1", "Read", {"file_path": "src/app.py"}))
    r.event(ToolEndEvent("t1", "Read", True, "120 lines", 0.01))
    r.event(ToolStartEvent("t2", "Bash", {"command": "pytest -q"}))
    r.event(ToolEndEvent("t2", "Bash", False, "exit 1, 2.3 s", 2.3, "FAILED tests/test_x.py\nmore"))
    r.event(NoticeEvent("spilled", "Spilled a 60,000-char result to disk"))
    out = buf.getvalue()
    assert "● Read src/app.py (120 lines)" in out
    assert "✗ Bash pytest -q: FAILED tests/test_x.py" in out
    assert "more" not in out
    assert "· Spilled a 60,000-char result to disk" in out


def test_edit_diff_uses_the_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    lines = diff_lines("Edit", {"file_path": "a.py", "old_string": "two", "new_string": "TWO"}, tmp_path)
    assert lines is not None
    assert "-two" in lines and "+TWO" in lines and " one" in lines
    assert diff_lines("Read", {"file_path": "a.py"}, tmp_path) is None
    new = diff_lines("Write", {"file_path": "new.py", "content": "hi\n"}, tmp_path)
    assert new is not None and "+hi" in new


async def test_type_ahead_is_queued_shown_edited_with_esc_and_sent_in_order(project: Path) -> None:
    """The input box stays live during a turn: Enter queues the line (shown under the input), Esc takes the
    queue back into the input box to edit, and the queue is sent, in order, when the turn ends."""
    release = asyncio.Event()

    class GatedModel:
        def __init__(self) -> None:
            self.requests: list[Any] = []

        def __call__(self, request: Any):
            self.requests.append(request)
            return self._stream(len(self.requests))

        async def _stream(self, n: int):
            if n == 1:
                await release.wait()
            yield TextDelta(f"answer {n}")
            yield ModelResponse(assistant_message([text_block(f"answer {n}")]), "end_turn", {})

    model = GatedModel()
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("first\r")
        run = asyncio.ensure_future(repl.run())
        await wait_for(lambda: len(model.requests) == 1)
        inp.send_text("second\r")
        await wait_for(lambda: repl.queued == ["second"])
        assert "queued: second" in "".join(t for _, t in repl.toolbar())
        inp.send_text("\x1b")  # Esc with a queue: back into the input box, the turn goes on
        await wait_for(lambda: repl.session.default_buffer.text == "second")
        assert repl.queued == [] and repl.state.phase.value == "running"
        inp.send_text(" edited\rthird\r")
        await wait_for(lambda: repl.queued == ["second edited", "third"])
        inp.send_text("\x04")  # Ctrl-D during the turn: exit once the queue is sent
        await wait_for(lambda: repl.state.exit_after_turn == 0)
        release.set()
        assert await asyncio.wait_for(run, 10) == 0
    assert [user_texts(r)[-1] for r in model.requests] == ["first", "second edited", "third"]
    out = buf.getvalue()
    assert out.index("answer 1") < out.index("> second edited") < out.index("answer 2") < out.index("answer 3")
