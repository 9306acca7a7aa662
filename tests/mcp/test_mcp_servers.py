"""The MCP client against real SDK servers (tests/mcp/servers/), over stdio and streamable HTTP on loopback.

One manager per transport is shared by the module's tests (servers are slow to start on a loaded box);
tests that break a server (crash, timeout) use their own server or run last.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from services.mcp.content import MAX_MENTION_CHARS, expand_mentions
from services.mcp.manager import McpError, McpManager
from services.mcp.prompts import find_prompt, parse_args, prompt_messages
from tests.procs import pid_alive as alive
from tools.base import SessionState, ToolContext
from tools.mcp_tool import mcp_tools

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVERS = Path(__file__).resolve().parent / "servers"
NAMES = ["calculator", "tour", "crash", "hang"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"HTTP test server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("HTTP test server did not start")




class Env:
    def __init__(self, transport: str, root: Path, manager: McpManager, pid_file: Path, procs: list[Any]):
        self.transport = transport
        self.root = root
        self.manager = manager
        self.pid_file = pid_file
        self.procs = procs

    def ctx(self) -> ToolContext:
        return ToolContext(session=SessionState(cwd=self.root), project_root=self.root)

    async def tool_call(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        return await self.manager.call_tool(server, tool, args or {})

    def tool(self, name: str) -> Any:
        return next(t for t in mcp_tools(self.manager) if t.name == name)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    transport = request.param
    root = tmp_path_factory.mktemp(f"mcp-{transport}")
    pid_file = root / "pids.txt"
    procs: list[subprocess.Popen[bytes]] = []
    servers: dict[str, Any] = {}
    if transport == "stdio":
        for name in NAMES:
            servers[name] = {"command": sys.executable, "args": [str(SERVERS / f"{name}.py")],
                             "env": {"MCP_TEST_PID_FILE": "${PID_FILE}", "SECRET_FROM_CONFIG": "${SECRET}"}}
    else:
        deadline = time.monotonic() + 90
        ports = {}
        for name in NAMES:
            port = ports[name] = free_port()
            procs.append(subprocess.Popen([sys.executable, str(SERVERS / f"{name}.py"), "http", str(port)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          env={**os.environ, "MCP_TEST_PID_FILE": str(pid_file)}))
        for proc, name in zip(procs, NAMES, strict=True):
            wait_for_port(ports[name], proc, deadline)
            servers[name] = {"type": "http", "url": "http://127.0.0.1:${PORT_" + name.upper() + "}/mcp",
                             "headers": {"X-Test": "yes"}}
    # A server that is missing its binary, in the project file; the real ones through MCP_CONFIG.
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "missing": {"command": str(root / "no-such-binary")},
        "calculator": {"command": "replaced-by-the-later-file"},
    }}))
    (root / "extra.json").write_text(json.dumps({"mcpServers": servers}))
    environ = {"MCP_CONFIG": "extra.json", "PID_FILE": str(pid_file), "SECRET": "s3cret",
               "MCP_CONNECT_TIMEOUT_MS": "90000", "MCP_CALL_TIMEOUT_MS": "30000"}
    if transport == "http":
        environ.update({f"PORT_{n.upper()}": str(ports[n]) for n in NAMES})
    manager = await McpManager.from_project(root, environ)
    try:
        yield Env(transport, root, manager, pid_file, procs)
    finally:
        await manager.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def test_servers_connect_and_failures_are_reported_once(env: Env) -> None:
    status = {name: (state, count) for name, state, count in env.manager.status()}
    assert status["calculator"] == ("connected", 6)
    assert status["tour"][0] == status["crash"][0] == status["hang"][0] == "connected"
    assert status["missing"][0].startswith("failed: ")
    missing = [w for w in env.manager.warnings if '"missing"' in w]
    assert len(missing) == 1 and "failed to connect" in missing[0]


async def test_tools_are_listed_with_normalised_names_and_schemas(env: Env) -> None:
    names = [t.name for t in mcp_tools(env.manager)]
    assert {"mcp__calculator__add", "mcp__calculator__multiply", "mcp__calculator__stats_mean_value",
            "mcp__tour__echo", "mcp__crash__crash", "mcp__hang__wait"} <= set(names)
    assert names[-2:] == ["ListMcpResources", "ReadMcpResource"]
    add = env.tool("mcp__calculator__add")
    assert add.input_schema["properties"].keys() == {"a", "b"}
    assert set(add.input_schema["required"]) == {"a", "b"}
    assert add.description == "Add two numbers."
    assert add.is_read_only({}) and not env.tool("mcp__calculator__multiply").is_read_only({})
    assert env.tool("mcp__tour__echo").is_read_only({})


async def test_calls_map_results_onto_tool_result_blocks(env: Env) -> None:
    out = await env.tool("mcp__calculator__add").call({"a": 2, "b": 3}, env.ctx())
    assert (out.is_error, out.content) == (False, [{"type": "text", "text": "5"}])
    out = await env.tool("mcp__calculator__multiply").call({"a": 4, "b": 2.5}, env.ctx())
    assert out.content == [{"type": "text", "text": "10"}]
    out = await env.tool("mcp__calculator__stats_mean_value").call({"values": [1, 2, 6]}, env.ctx())
    assert out.content == [{"type": "text", "text": "3"}]
    out = await env.tool("mcp__calculator__pixel").call({}, env.ctx())
    assert out.content[0] == {"type": "text", "text": "see below"}
    assert out.content[1]["type"] == "image" and out.content[1]["source"]["media_type"] == "image/png"


async def test_tool_errors_become_error_results(env: Env) -> None:
    out = await env.tool("mcp__calculator__divide").call({"a": 1, "b": 0}, env.ctx())
    assert out.is_error and "division by zero" in out.content[0]["text"]
    with pytest.raises(McpError, match="not found"):
        await env.manager.call_tool("nope", "x", {})


async def test_stdio_env_is_expanded_into_the_server(env: Env) -> None:
    if env.transport != "stdio":
        pytest.skip("stdio only")
    out = await env.tool("mcp__calculator__env_value").call({"name": "SECRET_FROM_CONFIG"}, env.ctx())
    assert out.content == [{"type": "text", "text": "s3cret"}]


async def test_resource_tools_list_and_read(env: Env) -> None:
    out = await env.tool("ListMcpResources").call({}, env.ctx())
    assert "tour: docs://handbook handbook (text/markdown)" in out.content
    out = await env.tool("ReadMcpResource").call({"server": "tour", "uri": "docs://handbook"}, env.ctx())
    assert out.content.startswith("# Travel handbook") and not out.is_error
    out = await env.tool("ListMcpResources").call({"server": "missing"}, env.ctx())
    assert out.is_error
    out = await env.tool("ReadMcpResource").call({"server": "missing", "uri": "x://y"}, env.ctx())
    assert out.is_error and 'MCP server "missing" is not connected' in out.content
    out = await env.tool("ReadMcpResource").call({"server": "tour", "uri": "docs://nope"}, env.ctx())
    assert out.is_error and "resources/read failed (tour)" in out.content


async def test_mentions_inject_resources_and_failures_warn(env: Env) -> None:
    out = await expand_mentions(
        env.manager,
        "Read @tour:docs://handbook, then @tour:docs://big and @calculator:x://y and @ghost:a://b; mail a@b.c",
    )
    messages, warnings = out.messages, out.warnings
    assert out.notices[0].startswith("Mounted MCP resource @tour:docs://handbook (")
    assert len(messages) == 2
    first = messages[0]["content"][0]["text"]
    assert "server=tour uri=docs://handbook" in first and "Travel handbook" in first
    second = messages[1]["content"][0]["text"]
    assert "[truncated: showing 100000 of 150000 characters" in second
    assert second.count("x") >= MAX_MENTION_CHARS
    assert len(warnings) == 2
    assert "reading MCP resource calculator:x://y failed" in warnings[0]
    assert "@ghost:a://b cannot be read" in warnings[1]


async def test_prompts_are_listed_and_fetched_with_zipped_args(env: Env) -> None:
    prompts = env.manager.prompts()
    assert [(p.server, p.name, p.arg_names) for p in prompts] == [("tour", "plan_trip", ["city", "days"])]
    assert prompts[0].description == "Plan a trip to a city."
    info = find_prompt(env.manager, "tour", "plan_trip")
    assert parse_args('"New York" days=2', info) == {"city": "New York", "days": "2"}
    out = await prompt_messages(env.manager, "tour", "plan_trip", parse_args("Paris 2", info))
    assert out.messages[0]["role"] == "user"
    assert out.messages[0]["content"][0]["text"].startswith("City=Paris; Days=2.")
    out = await prompt_messages(env.manager, "tour", "plan_trip", {"city": "Tokyo"})
    assert out.messages[0]["content"][0]["text"].startswith("City=Tokyo; Days=?.")


async def test_calls_run_concurrently_and_a_hung_call_times_out(env: Env) -> None:
    hang = env.manager.servers["hang"]
    hang.call_timeout = 1.0
    try:
        slow, quick = await asyncio.gather(
            env.tool("mcp__hang__wait").call({}, env.ctx()),
            env.manager.call_tool("hang", "quick", {}),
        )
    finally:
        hang.call_timeout = 30.0
    assert slow.is_error and "timed out after 1 s (hang)" in slow.content
    assert quick.content[0].text == "quick"
    # The server is still usable after the timeout.
    out = await env.manager.call_tool("hang", "quick", {})
    assert out.content[0].text == "quick"


async def test_a_server_that_crashes_mid_call_is_an_error_and_the_rest_go_on(env: Env) -> None:
    # Over HTTP the SDK leaves the request unanswered; the liveness ping ends it long before the timeout.
    env.manager.servers["crash"].call_timeout = 60.0
    out = await env.tool("mcp__crash__crash").call({}, env.ctx())
    assert out.is_error and "(crash)" in out.content
    assert "timed out" not in out.content, out.content
    assert "disconnected" in out.content or "Connection closed" in out.content, out.content
    out = await env.tool("mcp__calculator__add").call({"a": 1, "b": 1}, env.ctx())
    assert out.content == [{"type": "text", "text": "2"}]
    # The dead server's tools are no longer offered until it is back.
    assert "mcp__crash__ok" not in [t.name for t in mcp_tools(env.manager)]
    assert dict((n, s) for n, s, _ in env.manager.status())["crash"].startswith("failed: disconnected")
    if env.transport == "stdio":
        # A stdio server is restarted once, on the next call, with a notice; the call then works.
        env.manager.take_notices()
        out = await env.tool_call("crash", "ok")
        assert out.content[0].text == "ok"
        assert any("restarted" in text for _, text in env.manager.take_notices())
        assert "mcp__crash__ok" in [t.name for t in mcp_tools(env.manager)]
        # Only once: a second crash stays down.
        out = await env.tool("mcp__crash__crash").call({}, env.ctx())
        assert out.is_error
        with pytest.raises(McpError, match="not connected"):
            await env.manager.call_tool("crash", "ok", {})
    else:
        # The HTTP server process is gone for good: the restart fails and says so.
        with pytest.raises(McpError, match="not connected"):
            await env.manager.call_tool("crash", "ok", {})


async def test_close_stops_every_server(env: Env) -> None:
    pids = [int(p) for p in env.pid_file.read_text().split()]
    assert len(pids) >= 3
    await env.manager.close()
    states = {name: state for name, state, _ in env.manager.status()}
    assert states["calculator"] == states["tour"] == states["hang"] == "closed"
    if env.transport == "stdio":
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert [p for p in pids if alive(p)] == []
