"""Hooks that only look, through a real terminal: `/add-dir` runs DirectoryAdded with Claude Code 2.1.332's
input (`directory`, `source: "slash_command"`, from its hook schema); a directory that is refused runs
nothing. (InstructionsLoaded and CwdChanged are compared with the binary in test_instructions_cli.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.trust import trust

pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402


def test_add_dir_runs_directory_added(cli, fake_anthropic) -> None:
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir()
    (proj / "extra").mkdir()
    log = proj / "added.jsonl"
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"DirectoryAdded": [
        {"matcher": "slash_command", "hooks": [{"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]}}))
    trust(proj, cli.agent_home)
    child = spawn(cli)
    child.send("/add-dir nowhere\r")
    child.expect_exact("not a directory")
    child.expect_exact(PROMPT_READY)
    child.send("/add-dir extra\r")
    child.expect_exact("for this session.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    (sent,) = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert sent["hook_event_name"] == "DirectoryAdded" and sent["source"] == "slash_command"
    assert sent["directory"] == str((proj / "extra").resolve()) and sent["cwd"] == str(proj)
