"""Tool search through the real CLI: the `many` test server's tools deferred behind ToolSearch, loaded by
`select:` and by keywords, called, kept across a resume; the request shape compared with Claude Code
2.1.332's (tests/fixtures/claude_code/tool_search.json); the cached prefix never rewritten by a load."""

from __future__ import annotations

import json
import sys
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
    out = run(cli, cfg, "--allowedTools", "mcp__many__get_invoice", ENABLE_TOOL_SEARCH="true")
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
