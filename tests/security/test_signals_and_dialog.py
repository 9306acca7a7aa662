"""SIGTERM / SIGHUP end the agent like Ctrl-C (Bash process groups die, the transcript stays valid), and
the REPL's one-time trust question in a real terminal."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from services.trust import is_trusted
from tests.fake_anthropic import tool_block
from tests.files import write
from tests.procs import pid_alive
from tests.security.hostile import marker_script

pexpect = pytest.importorskip("pexpect")


def _wait_for(path: Path, proc, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_kills_bash_groups_and_leaves_a_valid_transcript(cli, workdir, agent_home, fake_anthropic, sig):
    pid_file = workdir / "pid.txt"
    fake_anthropic.reply(tool_block("Bash", {"command": "sleep 300 & echo $! > pid.txt; wait"}))
    proc = cli.popen("-p", "go", "--permission-mode", "bypassPermissions")
    _wait_for(pid_file, proc)
    child = int(pid_file.read_text())
    assert pid_alive(child)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    end = time.monotonic() + 10
    while pid_alive(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert not pid_alive(child), "the Bash process group outlived the agent"
    (transcript,) = (agent_home / "projects").rglob("*.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert records and "Traceback" not in err, err
    # Every tool_use has its tool_result: a --continue would send a well-formed history.
    uses = {b["id"] for r in records for b in (r.get("message") or r).get("content", []) or []
            if isinstance(b, dict) and b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for r in records for b in (r.get("message") or r).get("content", []) or []
               if isinstance(b, dict) and b.get("type") == "tool_result"}
    assert uses and uses <= results


def _spawn(cli, **env: str):
    e = cli.env(True, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", **env)
    return pexpect.spawn(sys.executable, ["-m", "agent"], cwd=str(cli.cwd), env=e, encoding="utf-8",
                         codec_errors="replace", timeout=40, dimensions=(40, 120))


@pytest.mark.parametrize("answer", ["n", "y"])
def test_repl_asks_once_about_a_folder_with_configuration(cli, workdir, agent_home, tmp_path, fake_anthropic, answer):
    marker = tmp_path / "hook_ran"
    fake_anthropic.text("hello there")
    write(workdir / ".agents/hooks.json", json.dumps(
        {"SessionStart": [{"command": marker_script(tmp_path / "h.py", marker)}]}))
    child = _spawn(cli)
    child.expect_exact("Trust this folder? [y/N]")
    text = child.before
    assert "hooks (.agents/hooks.json)" in text and str(workdir) in text
    child.send(answer + "\r")
    child.expect_exact("Ctrl-D exits")
    child.expect_exact("\x1b[?2004h")
    child.send("hi\r")  # SessionStart hooks run with the first turn
    child.expect_exact("hello there")
    child.expect_exact("\x1b[?2004h")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert is_trusted(workdir, agent_home) == (answer == "y")
    assert marker.exists() == (answer == "y")
    # Asked once: the second start goes straight to the prompt (and SIGTERM there ends it with 130).
    marker.unlink(missing_ok=True)
    child = _spawn(cli)
    child.expect_exact("Ctrl-D exits")
    assert "Trust this folder" not in child.before
    child.expect_exact("\x1b[?2004h")
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


def test_repl_does_not_ask_about_a_folder_without_configuration(cli, workdir, agent_home, fake_anthropic):
    child = _spawn(cli)
    child.expect_exact("Ctrl-D exits")
    assert "Trust this folder" not in child.before
    child.expect_exact("\x1b[?2004h")
    child.send("\x04")
    child.expect(pexpect.EOF)
    assert not is_trusted(workdir, agent_home)
