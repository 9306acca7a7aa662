"""Hooks in the REPL, through a real terminal: a PreToolUse "ask" puts its reason in the permission question
(even where a rule allows the call) and Yes runs the call; an Elicitation hook answers an MCP server's
question in place of the form, which is never shown."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from services.trust import trust
from tests.fake_anthropic import tool_block
from tests.fixtures.claude_code.record_elicitation import TOOL, mcp_config

pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import PROMPT_READY, finish, run_line, spawn, wait_screen  # noqa: E402


def test_pre_tool_use_ask_is_the_repls_question(cli, fake_anthropic) -> None:
    proj = Path(cli.cwd)
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                  "permissionDecisionReason": "the hook wants a person to look"}}
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(touch:*)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"echo '{json.dumps(ask)}'"}]}]}}))
    trust(proj, cli.agent_home)
    fake_anthropic.reply(tool_block("Bash", {"command": "touch made.txt", "description": "Make it"}))
    fake_anthropic.text("Made.")
    child = spawn(cli)
    child.send("make it\r")
    child.expect_exact("Do you want to proceed?")
    wait_screen(child, "the hook wants a person to look")
    child.send("\r")  # Enter: Yes
    child.expect_exact("Made.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (proj / "made.txt").exists()


def test_an_elicitation_hook_answers_for_the_user(cli, fake_anthropic, tmp_path) -> None:
    proj = Path(cli.cwd)
    answer = {"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                     "content": {"name": "Ada", "age": 36}}}
    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Elicitation": [
        {"matcher": "asks", "hooks": [{"type": "command", "command": f"cat > /dev/null; echo '{json.dumps(answer)}'"}]}]}}))
    trust(proj, cli.agent_home)
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps(mcp_config(sys.executable)))
    fake_anthropic.reply(tool_block(TOOL, {}))
    fake_anthropic.text("Greeted.")
    child = spawn(cli, "--mcp-config", str(cfg), "--allowedTools", TOOL, MCP_CONNECT_TIMEOUT_MS="60000")
    for _ in range(60):  # until the server is connected (its tools then join the first request)
        run_line(child, "/mcp", "asks (stdio")
        if re.search(r"asks \(stdio, [a-z-]+\): connected", child.screen.text()):
            break
        time.sleep(1)
    run_line(child, "ask my name", "Greeted.")
    screen = child.screen.text()
    child.send("\x04")
    assert finish(child) == 0
    assert "Who are you?" not in screen  # the form was never put
    (result,) = [b for b in fake_anthropic.requests[1].messages[-1]["content"] if b.get("type") == "tool_result"]
    assert "hello Ada (36)" in json.dumps(result)
