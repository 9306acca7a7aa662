"""The REPL end to end in a real pseudo-terminal (pexpect): `python -m agent` with no prompt on a TTY.

Runs against the offline mock model and the fake Anthropic server on loopback. Expect timeouts are
generous and nothing asserts on wall time. `ESC[?2004h` (bracketed paste on) is what prompt-toolkit
writes each time the prompt starts reading, so it is the "prompt is back" signal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.procs import pid_alive as _alive  # noqa: E402

PROMPT_READY = "\x1b[?2004h"
FRAME_END = "\x1b[?25h"  # prompt-toolkit shows the cursor again at the end of each redraw
TIMEOUT = 30

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


class Screen:
    """What a person sees: the child's output fed to a terminal emulator (pyte). The prompt redraws only the
    cells that changed, so text inside the input area, the live area or the toolbar is read off the screen,
    not searched in the byte stream."""

    def __init__(self, rows: int = 40, cols: int = 120):
        import pyte

        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)
        self.seen: set[str] = set()  # every screen line shown so far

    def write(self, data: str) -> None:
        # One frame of prompt-toolkit ends by showing the cursor again: look at the screen after each frame,
        # so a state shown only briefly (a queued line, sent a moment later) is still seen.
        frames = data.split(FRAME_END)
        for i, piece in enumerate(frames):
            self.stream.feed(piece + (FRAME_END if i < len(frames) - 1 else ""))
            self.seen.update(line.rstrip() for line in self.screen.display)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)


def wait_screen(child, text: str, timeout: float = TIMEOUT) -> str:
    """Read output until `text` is on the screen, or was in a frame read during this call; returns the screen.
    (Frames read before the call do not count: a line still being typed must not match a later state.)"""
    screen: Screen = child.screen
    screen.seen = {line.rstrip() for line in screen.screen.display}
    deadline = time.monotonic() + timeout
    while True:
        if any(text in line for line in screen.seen):
            return screen.text()
        if time.monotonic() > deadline:
            raise AssertionError(f"not on screen: {text!r}\n--- screen ---\n{screen.text()}")
        try:
            child.read_nonblocking(4096, timeout=0.1)
        except pexpect.TIMEOUT:
            pass


def read_until(child, done, timeout: float = TIMEOUT) -> str:
    """Read output until `done(screen text)` holds or `timeout` passes; returns the screen. (A state that
    must *not* come, or must go away, has no text to wait for.)"""
    deadline = time.monotonic() + timeout
    while not done(child.screen.text()) and time.monotonic() < deadline:
        try:
            child.read_nonblocking(4096, timeout=0.1)
        except pexpect.TIMEOUT:
            pass
    return child.screen.text()


class _Tee:
    def __init__(self, *files) -> None:
        self.files = files

    def write(self, data: str) -> None:
        for f in self.files:
            f.write(data)

    def flush(self) -> None:
        for f in self.files:
            f.flush()


def spawn(cli, *args: str, with_fake: bool = True, **env: str):
    # The emulated screen answers the cursor-position requests (CPR), as a real terminal does: prompt-toolkit
    # then knows the height and draws the bottom toolbar (the queue, the status line) under the input.
    e = cli.env(with_fake, TERM="xterm-256color", **env)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent", *args],
        cwd=str(cli.cwd),
        env=e,
        encoding="utf-8",
        codec_errors="replace",
        timeout=TIMEOUT,
        dimensions=(40, 120),
    )
    child.screen = Screen()
    child.screen.screen.write_process_input = child.send  # the terminal's replies (CPR) go back as input
    child.logfile_read = _Tee(open(os.environ.get("PTY_LOG", os.devnull), "a"), child.screen)
    child.expect_exact("Ctrl-D exits")
    child.expect_exact(PROMPT_READY)
    return child


def run_line(child, line: str, *expect: str) -> None:
    child.send(line + "\r")
    for text in expect:
        child.expect_exact(text)
    child.expect_exact(PROMPT_READY)


def finish(child) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus if child.exitstatus is not None else -(child.signalstatus or 0)


def test_mock_session_commands_and_exit(cli) -> None:
    child = spawn(cli, "--mock", with_fake=False)
    run_line(child, "echo hello from the pty", "Mock model: the tool returned", "hello from the pty")
    run_line(child, "/help", "Commands:", "/compact")
    run_line(child, "/cost", "Estimated cost: $")
    run_line(child, "/context", "Context")
    run_line(child, "/status", "Session: ")
    run_line(child, "/frobnicate", "Unknown command: /frobnicate")
    run_line(child, "/clear", "Started a new conversation")
    child.send("/exit\r")
    assert finish(child) == 0


def test_ctrl_d_exits_0(cli) -> None:
    child = spawn(cli, "--mock", with_fake=False)
    child.send("\x04")
    assert finish(child) == 0


def test_ctrl_c_twice_at_the_empty_prompt_exits_130(cli) -> None:
    child = spawn(cli, "--mock", with_fake=False)
    child.send("\x03")
    child.expect_exact("Press Ctrl-C again to exit")
    child.expect_exact(PROMPT_READY)
    child.send("\x03")
    assert finish(child) == 130


@pytest.mark.parametrize("key", ["\x03", "\x1b"], ids=["ctrl-c", "esc"])
def test_streamed_text_then_a_key_interrupts_the_stream(cli, fake_anthropic, key: str) -> None:
    fake_anthropic.text("The answer is forty-two.")
    gate = threading.Event()
    fake_anthropic.reply("Working on a very long answer that never ends", gate=gate)
    fake_anthropic.text("Fine, stopping.")
    child = spawn(cli)
    try:
        run_line(child, "what is the answer?", "The answer is forty-two.")
        child.send("write a long essay\r")
        child.expect_exact("Work")  # the first delta arrived; the server holds the rest
        child.send(key)
        child.expect_exact("Interrupted")
        child.expect_exact(PROMPT_READY)
        run_line(child, "ok, stop", "Fine, stopping.")
        child.send("/exit\r")
        assert finish(child) == 0
    finally:
        gate.set()
    last = fake_anthropic.requests[-1].messages
    texts = [b.get("text", "") for m in last for b in (m["content"] if isinstance(m["content"], list) else [])]
    assert "what is the answer?" in texts and "[Request interrupted by user]" in " ".join(texts)
    roles = [m["role"] for m in last]
    assert roles[0] == "user" and roles[-1] == "user"
    assert all(not (a == b == "assistant") for a, b in zip(roles, roles[1:], strict=False))


def _tool_names() -> set[str]:
    from tools.registry import default_tools

    return {t.name for t in default_tools()}


@pytest.mark.skipif("Edit" not in _tool_names(), reason="the Edit tool is not in this build")
def test_approve_an_edit_shows_the_diff(cli, fake_anthropic) -> None:
    target = Path(cli.cwd) / "app.py"
    target.write_text("greeting = 'hello'\n")
    fake_anthropic.reply("Reading first.", tool_block("Read", {"file_path": "app.py"}))
    fake_anthropic.reply(
        "Editing.", tool_block("Edit", {"file_path": "app.py", "old_string": "'hello'", "new_string": "'hi'"})
    )
    fake_anthropic.text("Edited the greeting.")
    child = spawn(cli, TRACE=os.environ.get("PTY_TRACE", "0"))
    child.send("change the greeting\r")
    child.expect_exact("Permission: Edit")
    child.expect_exact("+greeting = 'hi'")
    child.expect_exact("Do you want to proceed?")
    child.expect_exact("1. Yes")
    child.send("\r")  # Enter takes the highlighted "Yes"
    child.expect_exact("Edited the greeting.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert target.read_text() == "greeting = 'hi'\n"




@pytest.mark.skipif("Bash" not in _tool_names(), reason="the Bash tool is not in this build")
def test_ctrl_c_kills_a_long_bash(cli, fake_anthropic) -> None:
    pid_file = Path(cli.cwd) / "sleep.pid"
    fake_anthropic.reply(
        "Running it.", tool_block("Bash", {"command": f"sleep 300 & echo $! > {pid_file}; wait"})
    )
    fake_anthropic.text("It was interrupted.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("run the long job\r")
    for _ in range(TIMEOUT * 10):
        if pid_file.is_file() and pid_file.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(pid_file.read_text().strip())
    assert _alive(pid)
    child.send("\x03")
    child.expect_exact("Interrupted")
    child.expect_exact(PROMPT_READY)
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid), "the Bash child survived the interrupt"
    run_line(child, "what happened?", "It was interrupted.")
    child.send("\x04")
    assert finish(child) == 0


def test_kill_9_mid_turn_then_continue_sends_a_well_formed_history(cli, fake_anthropic) -> None:
    gate = threading.Event()
    fake_anthropic.reply("Let me echo.", tool_block("Echo", {"message": "first result"}, id="toolu_echo_1"))
    fake_anthropic.reply("Half of an answer that is cut", gate=gate)
    fake_anthropic.text("Back again.")
    child = spawn(cli)
    try:
        child.send("do the first thing\r")
        child.expect_exact("Half")
        child.kill(9)
        child.expect(pexpect.EOF)
        child.close()
    finally:
        gate.set()
    child = spawn(cli, "--continue")
    assert "Resumed session" in child.before
    run_line(child, "are you there?", "Back again.")
    child.send("\x04")
    assert finish(child) == 0
    sent = fake_anthropic.requests[-1].messages
    assert sent[0]["content"][0]["text"] == "do the first thing"
    uses = [b["id"] for m in sent if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
    results = [
        b["tool_use_id"] for m in sent if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert uses == results == ["toolu_echo_1"]
    assert "first result" in str(sent)
    assert "are you there?" in str(sent[-1])


def test_text_typed_during_a_turn_is_offered_at_the_next_prompt(cli, fake_anthropic) -> None:
    gate = threading.Event()
    fake_anthropic.reply("Working on it for a long while", gate=gate)
    fake_anthropic.text("Got the follow-up.")
    child = spawn(cli)
    try:
        child.send("start\r")
        child.expect_exact("Work")
        child.send("follow-up question")
        time.sleep(0.3)  # let the reader take the keys before the interrupt (ordering, not timing)
        child.send("\x03")
        child.expect_exact("Interrupted")
        child.expect_exact(PROMPT_READY)
        child.expect_exact("follow-up question")  # pre-filled in the prompt
        child.send("\r")
        child.expect_exact("Got the follow-up.")
        child.expect_exact(PROMPT_READY)
        child.send("\x04")
        assert finish(child) == 0
    finally:
        gate.set()
    assert "follow-up question" in str(fake_anthropic.requests[-1].messages[-1])


def test_the_slash_menu_opens_as_the_name_is_typed(cli, fake_anthropic):
    """Claude Code opens its command menu on `/`; no Tab needed. Prose never opens it."""
    child = spawn(cli)
    try:
        child.send("/co")
        child.expect_exact("/compact")
        child.expect_exact("/context")
        child.send("\x15")  # Ctrl-U: clear the line
        child.send("/cost\r")
        child.expect_exact("Requests: 0")
        child.expect_exact(PROMPT_READY)
        child.sendcontrol("d")
        assert finish(child) == 0
    finally:
        if child.isalive():
            child.terminate(force=True)
