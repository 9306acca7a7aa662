"""Trust covers the configuration the user saw: what is written after trust (by a sandboxed command, a
script, a pull) is data until the user answers again. Through the store, the real CLI and a real terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from services.rule_store import add_rule
from services.trust import config_changes, trust
from tests.files import write
from tests.security.hostile import marker_script


def test_a_file_changed_added_or_removed_after_trust_is_named(workdir, agent_home):
    write(workdir / ".env", "MAX_THINKING_TOKENS=1024\n")
    write(workdir / ".claude/settings.json", "{}\n")
    write(workdir / ".claude/commands/fix.md", "Fix it.\n")
    trust(workdir, agent_home)
    assert config_changes(workdir, agent_home) == []
    write(workdir / ".env", "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
    write(workdir / ".mcp.json", '{"mcpServers": {}}')
    write(workdir / ".claude/agents/evil.md", "---\nname: evil\n---\n")
    (workdir / ".claude/commands/fix.md").unlink()
    assert config_changes(workdir, agent_home) == [".claude/agents/evil.md", ".claude/commands/fix.md", ".env",
                                                   ".mcp.json"]


def test_instruction_files_and_empty_placeholders_are_not_changes(workdir, agent_home):
    trust(workdir, agent_home)
    write(workdir / "CLAUDE.md", "# memory the agent itself adds\n")
    write(workdir / ".claude/CLAUDE.md", "more\n")
    write(workdir / ".env", "")  # the sandbox's placeholder, left by a killed run
    (workdir / ".env.d").mkdir()  # a directory named .env*: a virtualenv, not variables
    assert config_changes(workdir, agent_home) == []


def test_a_sub_folder_s_own_configuration_is_shown_before_it_counts(workdir, agent_home):
    trust(workdir, agent_home)
    sub = workdir / "packages" / "web"
    write(sub / ".claude/settings.json", json.dumps({"permissions": {"allow": ["Bash"]}}))
    assert config_changes(sub, agent_home) == [".claude/settings.json"]
    assert config_changes(workdir / "packages", agent_home) == []


def test_the_agent_s_own_rule_writes_keep_the_trust(workdir, agent_home):
    trust(workdir, agent_home)
    add_rule(workdir / ".claude/settings.local.json", "Bash(npm test:*)")  # "Yes, don't ask again"
    assert config_changes(workdir, agent_home) == []
    write(workdir / ".claude/settings.local.json", json.dumps({"permissions": {"allow": ["Bash"]}}))
    assert config_changes(workdir, agent_home) == [".claude/settings.local.json"]


def test_a_record_made_before_digests_adopts_the_folder_as_it_is(workdir, agent_home):
    write(workdir / ".env", "MAX_THINKING_TOKENS=1024\n")
    key = str(workdir.resolve())
    write(agent_home / "trusted-folders.json", json.dumps({"folders": {key: {"trusted_at": "2026-01-01"}}}))
    assert config_changes(workdir, agent_home) == []
    write(workdir / ".env", "ANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
    assert config_changes(workdir, agent_home) == [".env"]


def test_a_planted_env_does_not_count_in_print_mode_until_trusted_again(cli, workdir, agent_home, fake_anthropic):
    """The attack: after trust, a sandboxed `printf ... > .env` plants the agent's variables (the base URL
    would send the key elsewhere; the output limit is the one this test can see in the request)."""
    trust(workdir, agent_home)
    write(workdir / ".env", "CLAUDE_CODE_MAX_OUTPUT_TOKENS=1500\nANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
    fake_anthropic.text("safe")
    r = cli("-p", "hello", CLAUDE_CODE_MAX_OUTPUT_TOKENS=None)
    assert r.code == 0, r.stderr
    assert fake_anthropic.requests[-1].body["max_tokens"] != 1500
    (line,) = [ln for ln in r.stderr.splitlines() if "changed since this folder was trusted" in ln]
    assert line.startswith("warning:") and ".env" in line and f"agent trust {workdir}" in line
    # The user reviews it and trusts it as it is: then it counts (the environment still outranks .env).
    assert cli("trust", str(workdir)).code == 0
    fake_anthropic.text("counted")
    r = cli("-p", "hello", CLAUDE_CODE_MAX_OUTPUT_TOKENS=None)
    assert r.code == 0 and "changed since" not in r.stderr, r.stderr
    assert fake_anthropic.requests[-1].body["max_tokens"] == 1500


pexpect = pytest.importorskip("pexpect")


def _spawn(cli):
    e = cli.env(True, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    return pexpect.spawn(sys.executable, ["-m", "agent"], cwd=str(cli.cwd), env=e, encoding="utf-8",
                         codec_errors="replace", timeout=60, dimensions=(40, 120))


@pytest.mark.parametrize("answer", ["n", "y"])
def test_the_repl_shows_a_hook_planted_after_trust_and_asks_again(cli, workdir, agent_home, tmp_path: Path,
                                                                  fake_anthropic, answer):
    trust(workdir, agent_home)
    marker = tmp_path / "hook_ran"
    write(workdir / ".agents/hooks.json", json.dumps(
        {"SessionStart": [{"command": marker_script(tmp_path / "h.py", marker)}]}))
    fake_anthropic.text("hello there")
    child = _spawn(cli)
    child.expect_exact("Trust the folder as it is now? [y/N]")
    assert ".agents/hooks.json" in child.before
    child.send(answer + "\r")
    child.expect_exact("Ctrl-D exits")
    child.expect_exact("\x1b[?2004h")
    child.send("hi\r")
    child.expect_exact("hello there")
    child.expect_exact("\x1b[?2004h")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert marker.exists() == (answer == "y")
    assert (config_changes(workdir, agent_home) == []) == (answer == "y")
