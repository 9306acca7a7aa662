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


def test_dotenv_thinking_budget_and_alias_override_reach_the_request(cli, workdir, agent_home, fake_anthropic):
    """MAX_THINKING_TOKENS and ANTHROPIC_DEFAULT_SONNET_MODEL from a trusted `.env` count as the environment."""
    write(workdir / ".env", "MAX_THINKING_TOKENS=2048\nANTHROPIC_DEFAULT_SONNET_MODEL=claude-sonnet-4-5-20250929\n")
    trust(workdir, agent_home)
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--model", "sonnet", MAX_THINKING_TOKENS=None, ANTHROPIC_DEFAULT_SONNET_MODEL=None)
    assert r.code == 0, r.stderr
    body = fake_anthropic.requests[0].body
    assert body["model"] == "claude-sonnet-4-5-20250929"
    assert (body["thinking"]["type"], body["thinking"]["budget_tokens"]) == ("enabled", 2048)


@pytest.mark.parametrize("source", ["dotenv", "environment"])
def test_subagent_model_alias_follows_the_override(cli, workdir, agent_home, fake_anthropic, source):
    """A sub-agent's `model: haiku` resolves through ANTHROPIC_DEFAULT_HAIKU_MODEL, wherever it is set."""
    from tests.fake_anthropic import tool_block

    write(workdir / ".claude/agents/quick.md", "---\nname: quick\ndescription: Quick looks\nmodel: haiku\n---\nBe quick.\n")
    env = {"ANTHROPIC_DEFAULT_HAIKU_MODEL": None}
    if source == "dotenv":
        write(workdir / ".env", "ANTHROPIC_DEFAULT_HAIKU_MODEL=my-haiku-deployment\n")
    else:
        env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = "my-haiku-deployment"
    trust(workdir, agent_home)
    fake_anthropic.reply(tool_block("Agent", {"description": "look", "prompt": "Look", "subagent_type": "quick"}))
    fake_anthropic.text("seen")
    fake_anthropic.text("done")
    r = cli("-p", "go", **env)
    assert r.code == 0, r.stderr
    first, child, _last = fake_anthropic.requests
    assert child.body["model"] == "my-haiku-deployment" and first.body["model"] != "my-haiku-deployment"


def test_dotenv_server_tools_setting_is_honoured(cli, workdir, agent_home, fake_anthropic):
    """AGENT_SERVER_TOOLS from a trusted `.env` turns the endpoint's server tools on, as the environment does."""
    write(workdir / ".env", "AGENT_SERVER_TOOLS=web_search\n")
    trust(workdir, agent_home)
    fake_anthropic.text("ok")
    r = cli("-p", "hi", AGENT_SERVER_TOOLS=None)
    assert r.code == 0, r.stderr
    names = [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    assert "web_search" in names and "WebSearch" not in names
