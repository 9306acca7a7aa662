"""Notifications: the channel and bytes for each terminal (pure), and through a real terminal (pexpect):
a permission question rings the bell on a plain xterm, sends OSC 9 on iTerm2, nothing when disabled, and
runs the project's `Notification` hook with Claude Code's input; a long turn's end rings too."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from services import notify
from services.trust import trust
from tests.fake_anthropic import tool_block

XTERM = {"TERM": "xterm-256color"}


def test_channels_and_sequences() -> None:
    assert notify.resolve(None, XTERM) == "terminal_bell"
    assert notify.resolve("auto", {"TERM": "screen", "TMUX": "/tmp/x"}) == "terminal_bell"
    assert notify.resolve(None, {"TERM_PROGRAM": "iTerm.app"}) == "iterm2"
    assert notify.resolve(None, {"TERM": "xterm-kitty"}) == "kitty"
    assert notify.resolve(None, {"TERM_PROGRAM": "ghostty"}) == "ghostty"
    assert notify.resolve("bogus", XTERM) == "terminal_bell"
    assert notify.resolve("notifications_disabled", {"TERM_PROGRAM": "iTerm.app"}) == "notifications_disabled"
    msg = "Claude needs your permission to use Bash"
    assert notify.sequence("terminal_bell", msg, XTERM) == "\a"
    assert notify.sequence("notifications_disabled", msg, XTERM) == ""
    assert notify.sequence("iterm2", msg, XTERM) == f"\x1b]9;{msg}\a"
    assert notify.sequence("iterm2_with_bell", msg, XTERM) == f"\x1b]9;{msg}\a\a"
    assert notify.sequence("ghostty", msg, XTERM) == f"\x1b]777;notify;Claude Code;{msg}\a"
    assert notify.sequence("kitty", msg, XTERM).count("\x1b]99;") == 3
    # Inside tmux the OSC is passed through to the outer terminal (ESC doubled).
    assert notify.sequence("iterm2", msg, {"TMUX": "x"}) == f"\x1bPtmux;\x1b\x1b]9;{msg}\a\x1b\\"


def test_a_hostile_name_cannot_break_out_of_the_sequence() -> None:
    """An MCP tool's name is the server's to choose: control characters never reach the terminal raw."""
    evil = "x\a\x1b]0;pwned\a\x1b[2J;y"
    seq = notify.sequence("iterm2", notify.PERMISSION_MESSAGE.format(tool=evil), XTERM)
    inner = seq[len("\x1b]9;"):-1]
    assert "\x1b" not in inner and "\a" not in inner and ";" not in inner


pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402


class _Capture(io.StringIO):
    def flush(self) -> None:
        pass


def _ask_bash(cli, fake_anthropic, **env: str) -> str:
    """Runs one REPL turn whose Bash call asks for permission; returns every byte the terminal got."""
    fake_anthropic.reply(tool_block("Bash", {"command": "echo hi", "description": "Say hi"}))
    fake_anthropic.text("Said hi.")
    child = spawn(cli, **env)
    seen = _Capture()
    child.logfile_read.files = (*child.logfile_read.files, seen)
    child.send("say hi\r")
    child.expect_exact("Do you want to proceed?")
    child.expect_exact("1. Yes")
    child.send("\r")
    child.expect_exact("Said hi.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    return seen.getvalue()


def test_permission_question_rings_the_bell(cli, fake_anthropic) -> None:
    out = _ask_bash(cli, fake_anthropic)
    assert out.count("\a") == 1 and "\x1b]9;" not in out


def test_iterm2_gets_osc_9_and_disabled_gets_nothing(cli, fake_anthropic) -> None:
    out = _ask_bash(cli, fake_anthropic, TERM_PROGRAM="iTerm.app")
    assert "\x1b]9;Claude needs your permission to use Bash\a" in out
    settings = Path(cli.cwd) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"preferredNotifChannel": "notifications_disabled"}))
    trust(Path(cli.cwd), cli.agent_home)
    out = _ask_bash(cli, fake_anthropic, TERM_PROGRAM="iTerm.app")
    assert "\a" not in out and "\x1b]9;" not in out


def test_notification_hook_gets_claude_codes_input_and_a_long_turn_rings(cli, fake_anthropic) -> None:
    log = Path(cli.cwd) / "notified.jsonl"
    script = Path(cli.cwd) / "log.py"
    script.write_text("import json, sys\nopen(sys.argv[1], 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n")
    settings = Path(cli.cwd) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Notification": [
        {"matcher": "", "hooks": [{"type": "command", "command": f"{sys.executable} {script} {log}"}]}]}}))
    trust(Path(cli.cwd), cli.agent_home)
    out = _ask_bash(cli, fake_anthropic, AGENT_NOTIFY_TURN_SECONDS="0")
    assert out.count("\a") == 2  # the question, then the end of the (long enough) turn
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["notification_type"], r["message"]) for r in records] == [
        ("permission_prompt", "Claude needs your permission to use Bash"),
        ("idle_prompt", "Claude is waiting for your input")]
    first = records[0]
    assert first["hook_event_name"] == "Notification" and first["cwd"] == str(cli.cwd)
    assert {"session_id", "transcript_path"} <= set(first)
