"""MCP in the real REPL on a pseudo-terminal (pexpect): a prompt command with a mounted resource, an MCP
tool with progress after a permission question, and `/mcp`, against real servers and the fake API."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, tool_block
from tests.test_repl_pty import PROMPT_READY, finish, run_line, spawn

pexpect = pytest.importorskip("pexpect")
SERVERS = Path(__file__).resolve().parent / "servers"


def test_prompt_tool_progress_and_status_in_a_terminal(cli, workdir: Path, fake_anthropic: FakeAnthropic) -> None:
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "templates": {"command": sys.executable, "args": [str(SERVERS / "templates.py")]}}}))
    from services.trust import trust

    trust(workdir, Path(cli.agent_home))  # a project's .mcp.json is read only in a trusted folder
    fake_anthropic.text("Reviewed alpha.")
    fake_anthropic.reply("Working.", tool_block("mcp__templates__slow", {"steps": 3}, id="toolu_slow"))
    fake_anthropic.text("All done.")
    child = spawn(cli, MCP_TIMEOUT="90000")
    try:
        run_line(child, '/templates:review alpha tone="very dry"',
                 "Mounted MCP resource @templates:docs://intro", "Reviewed alpha.")
        child.send("run the slow tool\r")
        child.expect_exact("Do you want to proceed?")
        child.send("1")
        child.expect_exact("mcp__templates__slow")
        child.expect_exact("progress 3/3 step 3")
        child.expect_exact("⎿  done 3")  # the result itself, under the call
        child.expect_exact("All done.")
        child.expect_exact(PROMPT_READY)
        run_line(child, "/mcp", "templates (stdio, project): connected", "· mcp__templates__slow")
        child.sendcontrol("d")
        assert finish(child) == 0
    finally:
        if child.isalive():
            child.terminate(force=True)
    first = fake_anthropic.requests[0]
    assert [m["role"] for m in first.messages] == ["user", "user", "assistant", "user"]
    result = fake_anthropic.requests[2].messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_slow" and result["content"] == [{"type": "text", "text": "done 3"}]
