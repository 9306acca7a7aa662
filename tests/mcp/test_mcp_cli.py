"""MCP through the real CLI (one-shot): a stdio server and a streamable HTTP server from `.mcp.json`,
a tool call answered by the server, an @mention injected before the prompt, a bad server warned about once,
and no server process left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_mcp_servers import SERVERS, alive, free_port, wait_for_port

from services.messages import tool_results
from services.trust import trust
from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic, tool_block


def test_one_shot_uses_stdio_and_http_mcp_servers(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    pid_file = tmp_path / "pids.txt"
    port = free_port()
    http = subprocess.Popen([sys.executable, str(SERVERS / "tour.py"), "http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
            "calc": {"command": sys.executable, "args": [str(SERVERS / "calculator.py")],
                     "env": {"MCP_TEST_PID_FILE": "${PID_FILE}"}},
            "tour": {"type": "http", "url": "http://127.0.0.1:${TOUR_PORT}/mcp"},
            "broken": {"args": ["no command"]},
        }}))
        trust(project, home)  # a project's .mcp.json starts servers only in a trusted folder
        wait_for_port(port, http, time.monotonic() + 90)
        fake_anthropic.reply("Adding.", tool_block("mcp__calc__add", {"a": 2, "b": 3}, id="toolu_mcp1"))
        fake_anthropic.text("2 + 3 = 5")
        result = CliRunner(home, project, fake_anthropic)(
            "--output-format", "json", "Follow @tour:docs://handbook and add 2 and 3", timeout=180,
            PID_FILE=str(pid_file), TOUR_PORT=str(port), MCP_CONNECT_TIMEOUT_MS="90000",
            MCP_STARTUP_WAIT_MS="90000",  # this test wants the tools in the first request
        )
        assert result.code == 0, result.stderr
        assert json.loads(result.stdout)["result"] == "2 + 3 = 5"
        assert result.stderr.count('"broken"') == 1 and "needs a non-empty \"command\"" in result.stderr
        first, second = fake_anthropic.requests
        tools = {t["name"]: t for t in first.body["tools"]}
        assert {"mcp__calc__add", "mcp__calc__stats_mean_value", "mcp__tour__echo",
                "ListMcpResources", "ReadMcpResource"} <= set(tools)
        assert set(tools["mcp__calc__add"]["input_schema"]["properties"]) == {"a", "b"}
        texts = [b.get("text", "") for m in first.messages for b in m["content"] if isinstance(b, dict)]
        injected = next(t for t in texts if "server=tour uri=docs://handbook" in t)
        assert "Travel handbook" in injected
        assert texts[-1] == "Follow @tour:docs://handbook and add 2 and 3"
        (res,) = tool_results(second.messages[-1])
        assert res["tool_use_id"] == "toolu_mcp1" and not res.get("is_error")
        assert res["content"] == [{"type": "text", "text": "5"}]
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and not [p for p in pids if alive(p)]
    finally:
        http.terminate()
        try:
            http.wait(10)
        except subprocess.TimeoutExpired:
            http.kill()
            http.wait()
    assert os.path.exists(pid_file)
