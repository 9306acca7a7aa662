"""Claude Code's Setup hook and its hidden flags, side by side with 2.1.332 (setup.json, recorded by
record_setup.py): `--init` and `--maintenance` run Setup (trigger init / maintenance) before SessionStart and
go on with the prompt; `--init-only` runs both and exits without a request. Setup's context is not sent in
`-p`, as there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.trust import trust
from tests.fixtures.claude_code.record_setup import CASES, inputs, layout

FIXTURE = json.loads((Path(__file__).parent / "fixtures/claude_code/setup.json").read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_setup_flags_as_in_claude_code(cli, fake_anthropic, tmp_path, case: str) -> None:
    recorded = FIXTURE["cases"][case]
    assert FIXTURE["version"] == "2.1.332"
    proj, log = Path(cli.cwd), tmp_path / "hooks.jsonl"
    layout(proj, log)
    trust(proj, cli.agent_home)
    if "-p" in CASES[case]:
        fake_anthropic.text("ok")
    r = cli(*CASES[case])
    assert r.code == recorded["exit"], r.stderr
    assert inputs(log) == recorded["inputs"]
    assert len(fake_anthropic.requests) == recorded["requests"]
    sent = any("setup-ctx" in json.dumps(req.body) for req in fake_anthropic.requests[:1])
    assert sent is recorded["context_sent"]
