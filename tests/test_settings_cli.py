"""Settings reach the code that uses them from the one loaded configuration: a trusted folder's `.env`
counts the same as the environment (it is never exported), an untrusted one's does not."""

from __future__ import annotations

import pytest

from services.trust import trust
from tests.files import write


@pytest.mark.parametrize("trusted", [True, False])
def test_dotenv_output_limit_sets_max_tokens_only_when_trusted(cli, workdir, agent_home, fake_anthropic, trusted):
    write(workdir / ".env", "CLAUDE_CODE_MAX_OUTPUT_TOKENS=1500\n")
    if trusted:
        trust(workdir, agent_home)
    fake_anthropic.text("ok")
    r = cli("-p", "hi", CLAUDE_CODE_MAX_OUTPUT_TOKENS=None)
    assert r.code == 0, r.stderr
    sent = fake_anthropic.requests[0].body["max_tokens"]
    assert (sent == 1500) is trusted


def test_debug_traces_without_exporting_trace_to_children(cli, workdir, fake_anthropic):
    """--debug turns tracing on in the agent; a Bash child does not inherit TRACE=1."""
    from tests.fake_anthropic import tool_block

    fake_anthropic.reply(tool_block("Bash", {"command": "env > env.txt"}))
    fake_anthropic.text("done")
    r = cli("-p", "go", "--debug", "--permission-mode", "bypassPermissions", TRACE=None)
    assert r.code == 0, r.stderr
    assert "[trace]" in r.stderr
    assert not any(line.startswith("TRACE=") for line in (workdir / "env.txt").read_text().splitlines())
