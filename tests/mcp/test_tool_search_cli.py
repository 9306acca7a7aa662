"""Tool search through the real CLI: the `many` test server's tools deferred behind ToolSearch, loaded by
`select:` and by keywords, called, kept across a resume; the request shape compared with Claude Code
2.1.332's (tests/fixtures/claude_code/tool_search.json); the cached prefix never rewritten by a load."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from test_mcp_servers import SERVERS

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic, Recorded, tool_block

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "claude_code" / "tool_search.json").read_text())


def config(tmp_path: Path, count: int, name: str = "many", **extra: Any) -> str:
    path = tmp_path / f"mcp-{name}.json"
    path.write_text(json.dumps({"mcpServers": {name: {
        "command": sys.executable, "args": [str(SERVERS / "many.py")],
        "env": {"MANY_TOOLS": str(count), **extra.pop("env", {})}, **extra}}}))
    return str(path)


def run(cli: CliRunner, cfg: str, *args: str, **env: str) -> Any:
    result = cli("-p", "Do the task.", "--output-format", "json", "--mcp-config", cfg, *args, timeout=120,
                 MCP_CONNECT_TIMEOUT_MS="60000", MCP_STARTUP_WAIT_MS="60000", **env)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def names(req: Recorded) -> list[str]:
    return [t["name"] for t in req.body["tools"]]


def announcements(req: Recorded) -> list[str]:
    return [b["text"] for m in req.messages if m["role"] == "user" for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "text" and FIXTURE["announcement"]["header"] in b["text"]]


def rendered(req: Recorded) -> str:
    """The request in the order the API renders it, deferred tools left out (they are rendered where
    referenced), cache marks dropped: what a prompt cache compares."""
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k != "cache_control"}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    tools = [t for t in req.body["tools"] if not t.get("defer_loading")]
    parts = [json.dumps(clean(t), sort_keys=True) for t in tools]
    parts += [json.dumps(clean(req.body.get("system")), sort_keys=True)]
    parts += [json.dumps(clean(m), sort_keys=True) for m in req.messages]
    return "\n".join(parts)


def test_deferred_tools_load_by_select_and_keywords_and_are_called(
        cli: CliRunner, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cfg = config(tmp_path, 120)
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "select:mcp__many__get_invoice"}))
    fake_anthropic.reply(tool_block("mcp__many__get_invoice", {"target": "INV-1"}))
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "weather forecast", "max_results": 3}))
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "zzzz"}))
    fake_anthropic.text("Final answer.")
    out = run(cli, cfg, "--allowedTools", "mcp__many__get_invoice")  # the default defers 120
    assert out["result"] == "Final answer."
    reqs = fake_anthropic.requests
    first = reqs[0]
    # Claude Code's ToolSearch tool, byte for byte, and its placeholder; no MCP schema up front.
    tools = {t["name"]: t for t in first.body["tools"]}
    assert {k: v for k, v in tools["ToolSearch"].items() if k != "cache_control"} == FIXTURE["tool_search_tool"]
    assert tools["DeferredToolPlaceholder"] == FIXTURE["placeholder_tool"]
    assert not [n for n in tools if n.startswith("mcp__")]
    assert FIXTURE["beta"] in first.headers["anthropic-beta"]
    (ann,) = announcements(first)
    listed = [line for line in ann.splitlines() if line.startswith("mcp__many__")]
    assert len(listed) == 120 and "mcp__many__get_invoice" in listed
    # select: a tool_reference, Claude Code's note after it; the tool then in `tools`, deferred.
    result = reqs[1].messages[-2]["content"][0]
    assert result["content"] == FIXTURE["results"][0]["content"]
    assert reqs[1].messages[-1]["content"][0]["text"] == "Tool loaded."
    loaded = next(t for t in reqs[1].body["tools"] if t["name"] == "mcp__many__get_invoice")
    assert loaded["defer_loading"] is True and set(loaded["input_schema"]["properties"]) == {"target", "limit"}
    # The call reached the server.
    call = reqs[2].messages[-1]["content"][0]
    assert "get_invoice ran on INV-1" in json.dumps(call["content"]) and not call.get("is_error")
    # Keywords: the recorded ranking; no match: Claude Code's text.
    assert reqs[3].messages[-2]["content"][0]["content"] == FIXTURE["results"][1]["content"]
    assert reqs[4].messages[-1]["content"][0]["content"] == FIXTURE["results"][3]["content"]
    # Loads never rewrite what an earlier request's cache holds.
    for a, b in zip(reqs, reqs[1:], strict=False):
        assert rendered(b).startswith(rendered(a))


def first_request_tools(cli: CliRunner, fake: FakeAnthropic, cfg: str, **env: str) -> tuple[list[str], Recorded, Any]:
    fake.text("Done.")
    result = cli("-p", "Do the task.", "--output-format", "json", "--mcp-config", cfg, timeout=120,
                 MCP_CONNECT_TIMEOUT_MS="60000", MCP_STARTUP_WAIT_MS="60000", **env)
    assert result.code == 0, result.stderr
    req = fake.requests[-1]
    return names(req), req, result


def test_modes_decide_what_is_deferred(cli: CliRunner, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    many, three = config(tmp_path, 120), config(tmp_path, 3, name="few")
    # The default: 120 tools are deferred (at most ten schemas up front: none here, all 120 named); three
    # go whole (Claude Code 2.1.332 defers them too, at the cost of a search round trip).
    tools, req, _ = first_request_tools(cli, fake_anthropic, many)
    assert not [n for n in tools if n.startswith("mcp__")] and "ToolSearch" in tools
    (ann,) = announcements(req)
    assert sum(line.startswith("mcp__many__") for line in ann.splitlines()) == 120
    assert FIXTURE["beta"] in req.headers.get("anthropic-beta", "")
    assert FIXTURE["modes"]["three_tools"]["mcp_tools_whole"] == 0  # what the binary does by default
    tools, req, _ = first_request_tools(cli, fake_anthropic, three)
    assert sum(n.startswith("mcp__") for n in tools) == 3 and "ToolSearch" not in tools
    assert not announcements(req) and FIXTURE["beta"] not in req.headers.get("anthropic-beta", "")
    # `auto` is Claude Code's share rule (10% of the window): 120 small tools fit whole, as in the binary.
    assert FIXTURE["modes"]["env_auto"]["mcp_tools_whole"] == 120
    tools, _, _ = first_request_tools(cli, fake_anthropic, many, ENABLE_TOOL_SEARCH="auto")
    assert sum(n.startswith("mcp__") for n in tools) == 120 and "ToolSearch" not in tools
    # Three small tools stay whole under auto:1 too (deferring them would cost more than it saves); 120 are
    # deferred.
    tools, _, _ = first_request_tools(cli, fake_anthropic, three, ENABLE_TOOL_SEARCH="auto:1")
    assert sum(n.startswith("mcp__") for n in tools) == 3 and "ToolSearch" not in tools
    tools, req, _ = first_request_tools(cli, fake_anthropic, many, ENABLE_TOOL_SEARCH="auto:1")
    assert not [n for n in tools if n.startswith("mcp__")] and "ToolSearch" in tools and announcements(req)
    # true defers even three; false never defers.
    tools, _, _ = first_request_tools(cli, fake_anthropic, three, ENABLE_TOOL_SEARCH="true")
    assert "ToolSearch" in tools and not [n for n in tools if n.startswith("mcp__")]
    tools, _, _ = first_request_tools(cli, fake_anthropic, many, ENABLE_TOOL_SEARCH="false")
    assert sum(n.startswith("mcp__") for n in tools) == 120 and "ToolSearch" not in tools
    # A bad value: one warning line, the default.
    tools, _, result = first_request_tools(cli, fake_anthropic, three, ENABLE_TOOL_SEARCH="auto:lots")
    assert 'ENABLE_TOOL_SEARCH value "auto:lots": expected auto:N where N is a number.' in result.stderr
    assert "Traceback" not in result.stderr and sum(n.startswith("mcp__") for n in tools) == 3


def test_always_load_keeps_tools_whole(cli: CliRunner, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    per_tool = config(tmp_path, 120, env={"MANY_ALWAYS_LOAD": "get_invoice"})
    tools, req, _ = first_request_tools(cli, fake_anthropic, per_tool, ENABLE_TOOL_SEARCH="true")
    assert [n for n in tools if n.startswith("mcp__")] == ["mcp__many__get_invoice"]
    assert "mcp__many__get_invoice" not in announcements(req)[0].splitlines()
    server = config(tmp_path, 120, name="loud", alwaysLoad=True)
    tools, req, _ = first_request_tools(cli, fake_anthropic, server, ENABLE_TOOL_SEARCH="true")
    assert sum(n.startswith("mcp__loud__") for n in tools) == 120 and not announcements(req)
    bad = config(tmp_path, 3, name="bad", alwaysLoad="yes")
    fake_anthropic.text("Done.")
    result = cli("-p", "Do the task.", "--mcp-config", bad, timeout=120)
    assert result.code == 0 and '"alwaysLoad" must be true or false' in result.stderr
    assert "Traceback" not in result.stderr


def test_loaded_tools_stay_callable_after_resume(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                                 tmp_path: Path) -> None:
    cfg = config(tmp_path, 120)
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "+invoice export", "max_results": 2}))
    fake_anthropic.text("Loaded.")
    out = run(cli, cfg, ENABLE_TOOL_SEARCH="true")
    first = fake_anthropic.requests[1]
    assert first.messages[-2]["content"][0]["content"] == [
        {"type": "tool_reference", "tool_name": "mcp__many__export_invoice"},
        {"type": "tool_reference", "tool_name": "mcp__many__archive_invoice"}]
    fake_anthropic.reply(tool_block("mcp__many__archive_invoice", {"target": "INV-9"}))
    fake_anthropic.text("Archived.")
    resumed = run(cli, cfg, "--resume", out["session_id"], "--allowedTools", "mcp__many__archive_invoice",
                  ENABLE_TOOL_SEARCH="true")
    assert resumed["result"] == "Archived."
    again = fake_anthropic.requests[2]
    deferred = [t["name"] for t in again.body["tools"] if t.get("defer_loading")]
    assert deferred == ["DeferredToolPlaceholder", "mcp__many__export_invoice", "mcp__many__archive_invoice"]
    assert len(announcements(again)) == 1  # the resumed history's announcement, not a second one
    call = fake_anthropic.requests[3].messages[-1]["content"][0]
    assert "archive_invoice ran on INV-9" in json.dumps(call["content"])
    assert rendered(fake_anthropic.requests[3]).startswith(rendered(again))


def test_a_late_server_is_announced_at_the_end(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                               tmp_path: Path) -> None:
    path, go, up = tmp_path / "two.json", cli.cwd / "go", cli.cwd / "up"
    server = {"command": sys.executable, "args": [str(SERVERS / "many.py")]}
    path.write_text(json.dumps({"mcpServers": {
        "early": {**server, "env": {"MANY_TOOLS": "60"}},
        "late": {**server, "env": {"MANY_TOOLS": "5", "MANY_PREFIX": "late_", "MANY_START_AFTER": str(go),
                                   "MANY_UP_FILE": str(up)}}}}))
    # The late server starts when the model's command says so, and is connected before the command ends.
    wait = f"touch {go}; while [ ! -e {up} ]; do sleep 0.2; done; sleep 3"
    fake_anthropic.reply(tool_block("Bash", {"command": wait, "description": "wait"}))
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "select:mcp__late__late_get_issue"}))
    fake_anthropic.text("Done.")
    result = cli("-p", "Do the task.", "--output-format", "json", "--mcp-config", str(path),
                 "--dangerously-skip-permissions", timeout=180, MCP_CONNECT_TIMEOUT_MS="120000",
                 MCP_STARTUP_WAIT_MS="10000", ENABLE_TOOL_SEARCH="true")
    assert result.code == 0, result.stderr
    first, second, third = fake_anthropic.requests
    assert len(announcements(first)) == 1 and "mcp__late__" not in announcements(first)[0]
    late = announcements(second)
    assert len(late) == 2 and late[1].count("mcp__late__") == 5 and "mcp__early__" not in late[1]
    assert not [n for n in names(second) if n.startswith("mcp__")]  # the late tools deferred too
    assert names(second)[: names(first).index("DeferredToolPlaceholder")] == \
        names(first)[: names(first).index("DeferredToolPlaceholder")]
    assert third.messages[-2]["content"][0]["content"] == [
        {"type": "tool_reference", "tool_name": "mcp__late__late_get_issue"}]
    assert rendered(second).startswith(rendered(first)) and rendered(third).startswith(rendered(second))


def test_the_repl_defers_and_loads_too(cli: CliRunner, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("pexpect")
    from tests.test_repl_pty import finish, run_line, spawn

    cfg = config(tmp_path, 40)
    fake_anthropic.reply(tool_block("ToolSearch", {"query": "select:mcp__many__get_invoice"}))
    fake_anthropic.reply(tool_block("mcp__many__get_invoice", {"target": "INV-7"}))
    fake_anthropic.text("Invoice fetched.")
    child = spawn(cli, "--mcp-config", cfg, "--allowedTools", "mcp__many__get_invoice",
                  ENABLE_TOOL_SEARCH="true", MCP_CONNECT_TIMEOUT_MS="60000")
    for _ in range(60):  # until the server is connected (its tools then join before the first request)
        run_line(child, "/mcp", "many (stdio")
        if re.search(r"many \(stdio, [a-z-]+\): connected", child.screen.text()):
            break
        time.sleep(1)
    run_line(child, "get the invoice", "Invoice fetched.")
    child.send("/exit\r")
    assert finish(child) == 0
    first, second, third = fake_anthropic.requests
    assert "ToolSearch" in names(first) and not [n for n in names(first) if n.startswith("mcp__")], names(first)
    assert len(announcements(first)) == 1
    assert "mcp__many__get_invoice" in [t["name"] for t in second.body["tools"] if t.get("defer_loading")]
    assert "get_invoice ran on INV-7" in json.dumps(third.messages[-1]["content"])
    assert rendered(second).startswith(rendered(first)) and rendered(third).startswith(rendered(second))


def test_an_unloaded_deferred_tool_called_anyway_runs(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                                      tmp_path: Path) -> None:
    """Claude Code 2.1.332 runs a deferred tool the model calls without loading it (recorded: `forms`);
    so do we: the permission rules still apply."""
    cfg = config(tmp_path, 120)
    fake_anthropic.reply(tool_block("mcp__many__get_invoice", {"target": "INV-3"}))
    fake_anthropic.reply(tool_block("mcp__many__delete_invoice", {"target": "INV-3"}))
    fake_anthropic.text("Done.")
    run(cli, cfg, "--allowedTools", "mcp__many__get_invoice", ENABLE_TOOL_SEARCH="true")
    ran = fake_anthropic.requests[1].messages[-1]["content"][0]
    assert "get_invoice ran on INV-1" in FIXTURE["unloaded_call_result"]
    assert "get_invoice ran on INV-3" in json.dumps(ran["content"]) and not ran.get("is_error")
    denied = fake_anthropic.requests[2].messages[-1]["content"][0]
    assert "delete_invoice ran" not in json.dumps(denied["content"])
