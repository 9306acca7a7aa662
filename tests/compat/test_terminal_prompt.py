"""`agent "task"` on a terminal opens the REPL with the task as its first message (Claude Code's and
Codex's behaviour); without a terminal the same command stays a one-shot run, so scripts keep working."""

from __future__ import annotations

import sys

import pytest

pexpect = pytest.importorskip("pexpect")

PROMPT_READY = "\x1b[?2004h"  # prompt-toolkit turns bracketed paste on when the prompt reads


def test_a_prompt_on_a_terminal_opens_the_repl_with_it(cli) -> None:
    env = cli.env(False, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    child = pexpect.spawn(sys.executable, ["-m", "agent", "--mock", "echo first message"], cwd=str(cli.cwd),
                          env=env, encoding="utf-8", codec_errors="replace", timeout=30, dimensions=(40, 120))
    try:
        child.expect_exact("first message")  # the task ran as the REPL's first turn
        child.expect_exact(PROMPT_READY)  # and the REPL waits for the next one
        child.send("echo second\r")
        child.expect_exact("second")
        child.expect_exact(PROMPT_READY)
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_the_same_command_without_a_terminal_is_one_shot(cli) -> None:
    r = cli("--mock", "echo piped", with_fake=False)
    assert r.code == 0 and "piped" in r.stdout
