"""Claude Code's PreSkillShellCommand hook before a custom command's `` !`cmd` `` line, side by side with 2.1.332
(skill_shell.json, recorded by record_skill_shell.py): the same input, and the same text in place of a line a
hook blocks (denied, rewritten or asked with nobody to answer); the command still goes to the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.trust import trust
from tests.fixtures.claude_code.record_skill_shell import CASES, DROPPED, inputs, layout

FIXTURE = json.loads((Path(__file__).parent / "fixtures/claude_code/skill_shell.json").read_text())


def test_recorded_from_the_current_binary() -> None:
    assert FIXTURE["version"] == "2.1.332" and set(FIXTURE["cases"]) == set(CASES)


@pytest.mark.parametrize("case", list(CASES))
def test_command_shell_lines_go_through_the_hook_as_in_claude_code(cli, fake_anthropic, case: str) -> None:
    recorded = FIXTURE["cases"][case]
    proj = Path(cli.cwd)
    log = proj.parent / "hook.jsonl"
    layout(proj, log, CASES[case])
    trust(proj, cli.agent_home)
    fake_anthropic.text("ok")
    r = cli("-p", "/info")
    assert (r.code, r.stdout.strip()) == (recorded["exit"], recorded["stdout"]), r.stderr
    got = inputs(log)
    assert "tool_use_id" in json.loads(log.read_text().splitlines()[0]) and "tool_use_id" in DROPPED
    assert got == recorded["inputs"]
    (request,) = fake_anthropic.requests
    sent = [b.get("text", "") for b in request.messages[0]["content"] if "Info:" in b.get("text", "")]
    assert sent == recorded["sent"]


def test_a_hooks_allow_lets_a_line_the_rules_do_not(cli, fake_anthropic) -> None:
    """`allow` answers for the missing allow rule (as for PreToolUse); without it the command fails."""
    proj = Path(cli.cwd)
    log = proj.parent / "hook.jsonl"
    allow = {"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", "permissionDecision": "allow"}}
    layout(proj, log, allow)
    info = proj / ".claude" / "commands" / "info.md"
    info.write_text(info.read_text().replace("Bash(echo:*)", "Bash(ls:*)"))
    trust(proj, cli.agent_home)
    fake_anthropic.text("ok")
    assert cli("-p", "/info").code == 0
    assert "Info: hello" in json.dumps(fake_anthropic.requests[0].messages[0])
    layout_settings = proj / ".claude" / "settings.json"
    layout_settings.write_text(json.dumps({}))
    trust(proj, cli.agent_home)
    r = cli("-p", "/info")
    assert r.code == 1 and "permission check failed" in r.stderr and len(fake_anthropic.requests) == 1
