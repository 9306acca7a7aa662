"""Claude Code's Elicitation and ElicitationResult hooks in `agent -p`, side by side with 2.1.332
(elicitation.json, recorded by record_elicitation.py with the same `asks` server): the hook's input, a hook
that answers for the user (accept with content, or decline), nobody to ask (cancel, then ElicitationResult
may change it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from services.trust import trust
from tests.fixtures.claude_code.record_elicitation import CASES, TOOL, inputs, mcp_config, settings

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures/claude_code/elicitation.json").read_text())


def test_recorded_from_the_current_binary() -> None:
    assert FIXTURE["version"] == "2.1.332" and set(FIXTURE["cases"]) == set(CASES)


@pytest.mark.parametrize("case", list(CASES))
def test_elicitation_hooks_as_in_claude_code(cli, fake_anthropic, tmp_path, case: str) -> None:
    from tests.fake_anthropic import tool_block

    recorded = FIXTURE["cases"][case]
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir(exist_ok=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps(settings(logs, CASES[case])))
    (tmp_path / "mcp.json").write_text(json.dumps(mcp_config(sys.executable)))
    trust(proj, cli.agent_home)
    fake_anthropic.reply(tool_block(TOOL, {}))
    fake_anthropic.text("done")
    r = cli("-p", "Ask my name.", "--mcp-config", str(tmp_path / "mcp.json"), "--dangerously-skip-permissions",
            timeout=60)
    assert r.code == 0, r.stderr
    assert inputs(logs) == recorded["inputs"]
    result = json.dumps(fake_anthropic.requests[1].messages[-1]["content"])
    said = json.loads(recorded["tool_result"])["result"]  # 2.1.332 sends the structured result as JSON
    assert said in result, result
