"""Claude Code's ConfigChange hook, side by side with 2.1.332 (config_change.json, recorded by
record_config_change.py): a hooks settings file changed during the session runs it (`source`, `file_path`);
a block keeps the hooks as they were, so a hook the model slipped into settings.local.json never runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.trust import trust
from tests.fake_anthropic import tool_block
from tests.fixtures.claude_code.record_config_change import CASES, calls, inputs, layout

FIXTURE = json.loads((Path(__file__).parent / "fixtures/claude_code/config_change.json").read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_a_settings_change_mid_session_as_in_claude_code(cli, fake_anthropic, tmp_path, case: str) -> None:
    recorded = FIXTURE["cases"][case]
    assert FIXTURE["version"] == "2.1.332"
    proj, log, marker = Path(cli.cwd), tmp_path / "hook.jsonl", tmp_path / "marker"
    layout(proj, log, CASES[case])
    trust(proj, cli.agent_home)
    for i, command in enumerate(calls(marker, "")):  # no watcher to wait for: the change is seen after the call
        fake_anthropic.reply(tool_block("Bash", {"command": command, "description": "step"}, id=f"toolu_{i}"))
    fake_anthropic.text("done")
    r = cli("-p", "Go.", "--dangerously-skip-permissions")
    assert r.code == 0, r.stderr
    assert inputs(log, proj) == recorded["inputs"]
    assert marker.exists() is recorded["new_hook_ran"]
    if recorded["new_hook_ran"] is False:
        assert "not applied: no changes mid-session" in r.stderr


def test_without_a_config_change_hook_a_change_applies_at_once(cli, fake_anthropic, tmp_path) -> None:
    proj, marker = Path(cli.cwd), tmp_path / "marker"
    (proj / ".claude").mkdir()
    trust(proj, cli.agent_home)
    for i, command in enumerate(calls(marker, "")):
        fake_anthropic.reply(tool_block("Bash", {"command": command, "description": "step"}, id=f"toolu_{i}"))
    fake_anthropic.text("done")
    assert cli("-p", "Go.", "--dangerously-skip-permissions").code == 0
    assert marker.exists()
