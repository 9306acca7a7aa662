"""Files trusted by name carry no secret in: instruction, rule, import and memory files that are links to
`/proc/self/environ`, `~/.ssh/id_rsa`, `~/.aws/credentials` or out of the project are ignored with a
one-line notice, in an untrusted and a trusted folder, through the real CLI (whose own environment holds
the API key). The secret never reaches a request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from services.trust import trust
from tests.conftest import TEST_KEY, CliRunner
from tests.fake_anthropic import tool_block

SSH = "SECRET-SSH-PRIVATE-KEY-0001"
AWS = "SECRET-AWS-CREDENTIALS-0002"


def _link(at: Path, to: str | Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(to, at)


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    home, proj = tmp_path / "home", tmp_path / "proj"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH + "\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(AWS + "\n")
    (tmp_path / "outside.md").write_text("OUTSIDE-THE-PROJECT\n")
    proj.mkdir()
    (proj / ".git").mkdir()
    (proj / "CLAUDE.md").write_text("PROJECT-RULES\n@env.md\n@~/.ssh/id_rsa\n@../outside.md\n@aws.md\n")
    _link(proj / "env.md", "/proc/self/environ")
    _link(proj / "aws.md", home / ".aws" / "credentials")
    _link(proj / ".claude" / "CLAUDE.md", "/proc/self/environ")
    _link(proj / "CLAUDE.local.md", home / ".ssh" / "id_rsa")
    _link(proj / ".claude" / "rules" / "key.md", home / ".ssh" / "id_rsa")
    _link(proj / ".claude" / "rules" / "outside", tmp_path)  # a rules folder link out of the project
    _link(proj / ".agents" / "memory" / "MEMORY.md", "/proc/self/environ")
    _link(proj / "sub" / "CLAUDE.md", home / ".aws" / "credentials")
    (proj / "sub" / "file.txt").write_text("x\n")
    _link(home / ".claude" / "CLAUDE.md", home / ".ssh" / "id_rsa")
    (home / ".claude" / "rules").mkdir()
    _link(home / ".claude" / "rules" / "env.md", "/proc/self/environ")
    return home, proj


@pytest.mark.parametrize("trusted", [False, True])
def test_no_secret_reaches_the_request(tmp_path, cli, trusted):
    home, proj = _hostile(tmp_path)
    _link(cli.agent_home / "AGENTS.md", "/proc/self/environ")
    if trusted:
        trust(proj, cli.agent_home)
    cli.fake.reply(tool_block("Read", {"file_path": str(proj / "sub" / "file.txt")}))
    cli.fake.reply("Done.")
    result = CliRunner(cli.agent_home, proj, cli.fake)("-p", "Go.", HOME=str(home), CLAUDE_CONFIG_DIR=None)
    assert result.code == 0, result.stderr
    sent = json.dumps([r.body for r in cli.fake.requests])
    for secret in (SSH, AWS, TEST_KEY, "ANTHROPIC_API_KEY", "OUTSIDE-THE-PROJECT"):
        assert secret not in sent
    notices = [line for line in result.stderr.splitlines() if line.startswith("notice: ignored")]
    assert any(str(home / ".claude" / "CLAUDE.md") in n and "credential" in n for n in notices)
    assert any(str(cli.agent_home / "AGENTS.md") in n and "device or process" in n for n in notices)
    assert all(len(n.splitlines()) == 1 for n in notices)
    if trusted:
        assert "PROJECT-RULES" in sent
        for name in ("env.md", "aws.md", ".claude/CLAUDE.md", "CLAUDE.local.md", ".claude/rules/key.md"):
            assert any(str(proj / name) in n for n in notices), name
        assert any("@../outside.md" in n and "leaves the project" in n for n in notices)
    else:
        assert "PROJECT-RULES" not in sent
