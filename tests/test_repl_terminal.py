"""The REPL's state machine in a real terminal (pexpect + an emulated screen): type-ahead edited with Esc,
a resize while a reply streams, a question that keeps what was typed, and the terminal going away."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from services.session import list_sessions, load_transcript  # noqa: E402
from tests.fake_anthropic import tool_block  # noqa: E402
from tests.test_repl_pty import finish, spawn, wait_screen  # noqa: E402

IDLE = "· /help"  # the toolbar's hint at an idle prompt (a running turn shows "esc to interrupt")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def _wait_requests(fake, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(fake.requests) < n and time.monotonic() < deadline:
        time.sleep(0.05)


def test_esc_takes_the_queue_back_to_edit_then_it_is_sent(cli, fake_anthropic) -> None:
    gate = threading.Event()
    fake_anthropic.reply("Working on the first one", gate=gate, fragment=1000)  # one delta, then held
    fake_anthropic.text("Second answer.")
    child = spawn(cli)
    try:
        child.send("first\r")
        wait_screen(child, "Working on the first one")
        child.send("secnd\r")  # queued, with a typo
        wait_screen(child, "queued: secnd")
        child.send("\x1b")  # Esc with a queue: it comes back into the input box; the turn is not interrupted
        wait_screen(child, "esc to interrupt")  # the queue is gone from under the input
        wait_screen(child, "> secnd")
        time.sleep(0.3)  # an Esc followed at once by another key would read as Alt+key
        child.send("\x7f\x7f\x7fcond")  # fix it
        child.send("\r")
        wait_screen(child, "queued: second")
        assert len(fake_anthropic.requests) == 1
        gate.set()
        wait_screen(child, "Second answer.")
        wait_screen(child, IDLE)
        child.send("\x04")
        assert finish(child) == 0
    finally:
        gate.set()
    assert "Interrupted" not in child.screen.text()
    sent = fake_anthropic.requests[1].messages
    assert sent[-1]["content"][-1]["text"] == "second"
    assert "Working on the first one" in str(sent)  # the first turn finished whole


class Tmux:
    """A real terminal emulator for what pyte does not model faithfully: resizing a window (tmux reflows and
    redraws as terminals do)."""

    def __init__(self, name: str, env: dict[str, str], cwd: str, command: list[str], size: tuple[int, int]):
        self.name = name
        self.sock = ["tmux", "-L", name]
        import shlex
        import subprocess

        self._run = subprocess.run
        env_args = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        cmd = f"cd {shlex.quote(cwd)} && env -i {env_args} {shlex.join(command)}; sleep 60"
        self._run([*self.sock, "new-session", "-d", "-s", name, "-x", str(size[1]), "-y", str(size[0]), cmd],
                  check=True)

    def keys(self, *keys: str) -> None:
        self._run([*self.sock, "send-keys", "-t", self.name, *keys], check=True)

    def resize(self, rows: int, cols: int) -> None:
        self._run([*self.sock, "resize-window", "-t", self.name, "-x", str(cols), "-y", str(rows)], check=True)

    def screen(self, history: int = 200) -> str:
        out = self._run([*self.sock, "capture-pane", "-p", "-S", f"-{history}", "-t", self.name],
                        capture_output=True, text=True, check=True).stdout
        return out

    def wait(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not on screen: {text!r}\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        self._run([*self.sock, "kill-server"], capture_output=True)


def _tmux_agent(cli, name: str, size: tuple[int, int]) -> Tmux:
    """The agent in a tmux window, its prompt reading. Keys typed before the prompt reads arrive in cooked mode
    (Enter would be a newline), so this waits for the idle toolbar. The environment goes through `env -i`
    (tmux starts its shell with the server's environment): only what the agent needs."""
    env = cli.env(True, TERM="xterm-256color")
    env = {k: v for k, v in env.items() if k in ("PATH", "HOME", "TERM", "LANG", "LC_ALL", "PYTHONPATH")
           or k.startswith(("AGENT", "ANTHROPIC", "API_"))}
    tm = Tmux(f"{name}-{os.getpid()}", env, str(cli.cwd), [sys.executable, "-m", "agent"], size)
    try:
        tm.wait("Ctrl-D exits")
        tm.wait(IDLE)
    except BaseException:
        tm.close()
        raise
    return tm


@pytest.mark.skipif(not __import__("shutil").which("tmux"), reason="needs tmux")
def test_a_resize_while_text_streams_leaves_no_artefacts(cli, fake_anthropic) -> None:
    gate = threading.Event()
    para = " ".join(f"word{i}" for i in range(60))
    fake_anthropic.reply(f"{para}\n\nA second paragraph that is still open", gate=gate, fragment=10000)
    tm = _tmux_agent(cli, "agent-resize", (40, 120))
    try:
        tm.keys("go", "Enter")
        tm.wait("A second paragraph")
        for rows, cols in ((30, 80), (24, 60), (40, 120), (35, 100)):
            tm.resize(rows, cols)
            time.sleep(0.4)
            tm.wait("A second")
        gate.set()
        screen = tm.wait(IDLE)
        # The open paragraph is drawn by the application (redrawn at each size), then printed once for good;
        # the spinner/live lines of earlier sizes are not left behind.
        assert screen.count("A second paragraph that is still open") == 1, screen
        assert screen.count("word59") == 1, screen
        tm.keys("C-d")
    finally:
        gate.set()
        tm.close()


@pytest.mark.skipif(not __import__("shutil").which("tmux"), reason="needs tmux")
def test_a_long_streamed_reply_lands_whole_and_in_order_while_keys_are_typed(cli, fake_anthropic) -> None:
    """Finished blocks are written above the input while the user types: every line reaches the scrollback
    exactly once and in order, and no typed key leaks into the output (the tty never goes back to cooked,
    echoing mode for a write); what was typed is in the input box, queued by Enter."""
    rows = [f"row {i:03d} of the answer" for i in range(300)]
    reply = "\n\n".join("\n".join(rows[i:i + 2]) for i in range(0, len(rows), 2)) + "\n\nALL DONE"
    fake_anthropic.reply(reply, fragment=40, pace=0.01)
    fake_anthropic.text("Queued one answered.")
    tm = _tmux_agent(cli, "agent-stream", (30, 100))
    try:
        tm.keys("go", "Enter")
        tm.wait("row 010")
        for ch in "typedwhilestreaming":
            tm.keys(ch)
            time.sleep(0.03)
        tm.keys("Enter")
        tm.wait("Queued one answered.")
        screen = tm.wait(IDLE)
        whole = tm.screen(history=5000)
    finally:
        tm.close()
    lines = [line.rstrip() for line in whole.splitlines()]
    got = [line for line in lines if line.startswith("row ")]
    expected = [f"{rows[i]} {rows[i + 1]}" for i in range(0, len(rows), 2)]  # Markdown joins a paragraph's lines
    assert got == expected, [x for x in got if x not in expected][:5] or len(got)
    assert lines.count("ALL DONE") == 1
    # The typed text appears only where the prompt echoes it (the input box, then the sent line), never
    # inside the reply.
    assert all("typedwhile" not in line or line.lstrip("> ").startswith("typedwhile") for line in lines), whole
    assert "> typedwhilestreaming" in whole
    assert IDLE in screen


def test_a_question_keeps_what_was_typed_in_the_input_box(cli, fake_anthropic) -> None:
    fake_anthropic.reply("Writing.", tool_block("Write", {"file_path": "out.txt", "content": "x"}, id="w1"))
    fake_anthropic.text("Written.")
    child = spawn(cli)
    child.send("write it\r")
    child.send("half a thought")  # typed while the model answers
    wait_screen(child, "Do you want to proceed?")
    child.send("1")  # the menu takes the digit; the typed text is kept aside
    wait_screen(child, "Written.")
    wait_screen(child, "> half a thought")  # back in the input box after the question
    child.send("\x15")  # Ctrl-U clears the line
    child.send("\x04")
    assert finish(child) == 0
    assert (Path(cli.cwd) / "out.txt").read_text() == "x"


def test_the_terminal_going_away_mid_turn_ends_quietly_with_a_valid_transcript(cli, fake_anthropic, tmp_path) -> None:
    """The window is closed while a reply streams (SIGHUP, then the terminal is gone): no traceback, no
    `exception was never retrieved`, and the transcript resumes cleanly."""
    gate = threading.Event()
    fake_anthropic.reply("Streaming into a window that will close", gate=gate, fragment=1000)
    err = tmp_path / "stderr.txt"
    # stderr to a file (the terminal is going away): run the agent through a shell redirect.
    env = cli.env(True, TERM="xterm-256color", TRACE="1")
    child = pexpect.spawn("/bin/sh", ["-c", f'exec "{sys.executable}" -m agent 2>"{err}"'], cwd=str(cli.cwd),
                          env=env, encoding="utf-8", codec_errors="replace", timeout=30, dimensions=(40, 120))
    try:
        child.expect_exact("Ctrl-D exits")
        child.send("go\r")
        child.expect_exact("Streaming")
        child.close(force=False)  # hangs up the terminal: SIGHUP, and the pty is gone
        deadline = time.monotonic() + 20
        while child.isalive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not child.isalive()
    finally:
        gate.set()
        if child.isalive():
            child.kill(signal.SIGKILL)
    text = err.read_text(errors="replace")
    assert "Traceback" not in text and "never retrieved" not in text, text
    sessions = list_sessions(Path(cli.cwd))
    loaded = load_transcript(sessions[0])
    roles = [m["role"] for m in loaded.messages]
    assert roles[0] == "user" and all(not (a == b == "assistant") for a, b in zip(roles, roles[1:], strict=False))


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def test_interrupt_a_bash_ask_again_deny_a_write_then_ctrl_d(cli, fake_anthropic) -> None:
    """Ctrl-C kills a running Bash and the next question is answered; a denied Write leaves no spinner on
    screen; TRACE shows no `exception was never retrieved` (the issue's `_GatheringFuture` report)."""
    pid_file = Path(cli.cwd) / "sleep.pid"
    fake_anthropic.reply("Running it.", tool_block("Bash", {"command": f"sleep 300 & echo $! > {pid_file}; wait"}))
    fake_anthropic.text("It was interrupted.")
    fake_anthropic.reply("Writing.", tool_block("Write", {"file_path": "x.txt", "content": "x"}))
    child = spawn(cli, "--allowedTools", "Bash", TRACE="1")
    child.send("run the long job\r")
    deadline = time.monotonic() + 30
    while not (pid_file.is_file() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    wait_screen(child, "Bash sleep 300")  # the spinner line of the running tool
    child.send("\x03")
    wait_screen(child, "Interrupted")
    wait_screen(child, IDLE)
    child.send("what happened?\r")
    wait_screen(child, "It was interrupted.")
    wait_screen(child, IDLE)
    child.send("write\r")
    wait_screen(child, "Do you want to proceed?")
    child.send("n")
    screen = wait_screen(child, "Write x.txt: rejected by you")
    screen = wait_screen(child, IDLE)
    assert not any(ch in screen for ch in SPINNER), screen
    child.send("\x04")
    assert finish(child) == 0
    assert "never retrieved" not in "\n".join(child.screen.seen) + child.screen.text()
    assert not (Path(cli.cwd) / "x.txt").exists()
