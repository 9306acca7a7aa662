"""The keys and habits a Claude Code user brings, in a real terminal (pexpect) against the fake API:
type-ahead queued during a turn, Ctrl-D during a turn, the numbered permission menu (Enter, arrows, a note),
escape sequences made visible, `!command`, `# note`, Shift+Tab, background shells, resume shows the past."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.procs import pid_alive  # noqa: E402
from tests.test_repl_pty import PROMPT_READY, finish, spawn, wait_screen  # noqa: E402


def user_texts(request) -> list[str]:
    out = []
    for m in request.messages:
        if m["role"] == "user":
            content = m["content"]
            out += [content] if isinstance(content, str) else [b.get("text", "") for b in content
                                                               if b.get("type") == "text"]
    return out


def test_type_ahead_is_queued_and_sent_when_the_turn_ends(cli, fake_anthropic) -> None:
    fake_anthropic.stall(3, True, "First answer.")
    fake_anthropic.text("Second answer.")
    child = spawn(cli)
    child.send("first question\r")
    deadline = time.monotonic() + 30
    while not fake_anthropic.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send("second question\r")  # typed while the first turn streams
    wait_screen(child, "queued: second question")  # shown under the input box
    child.expect_exact("First answer.")
    child.expect_exact("Second answer.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert user_texts(fake_anthropic.requests[1])[-1] == "second question"


def test_ctrl_d_during_a_turn_exits_when_it_ends(cli, fake_anthropic) -> None:
    fake_anthropic.stall(2, True, "Done streaming.")
    child = spawn(cli)
    child.send("go\r")
    deadline = time.monotonic() + 30
    while not fake_anthropic.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send("\x04")
    child.expect_exact("exiting when this turn ends")
    child.expect_exact("Done streaming.")
    assert finish(child) == 0


def test_menu_always_shows_the_rule_and_a_note_reaches_the_model(cli, fake_anthropic) -> None:
    target = Path(cli.cwd) / "notes.txt"
    hostile = "printf 'x' > notes.txt # \x1b[2J\x1b[31mred"
    fake_anthropic.reply(tool_block("Bash", {"command": hostile, "description": "write"}, id="b1"))
    fake_anthropic.text("Wrote it.")
    fake_anthropic.reply(tool_block("Write", {"file_path": "other.txt", "content": "o"}, id="w1"))
    fake_anthropic.text("Understood, not writing.")
    child = spawn(cli)
    child.send("write notes\r")
    child.expect_exact("Permission: Bash")
    child.expect_exact("\\x1b[2J\\x1b[31mred")  # the escape sequences are shown, not obeyed
    child.expect_exact("2. Yes, and don't ask again for")
    child.send("\x1b[B")  # down: the highlight moves to "Yes, and don't ask again"
    child.send("\r")
    child.expect_exact("Allowed from now on:")
    child.expect_exact("Wrote it.")
    child.expect_exact(PROMPT_READY)
    assert target.read_text() == "x"
    child.send("now the other file\r")
    child.expect_exact("Permission: Write")
    child.expect_exact("3. No, and tell the agent")
    child.send("3")
    wait_screen(child, "Tell the agent what to do differently")
    child.send("use notes.txt instead\r")
    child.expect_exact("Understood, not writing.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert not (Path(cli.cwd) / "other.txt").exists()
    sent = fake_anthropic.requests[3].messages[-1]["content"][0]
    assert sent["is_error"] and sent["content"].endswith("To tell you how to proceed, the user said:\nuse notes.txt instead")


def test_bang_command_memory_note_and_shift_tab(cli, fake_anthropic, agent_home) -> None:
    fake_anthropic.reply("I saw the listing.", tool_block("Write", {"file_path": "w.txt", "content": "w"}))
    fake_anthropic.text("Written without asking.")
    child = spawn(cli)
    (Path(cli.cwd) / "marker-file.txt").write_text("m")
    child.send("!ls\r")
    child.expect_exact("marker-file.txt")
    child.expect_exact(PROMPT_READY)
    child.send("# always run the linter\r")
    child.expect_exact("Save this memory to:")
    child.send("\r")  # Enter: the first choice, the project's CLAUDE.md
    child.expect_exact("Saved to")
    child.expect_exact(PROMPT_READY)
    child.send("\x1b[Z")  # Shift+Tab: default -> acceptEdits, so the Write below runs without a question
    child.send("what did you see?\r")
    child.expect_exact("Written without asking.")
    child.expect_exact(PROMPT_READY)
    assert "Permission: Write" not in child.before
    child.send("\x04")
    assert finish(child) == 0
    assert (Path(cli.cwd) / "w.txt").read_text() == "w"
    texts = user_texts(fake_anthropic.requests[0])
    assert texts[-3:] == ["<bash-input>ls</bash-input>", texts[-2], "what did you see?"]
    assert "marker-file.txt" in texts[-2] and texts[-2].startswith("<bash-stdout>")
    assert (Path(cli.cwd) / "CLAUDE.md").read_text() == "- always run the linter\n"


def test_background_shell_is_read_stopped_and_killed_on_exit(cli, fake_anthropic) -> None:
    pid_a, pid_b = Path(cli.cwd) / "a.pid", Path(cli.cwd) / "b.pid"
    fake_anthropic.reply(tool_block("Bash", {"command": f"echo $$ > {pid_a}; echo started-a; exec sleep 300",
                                             "run_in_background": True}, id="bg1"),
                         tool_block("Bash", {"command": f"echo $$ > {pid_b}; exec sleep 300",
                                             "run_in_background": True}, id="bg2"))
    fake_anthropic.text("Both are running.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("start two servers\r")
    child.expect_exact("Both are running.")
    child.expect_exact(PROMPT_READY)
    first = fake_anthropic.requests[1].messages[-1]["content"]
    ids = [b["content"].split("ID: ")[1].split(".")[0] for b in first]
    assert all(b["content"].startswith("Command running in background with ID: ") for b in first)
    fake_anthropic.reply(tool_block("TaskOutput", {"task_id": ids[0], "block": False}, id="o1"),
                         tool_block("TaskStop", {"task_id": ids[0]}, id="s1"))
    fake_anthropic.text("Stopped the first.")
    child.send("check and stop the first\r")
    child.expect_exact("Stopped the first.")
    child.expect_exact(PROMPT_READY)
    results = fake_anthropic.requests[3].messages[-1]["content"]
    assert "started-a" in results[0]["content"] and "<status>running</status>" in results[0]["content"]
    assert results[1]["content"].startswith(f"Successfully stopped task: {ids[0]}")
    a, b = int(pid_a.read_text()), int(pid_b.read_text())
    deadline = time.monotonic() + 10
    while pid_alive(a) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(a) and pid_alive(b)
    child.send("/bashes\r")
    child.expect_exact(ids[1])
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    deadline = time.monotonic() + 10
    while pid_alive(b) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(b), "a background shell outlived the REPL"


def test_resume_shows_the_past(cli, fake_anthropic) -> None:
    fake_anthropic.reply("Looking.", tool_block("Echo", {"message": "x"}))
    fake_anthropic.text("The answer is forty-two.")
    r = cli("-p", "what is the answer?")
    assert r.code == 0, r.stderr
    child = spawn(cli, "-c", TRACE=os.environ.get("PTY_TRACE", "0"))
    before = child.before  # what was printed between the banner and the first prompt
    child.send("\x04")
    assert finish(child) == 0
    text = before.replace("\r", "")
    assert "> what is the answer?" in text and "The answer is forty-two." in text and "● Echo" in text
    assert json.dumps(text)  # printable


def test_rewind_restores_an_edit_and_the_conversation_and_survives_resume(cli, fake_anthropic) -> None:
    target = Path(cli.cwd) / "app.py"
    target.write_text("greeting = 'hello'\n")
    fake_anthropic.reply(tool_block("Read", {"file_path": "app.py"}))
    fake_anthropic.reply(tool_block("Edit", {"file_path": "app.py", "old_string": "'hello'", "new_string": "'hi'"}),
                         tool_block("Write", {"file_path": "new.txt", "content": "new\n"}))
    fake_anthropic.text("Changed it.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("change the greeting\r")
    child.expect_exact("Changed it.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert target.read_text() == "greeting = 'hi'\n" and (Path(cli.cwd) / "new.txt").exists()
    # Resume, then Esc Esc: the checkpoint recorded in the transcript is still there.
    child = spawn(cli, "-c", "--permission-mode", "bypassPermissions")
    time.sleep(0.5)
    child.send("\x1b")
    time.sleep(0.1)  # two presses, as a person types them
    child.send("\x1b")
    child.expect_exact("Rewind to just before which prompt?")
    child.expect_exact("change the greeting")
    child.send("1\r")
    child.expect_exact("conversation and code (2 files)")
    child.send("1\r")
    child.expect_exact("Restored 2 file(s).")
    child.expect_exact("Conversation rewound to before: change the greeting")
    wait_screen(child, "> change the greeting")  # the prompt is back in the input box, to edit and resend
    child.send("\x03")  # Ctrl-C clears it
    child.send("\x04")
    assert finish(child) == 0
    assert target.read_text() == "greeting = 'hello'\n"
    assert not (Path(cli.cwd) / "new.txt").exists()
