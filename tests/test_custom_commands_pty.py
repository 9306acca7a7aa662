"""Custom slash commands in the REPL, in a real pseudo-terminal: completion with the description, /help, and
`/name args` sent as Claude Code sends it."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pexpect")

from services.trust import trust  # noqa: E402
from tests.test_repl_pty import finish, spawn, wait_screen  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def test_complete_help_and_run_a_custom_command(cli, workdir, fake_anthropic, tmp_path) -> None:
    cmd = workdir / ".claude/commands/frontend/lint.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text("---\ndescription: Lint the web code\nargument-hint: <dir>\n---\nLint $ARGUMENTS now.\n")
    (cmd.parent / "test.md").write_text("Test the web code.\n")  # two matches: the menu shows, with its meta
    trust(workdir, cli.agent_home)
    fake_anthropic.text("Linted it.")
    child = spawn(cli, CLAUDE_CONFIG_DIR=str(tmp_path / "cc"))
    child.send("/front")
    child.send("\t")
    wait_screen(child, "Lint the web code <dir> (project)")  # the completion menu's meta column
    child.send("\x15")  # Ctrl-U: clear the line
    child.send("/help\r")
    wait_screen(child, "/frontend:lint")
    # No wait for PROMPT_READY after wait_screen: it may have read that sequence already. The input box
    # stays live, and a line typed during a turn is queued and sent after it.
    child.send("/frontend:lint web\r")
    wait_screen(child, "Linted it.")
    child.send("/exit\r")
    assert finish(child) == 0
    texts = [b["text"] for b in fake_anthropic.requests[0].messages[-1]["content"]]
    assert texts[-2:] == ["<command-message>frontend:lint</command-message>\n<command-name>/frontend:lint"
                          "</command-name>\n<command-args>web</command-args>\n", "Lint web now.\n"]
