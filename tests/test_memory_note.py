"""`# note` in a real terminal: Enter saves to the project's instruction file (CLAUDE.md, or AGENTS.md
where that is the one in use), the other choices are ~/.claude/CLAUDE.md and CLAUDE.local.md, each
number shown once, one line names the file, and the next request's system prompt carries the note."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from agent.repl.memory_note import choose, note_line, project_instruction_file  # noqa: E402
from tests.test_repl_pty import PROMPT_READY, finish, spawn, wait_screen  # noqa: E402


def test_enter_saves_to_agents_md_when_that_is_the_file_in_use(cli, fake_anthropic, tmp_path: Path) -> None:
    work = Path(cli.cwd)
    assert cli("trust", str(work), with_fake=False).code == 0
    (work / "AGENTS.md").write_text("# Rules\nUse tabs.")  # no final newline: the note goes on its own line
    claude_dir = tmp_path / "claude-config"
    fake_anthropic.text("Noted.")
    child = spawn(cli, CLAUDE_CONFIG_DIR=str(claude_dir))
    child.send("# run make lint before committing\r")
    child.expect_exact("Save this memory to:")
    child.expect_exact("1. Project memory  ./AGENTS.md")
    child.expect_exact(f"2. User memory     {claude_dir / 'CLAUDE.md'}")
    child.expect_exact("3. Local memory    ./CLAUDE.local.md")
    assert "1. 1" not in child.before
    wait_screen(child, "Esc cancels")
    child.send("\r")
    child.expect_exact(f"Saved to {work / 'AGENTS.md'}")
    child.expect_exact(PROMPT_READY)
    child.send("# my own habit\r")
    wait_screen(child, "Esc cancels")
    child.send("3\r")
    child.expect_exact(f"Saved to {work / 'CLAUDE.local.md'}")
    child.expect_exact(PROMPT_READY)
    child.send("# never mind\r")
    wait_screen(child, "Esc cancels")
    child.send("\x1b")
    child.expect_exact("Not saved.")
    child.expect_exact(PROMPT_READY)
    child.send("hello\r")
    child.expect_exact("Noted.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "AGENTS.md").read_text() == "# Rules\nUse tabs.\n- run make lint before committing\n"
    local = work / "CLAUDE.local.md"
    assert local.read_text() == "- my own habit\n" and stat.S_IMODE(local.stat().st_mode) == 0o600
    assert not (work / "CLAUDE.md").exists() and not claude_dir.exists()
    system = str(fake_anthropic.requests[0].body.get("system"))
    assert "run make lint before committing" in system and "my own habit" in system
    assert "never mind" not in system


def test_the_menu_answers_and_the_file_choice() -> None:
    assert choose("", 3) == 0 and choose("  ", 3) == 0  # Enter: the first choice
    assert choose("2", 3) == 1 and choose("4", 3) is None and choose("x", 3) is None
    assert choose(None, 3) is None  # Esc / Ctrl-C


def test_project_file_and_line(tmp_path: Path) -> None:
    assert project_instruction_file(tmp_path).name == "CLAUDE.md"
    (tmp_path / "AGENTS.md").write_text("x")
    assert project_instruction_file(tmp_path).name == "AGENTS.md"
    (tmp_path / "CLAUDE.md").write_text("")
    assert project_instruction_file(tmp_path).name == "CLAUDE.md"
    assert note_line(tmp_path / "CLAUDE.md", "a") == "- a\n"
    assert note_line(tmp_path / "AGENTS.md", "a") == "\n- a\n"
