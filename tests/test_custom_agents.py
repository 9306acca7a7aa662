"""Custom sub-agents (`.claude/agents/*.md`, `~/.claude/agents/`, `--agents`) through the real CLI.

The listing the model reads is Claude Code 2.1.332's wording, recorded from the real binary against the fake
server: `Available agent types for the Agent tool:`, one `- name: description (Tools: ...)` line per agent
sorted by name without case, `(Tools: All tools)` for a file without `tools:` and `(Tools: *)` for the
built-in general-purpose agent.
"""

from __future__ import annotations

import json
from pathlib import Path

from services.subagents import GENERAL_DESCRIPTION, LISTING_TAIL
from services.trust import trust
from tests.fake_anthropic import tool_block

REVIEWER = "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\nmodel: claude-haiku-4-5\n---\n" \
           "You are a strict reviewer.\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def agent_tool(request) -> dict:  # noqa: ANN001
    return next(t for t in request.body["tools"] if t["name"] == "Agent")


def test_project_agent_listed_run_with_its_prompt_tools_model_and_subagent_stop(cli, workdir, fake_anthropic,
                                                                               tmp_path) -> None:
    user = tmp_path / "cc"
    write(workdir / ".claude/agents/reviewer.md", REVIEWER)
    write(user / "agents/reviewer.md", "---\ndescription: the user's, shadowed\n---\nloses\n")
    write(user / "agents/helper.md", "---\nname: helper\ndescription: Helps with things\n---\nYou help.\n")
    payload = tmp_path / "subagent_stop.json"
    write(workdir / ".claude/settings.json", json.dumps({"hooks": {"SubagentStop": [
        {"hooks": [{"type": "command", "command": f"cat > {payload}"}]}]}}))
    trust(workdir, cli.agent_home)
    fake_anthropic.reply(tool_block("Agent", {"description": "review", "prompt": "Review a.py",
                                              "subagent_type": "reviewer"}))
    fake_anthropic.text("Found one bug.")
    fake_anthropic.text("The reviewer found one bug.")
    r = cli("-p", "review", CLAUDE_CONFIG_DIR=str(user))
    assert r.code == 0, r.stderr
    first, child, last = fake_anthropic.requests
    listing = agent_tool(first)["description"]
    assert ("Available agent types for the Agent tool:\n"
            f"- general-purpose: {GENERAL_DESCRIPTION} (Tools: *)\n"
            "- helper: Helps with things (Tools: All tools)\n"
            "- reviewer: Reviews code for bugs (Tools: Read, Grep)\n\n" + LISTING_TAIL) in listing
    assert "subagent_type" in agent_tool(first)["input_schema"]["properties"]
    assert "You are a strict reviewer." in json.dumps(child.body["system"]) and "loses" not in json.dumps(child.body)
    assert child.body["model"] == "claude-haiku-4-5" and first.body["model"] != "claude-haiku-4-5"
    assert sorted(t["name"] for t in child.body["tools"]) == ["Grep", "Read"]
    assert "Found one bug." in json.dumps(last.messages[-1])
    hook_input = json.loads(payload.read_text())
    assert hook_input["hook_event_name"] == "SubagentStop" and hook_input["agent_type"] == "reviewer"
    sub = Path(hook_input["agent_transcript_path"])
    assert sub.is_file() and sub.parent.parent.parent.name == hook_input["session_id"]  # beside the parent's
    assert json.loads(sub.read_text().splitlines()[0])["agent_type"] == "reviewer"


def test_unknown_agent_type_is_an_error_result(cli, workdir, fake_anthropic) -> None:
    write(workdir / ".claude/agents/reviewer.md", REVIEWER)
    trust(workdir, cli.agent_home)
    fake_anthropic.reply(tool_block("Agent", {"description": "x", "prompt": "y", "subagent_type": "nope"}))
    fake_anthropic.text("ok")
    r = cli("-p", "go")
    assert r.code == 0, r.stderr
    result = fake_anthropic.requests[1].messages[-1]["content"][0]
    assert result["is_error"] and "Agent type 'nope' not found. Available agents: general-purpose, reviewer" \
        in json.dumps(result)


def test_agents_flag_json_and_a_bad_one(cli, workdir, fake_anthropic) -> None:
    spec = {"checker": {"description": "Checks things", "prompt": "You check.", "tools": ["Read"]}}
    fake_anthropic.reply(tool_block("Agent", {"description": "c", "prompt": "check", "subagent_type": "checker"}))
    fake_anthropic.text("checked")
    fake_anthropic.text("all good")
    r = cli("-p", "go", "--agents", json.dumps(spec))
    assert r.code == 0, r.stderr
    assert "- checker: Checks things (Tools: Read)" in agent_tool(fake_anthropic.requests[0])["description"]
    assert "You check." in json.dumps(fake_anthropic.requests[1].body["system"])
    fake_anthropic.text("fine")
    bad = cli("-p", "go", "--agents", '{"x": 1}')
    assert bad.code == 0 and "notice: --agents: 'x' needs a string description and prompt" in bad.stderr
