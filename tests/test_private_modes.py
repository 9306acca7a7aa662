"""Modes by construction: under `umask 000`, everything the agent creates in its home (projects/,
sessions, transcripts, spilled output, history, trust records, checkpoints) and the settings it writes
in the project are 0700 / 0600, through the real CLI and a real terminal; and the open-to-others
warning is only about a directory the agent did not make."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)  # the children inherit it
    try:
        yield
    finally:
        os.umask(old)


def too_open(root: Path) -> list[str]:
    out = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            out.append(f"{path.relative_to(root)} {stat.S_IMODE(st.st_mode):04o}")
    return out


def test_nothing_the_agent_creates_is_open_under_umask_000(cli, fake_anthropic, open_umask) -> None:
    work = Path(cli.cwd)
    cli.agent_home.rmdir()  # the agent makes its home itself
    assert cli("trust", str(work), with_fake=False).code == 0
    fake_anthropic.reply(tool_block("Bash", {"command": "seq 1 40000"}))  # big enough to be spilled to a file
    fake_anthropic.text("Counted.")
    r = cli("-p", "count", "--permission-mode", "bypassPermissions")
    assert r.code == 0, r.stderr
    assert list(cli.agent_home.rglob("tool-results/*")), "the output was not spilled: the test proves less"
    (work / "app.py").write_text("x = 1\n")
    fake_anthropic.reply(tool_block("Read", {"file_path": "app.py"}))
    fake_anthropic.reply(tool_block("Edit", {"file_path": "app.py", "old_string": "1", "new_string": "2"}),
                         tool_block("Bash", {"command": "touch made.txt"}))
    fake_anthropic.text("Edited.")
    child = spawn(cli)
    before = child.before
    child.send("edit it\r")
    child.expect_exact("don't ask again")
    child.send("2")
    child.expect_exact("don't ask again")
    child.send("2")
    child.expect_exact("Edited.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert "open to other users" not in before
    assert list(cli.agent_home.rglob("checkpoints/*")), "no checkpoint was written: the test proves less"
    assert too_open(cli.agent_home) == []
    assert too_open(work / ".claude") == []
    assert stat.S_IMODE((work / "made.txt").stat().st_mode) == 0o666  # the user's own files follow the umask


def test_the_warning_still_names_a_directory_someone_else_opened(cli, fake_anthropic) -> None:
    (cli.agent_home / "projects").mkdir(parents=True, exist_ok=True)
    os.chmod(cli.agent_home / "projects", 0o755)
    child = spawn(cli)
    before = child.before
    child.send("\x04")
    assert finish(child) == 0
    assert "projects is open to other users (mode 0755)" in " ".join(before.split())
