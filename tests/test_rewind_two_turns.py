"""/rewind in a real terminal over two turns of real edits: pick either earlier prompt; code, conversation
or both; a file created since is removed, one deleted is restored, one changed by hand since is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402


def two_turns(cli, fake_anthropic) -> Path:
    work = Path(cli.cwd)
    (work / "app.py").write_text("greeting = 'hello'\n")
    (work / "old.txt").write_text("old\n")
    fake_anthropic.reply(tool_block("Read", {"file_path": "app.py"}))
    fake_anthropic.reply(tool_block("Edit", {"file_path": "app.py", "old_string": "'hello'", "new_string": "'hi'"}),
                         tool_block("Write", {"file_path": "new.txt", "content": "new\n"}))
    fake_anthropic.text("First done.")
    fake_anthropic.reply(tool_block("Edit", {"file_path": "app.py", "old_string": "'hi'", "new_string": "'hey'"}),
                         tool_block("Bash", {"command": "rm old.txt"}))
    fake_anthropic.text("Second done.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("first change\r")
    child.expect_exact("First done.")
    child.expect_exact(PROMPT_READY)
    child.send("second change\r")
    child.expect_exact("Second done.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'hey'\n" and not (work / "old.txt").exists()
    return work


def test_rewind_to_the_first_prompt_after_resume_restores_both_turns(cli, fake_anthropic) -> None:
    work = two_turns(cli, fake_anthropic)
    child = spawn(cli, "-c", "--permission-mode", "bypassPermissions")
    child.send("/rewind\r")
    child.expect_exact("Rewind to just before which prompt?")
    child.expect_exact("1. first change")
    child.expect_exact("2. second change")
    child.send("1\r")
    child.expect_exact("Restore:")
    child.send("1\r")  # conversation and code
    child.expect_exact("Restored")
    child.expect_exact("Conversation rewound to before: first change")
    child.expect_exact(PROMPT_READY)
    child.send("\x03")
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'hello'\n"
    assert not (work / "new.txt").exists() and (work / "old.txt").read_text() == "old\n"


def test_rewind_code_only_to_the_second_prompt_and_a_hand_edit_is_reported(cli, fake_anthropic) -> None:
    work = two_turns(cli, fake_anthropic)
    (work / "app.py").write_text("greeting = 'mine'\n")  # changed by hand after the agent's edit
    child = spawn(cli, "-c", "--permission-mode", "bypassPermissions")
    child.send("/rewind\r")
    child.expect_exact("2. second change")
    child.send("2\r")
    child.expect_exact("changed since the agent's edit")
    child.expect_exact("Restore:")
    child.send("3\r")  # code only
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'mine'\n"  # reported, not overwritten
    assert (work / "old.txt").read_text() == "old\n" and (work / "new.txt").exists()


def test_the_agents_own_shell_change_is_not_taken_for_a_hand_edit(cli, fake_anthropic) -> None:
    work = Path(cli.cwd)
    (work / "app.py").write_text("greeting = 'hello'\n")
    fake_anthropic.reply(tool_block("Read", {"file_path": "app.py"}))
    fake_anthropic.reply(tool_block("Edit", {"file_path": "app.py", "old_string": "'hello'", "new_string": "'hi'"}))
    fake_anthropic.reply(tool_block("Bash", {"command": "sed -i s/hi/hey/ app.py"}))
    fake_anthropic.text("Done.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("change it\r")
    child.expect_exact("Done.")
    child.expect_exact(PROMPT_READY)
    child.send("/rewind\r")
    child.expect_exact("1. change it")
    child.send("1\r")
    child.expect_exact("Restore:")
    assert "changed since the agent's edit" not in child.before
    child.send("3\r")
    child.expect_exact("Restored")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'hello'\n"
