"""Claude Code's `statusLine`: the command's output under the input box, its untrusted text reduced to styles,
its failures and hangs contained, the project's command run only in a trusted folder; and in a real terminal."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import agent.repl.status_line as sl
from agent.repl.status_line import StatusLine, sanitize, status_payload
from services.settings import load_settings

PY = sys.executable


def _text(fragments) -> str:
    return "".join(t for _, t in fragments)


def test_sgr_styles_are_kept_and_every_other_sequence_is_dropped() -> None:
    raw = ("\x1b[1;32mgreen\x1b[0m \x1b[2Jcleared \x1b]0;title\x07titled \x1b[10;10Hmoved \x07bell "
           "\u202eevil\u202c \x1bPdcs\x1b\\ \x9bcsi\n2\n3\n4")
    frags = sanitize(raw)
    text = _text(frags)
    assert text.split("\n") == ["green cleared titled moved bell evil  csi", "2", "3"]  # at most 3 lines
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
    assert ("ansigreen bold", "green") in frags


def test_long_output_is_cut_to_the_width_and_blank_output_is_nothing() -> None:
    assert len(_text(sanitize("x" * 5000, width=80))) == 80
    assert sanitize("\n\x1b[0m  \n") == []


def _line(command: str, tmp_path: Path, **kw) -> StatusLine:
    changes: list[int] = []
    line = StatusLine(command, tmp_path, on_change=lambda: changes.append(1), **kw)
    line.changes = changes  # type: ignore[attr-defined]
    return line


def _engine(tmp_path: Path):
    return SimpleNamespace(config=SimpleNamespace(model="claude-test-1"), session_id="s-123",
                           paths=SimpleNamespace(transcript=tmp_path / "t.jsonl"), gate=SimpleNamespace(mode="plan"))


async def test_the_command_reads_claude_codes_payload_on_stdin(tmp_path: Path) -> None:
    script = tmp_path / "sl.py"
    script.write_text("import json, sys\nd = json.load(sys.stdin)\n"
                      "print('\\x1b[36m' + d['model']['id'] + '\\x1b[0m', d['hook_event_name'], d['session_id'],"
                      " d['cost']['total_cost_usd'], d['workspace']['current_dir'] == d['cwd'], d['permission_mode'])\n")
    payload = status_payload(_engine(tmp_path), tmp_path, 0.125, 1000, "0.1.0", time.time())
    assert set(payload) >= {"hook_event_name", "session_id", "transcript_path", "cwd", "model", "workspace",
                            "version", "output_style", "cost", "exceeds_200k_tokens"}
    line = _line(f"{PY} {script}", tmp_path, padding=2)
    await line.refresh(payload)
    assert _text(line.fragments) == "  claude-test-1 Status s-123 0.125 True plan"
    assert line.changes == [1]
    await line.refresh(payload)  # same output: no redraw asked
    assert line.changes == [1]


async def test_a_failing_or_missing_command_shows_nothing(tmp_path: Path) -> None:
    for command in ("echo partial; exit 3", "/nonexistent/status-command", "printf '\\377\\376 bad utf8'"):
        line = _line(command, tmp_path)
        await line.refresh({})
        if command.startswith("printf"):
            assert _text(line.fragments).endswith("bad utf8")  # replaced, not fatal
        else:
            assert line.fragments == []


async def test_a_hanging_command_is_killed_with_its_children(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sl, "TIMEOUT", 0.5)
    pid_file = tmp_path / "child.pid"
    line = _line(f"sleep 300 & echo $! > {pid_file}; echo shown; wait", tmp_path)
    await line.refresh({})
    assert line.fragments == []
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the status command's child survived the timeout")


async def test_requests_are_coalesced_and_the_last_payload_wins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sl, "MIN_INTERVAL", 0.05)
    line = _line(f"{PY} -c \"import json,sys; print(json.load(sys.stdin)['n'])\"", tmp_path)
    for n in range(20):
        line.request({"n": n})
    while line._task is not None and not line._task.done():
        await asyncio.sleep(0.05)
    assert _text(line.fragments) == "19"
    assert line.runs <= 2


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_settings_project_status_line_needs_trust_user_one_does_not(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "repo"
    _write(cwd / ".claude" / "settings.json", {"statusLine": {"type": "command", "command": "touch /tmp/pwned"}})
    merged = load_settings(cwd, home, trusted=False)
    assert merged.status_line is None
    assert any("statusLine" in item for item in merged.ignored)
    assert load_settings(cwd, home, trusted=True).status_line["command"] == "touch /tmp/pwned"
    _write(home / "settings.json", {"statusLine": {"type": "command", "command": "echo mine", "padding": 1}})
    assert load_settings(cwd, home, trusted=False).status_line["command"] == "echo mine"


@pytest.mark.parametrize("value", [{"type": "command"}, {"type": "static", "command": "x"}, "echo hi",
                                   {"type": "command", "command": "x", "padding": "2"}])
def test_a_malformed_status_line_is_one_warning_naming_file_and_field(tmp_path: Path, value) -> None:
    home = tmp_path / "home"
    _write(home / "settings.json", {"statusLine": value})
    merged = load_settings(tmp_path, home, trusted=False)
    assert merged.status_line is None
    assert any(str(home / "settings.json") in w and "statusLine" in w for w in merged.warnings), merged.warnings


pexpect = pytest.importorskip("pexpect")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_terminal_the_status_line_shows_and_follows_the_session(cli, agent_home, fake_anthropic, tmp_path) -> None:
    from tests.test_repl_pty import finish, read_until, spawn, wait_screen

    script = tmp_path / "sl.py"
    script.write_text(
        "import json, os, sys\nd = json.load(sys.stdin)\np = d['transcript_path']\n"
        "n = sum(1 for _ in open(p)) if os.path.exists(p) else 0\n"
        "print('\\x1b[35mSL\\x1b[0m model=' + d['model']['id'] + ' mode=' + d['permission_mode'] + f' lines={n}')\n")
    _write(agent_home / "settings.json", {"statusLine": {"type": "command", "command": f"{PY} {script}"}})
    fake_anthropic.text("Answered.")
    child = spawn(cli)
    screen = wait_screen(child, "SL model=")
    assert "lines=0" in screen
    child.send("\x1b[Z")  # Shift+Tab: the mode in the payload changes
    wait_screen(child, "mode=acceptEdits")
    child.send("hello\r")
    wait_screen(child, "Answered.")
    screen = wait_screen(child, "mode=acceptEdits lines=")
    read_until(child, lambda text: "lines=0" not in text)  # the turn's refresh reads the transcript
    assert "lines=0" not in child.screen.text(), child.screen.text()
    child.send("\x04")
    assert finish(child) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.parametrize("answer", ["n", "y"])
def test_terminal_a_projects_status_line_runs_only_once_trusted(cli, workdir, fake_anthropic, tmp_path,
                                                                 answer) -> None:
    from tests.test_repl_pty import Screen, finish, read_until, wait_screen

    marker = tmp_path / "status_ran"
    script = tmp_path / "sl.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\nprint('PROJECT-STATUS')\n")
    _write(workdir / ".claude" / "settings.json", {"statusLine": {"type": "command", "command": f"{PY} {script}"}})
    child = pexpect.spawn(PY, ["-m", "agent"], cwd=str(workdir), env=cli.env(True, TERM="xterm-256color"),
                          encoding="utf-8", codec_errors="replace", timeout=30, dimensions=(40, 120))
    child.screen = Screen()
    child.screen.screen.write_process_input = child.send
    child.logfile_read = child.screen
    child.expect_exact("Trust this folder? [y/N]")
    assert "statusLine" in child.before
    child.send(answer + "\r")
    wait_screen(child, "· /help")
    if answer == "y":
        wait_screen(child, "PROJECT-STATUS")
    else:
        # time enough for a refresh that must not happen
        assert "PROJECT-STATUS" not in read_until(child, lambda text: "PROJECT-STATUS" in text, timeout=1.5)
    child.send("\x04")
    assert finish(child) == 0
    assert marker.exists() == (answer == "y")
