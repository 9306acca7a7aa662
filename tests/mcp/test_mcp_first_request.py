"""MCP tools in the first request of `agent -p`, as Claude Code 2.1.332 does it (recorded: with a server that
never answers, its first request left after MCP_TIMEOUT, 30 s by default and 5 s with MCP_TIMEOUT=5000).

Servers that settle within the bound are in the first request; a server that fails is on stderr and never
holds the run past the bound; a server still connecting can be waited for with WaitForMcpServers."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic, tool_block
from tests.mcp.test_mcp_oneshot import configure


def test_ready_servers_tools_are_in_the_first_request(cli: CliRunner, workdir: Path,
                                                     fake_anthropic: FakeAnthropic) -> None:
    configure(workdir, {"calc": ["calculator.py"]})
    fake_anthropic.text("ok")
    r = cli("-p", "add", "--output-format", "stream-json", "--verbose", timeout=120)
    assert r.code == 0, r.stderr
    names = [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    assert "mcp__calc__add" in names and "WaitForMcpServers" not in names  # nothing left to wait for
    init = json.loads(r.stdout.splitlines()[0])
    assert init["mcp_servers"] == [{"name": "calc", "status": "connected"}]


def test_a_server_that_never_answers_fails_at_its_bound(cli: CliRunner, workdir: Path,
                                                       fake_anthropic: FakeAnthropic) -> None:
    configure(workdir, {"silent": ["hang.py", "silent"]})
    fake_anthropic.text("ok")
    r = cli("-p", "hi", timeout=120, MCP_TIMEOUT="2000")
    assert r.code == 0, r.stderr
    names = [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    assert not any(n.startswith("mcp__silent") for n in names) and "WaitForMcpServers" not in names
    assert "silent" in r.stderr and "timed out" in r.stderr  # the failure is on stderr


def test_wait_for_mcp_servers_brings_a_slow_servers_tools(cli: CliRunner, workdir: Path,
                                                         fake_anthropic: FakeAnthropic) -> None:
    configure(workdir, {"calc": ["calculator.py"]})
    fake_anthropic.reply(tool_block("WaitForMcpServers", {"servers": ["calc", "nope"]}))
    fake_anthropic.text("done")
    # A zero wait: the first request leaves at once, with calc still connecting.
    r = cli("-p", "add", timeout=120, MCP_STARTUP_WAIT_MS="0")
    assert r.code == 0, r.stderr
    first, second = fake_anthropic.requests
    wait = next(t for t in first.body["tools"] if t["name"] == "WaitForMcpServers")
    assert wait["description"].startswith("Wait for MCP servers that are still connecting and whose tools are not\n")
    assert wait["input_schema"]["properties"]["servers"]["type"] == "array"
    result = second.messages[-1]["content"][0]
    report = json.loads(result["content"] if isinstance(result["content"], str) else result["content"][0]["text"])
    assert report["connected"] == ["calc"] and report["unknown"] == ["nope"] and report["ready"] is False
    assert "mcp__calc__add" in [t["name"] for t in second.body["tools"]]
