"""Tool search's pure parts: ENABLE_TOOL_SEARCH's values, the decision, the query forms and ranking
(checked against Claude Code 2.1.332's recorded answers), the request's tools and the tools' cache mark."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from services.cache_breakpoints import place_breakpoints
from services.mcp import deferral
from services.mcp.deferral import Candidate, SearchMode, parse_mode
from services.mcp.tool_rank import Entry, search
from services.server_tools import betas_for
from tests.mcp.servers.many import tool_names
from tools.base import SessionState, ToolContext
from tools.tool_search import ToolSearchSession, ToolSearchTool

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "claude_code" / "tool_search.json").read_text())


@pytest.mark.parametrize(("value", "mode", "warned"), [
    (None, SearchMode("default", 10), False), ("", SearchMode("default", 10), False),
    ("auto", SearchMode("auto", 10), False),
    ("auto:25", SearchMode("auto", 25), False), ("auto:0", SearchMode("on", 0), False),
    ("auto:100", SearchMode("off", 100), False), ("auto:250", SearchMode("off", 100), False),
    ("auto:-5", SearchMode("on", 0), False), ("auto:x", SearchMode("auto", 10), True),
    ("auto:nan", SearchMode("auto", 10), True), ("true", SearchMode("on"), False), ("force", SearchMode("on"), False),
    ("FALSE", SearchMode("off"), False), ("maybe", SearchMode("default", 10), True),
])
def test_modes(value: str | None, mode: SearchMode, warned: bool) -> None:
    got, warning = parse_mode(value)
    assert got == mode and (warning is not None) == warned


def spec(name: str, chars: int = 300) -> dict:
    return {"name": name, "description": "d" * chars, "input_schema": {"type": "object", "properties": {}}}


def test_decision_threshold_overhead_and_latch() -> None:
    few = [Candidate(spec(f"mcp__s__t{i}"), True) for i in range(3)]
    many = [Candidate(spec(f"mcp__s__t{i}", 2000), True) for i in range(100)]  # ~210k units
    builtin = [Candidate(spec("Read"), False)]
    assert deferral.deferred_names(builtin + few, [], 1000, SearchMode("auto", 1)) == []  # not worth it
    assert deferral.deferred_names(builtin + few, [], 1000, SearchMode("on")) == [c.name for c in few]
    assert len(deferral.deferred_names(many, [], 200_000, SearchMode("auto", 10))) == 100  # 210k > 80k units
    assert deferral.deferred_names(many, [], 200_000, SearchMode("auto", 50)) == []  # 210k < 400k units
    # The default: up to ten tools whole whatever the window; more are deferred when that saves anything.
    ten = [Candidate(spec(f"mcp__s__t{i}"), True) for i in range(10)]
    eleven = [Candidate(spec(f"mcp__s__t{i}"), True) for i in range(11)]
    assert deferral.deferred_names(builtin + ten, [], 1_000_000, SearchMode()) == []
    assert deferral.deferred_names(builtin + eleven, [], 1_000_000, SearchMode()) == [c.name for c in eleven]
    assert deferral.deferred_names(builtin + eleven, [], 1_000_000, SearchMode("auto")) == []
    assert deferral.deferred_names(builtin + few, [], 1000, SearchMode()) == []  # saves less than it costs
    assert len(deferral.deferred_names(many[:5], [], 20_000, SearchMode())) == 5  # 5 large ones: over 10%
    # A session that announced tools keeps deferring, new ones included; off stops it.
    assert deferral.deferred_names(few, ["mcp__s__t0"], 1_000_000, SearchMode("auto", 90)) == [c.name for c in few]
    assert deferral.deferred_names(few, ["mcp__s__t0"], 1000, SearchMode("off")) == []


ENTRIES = [Entry(f"mcp__many__{n}", f"{n.split('_')[0].capitalize()} a {n.partition('_')[2].replace('_', ' ')} "
                 f"in the tracker. Use it to {n.split('_')[0]} {n.partition('_')[2].replace('_', ' ')} records "
                 f"by target id.") for n in tool_names(120)]


def test_ranking_matches_claude_code() -> None:
    for case in FIXTURE["results"]:
        query, limit = case["input"]["query"], case["input"].get("max_results", 5)
        expected = [r["tool_name"] for r in case["content"]] if isinstance(case["content"], list) else []
        assert search(query, ENTRIES, limit) == expected, query


def test_select_and_odd_queries() -> None:
    assert search("select:MCP__MANY__GET_INVOICE, mcp__many__get_invoice,,nope", ENTRIES, 5) == [
        "mcp__many__get_invoice"]
    assert search("   ", ENTRIES, 5) == [] and search("+", ENTRIES, 5) == []
    assert len(search("invoice", ENTRIES, 10_000)) == 10  # every invoice tool, capped by the pool
    assert search("+nothing_like_this", ENTRIES, 5) == []


def run_tool(tool_input: dict, catalog: list[Entry]) -> object:
    ctx = ToolContext(project_root=Path.cwd(), session=SessionState(cwd=Path.cwd()))
    ctx.session.tool_search = ToolSearchSession(catalog=catalog)
    return asyncio.run(ToolSearchTool().call(tool_input, ctx))


@pytest.mark.parametrize("bad", [{}, {"query": ""}, {"query": 3}, {"query": "x", "max_results": 0},
                                 {"query": "x", "max_results": "5"}, {"query": "x", "max_results": True},
                                 {"query": "x", "max_results": float("nan")}])
def test_bad_input_is_an_error_result(bad: dict) -> None:
    out = run_tool(bad, ENTRIES)
    assert out.is_error and "<tool_use_error>" in out.content


def test_tool_results_and_request_tools() -> None:
    out = run_tool({"query": "select:mcp__many__get_invoice"}, ENTRIES)
    assert out.content == FIXTURE["results"][0]["content"] and not out.is_error
    assert out.new_messages[0]["content"][0]["text"] == "Tool loaded."
    assert run_tool({"query": "zzzz"}, ENTRIES).content == "No matching deferred tools found"
    specs = [spec("Read"), spec("ToolSearch"), spec("mcp__a__x"), spec("mcp__a__y")]
    history = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "tool_reference", "tool_name": "mcp__a__y"}, {"type": "tool_reference", "tool_name": "gone"}]}]}]
    sent = deferral.request_tools(specs, ["mcp__a__x", "mcp__a__y"], deferral.loaded_names(history))
    assert [t["name"] for t in sent] == ["Read", "ToolSearch", "DeferredToolPlaceholder", "mcp__a__y"]
    assert sent[-1]["defer_loading"] is True and "defer_loading" not in specs[3]
    assert FIXTURE["beta"] in betas_for(sent) and FIXTURE["beta"] not in betas_for(specs)
    # The tools' cache mark sits on the last tool rendered in the prefix, never on a deferred one.
    _, marked, _ = place_breakpoints("sys", sent, [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert [t["name"] for t in marked if "cache_control" in t] == ["ToolSearch"]


def test_a_loaded_tool_whose_server_left_stays_listed() -> None:
    from tools.mcp_tool import McpTool
    from tools.tool_search import plan_request

    class Info:
        def __init__(self, name: str) -> None:
            self.name, self.description, self.inputSchema, self.meta = name, f"{name} it", {"type": "object"}, None

    tools = [McpTool(None, "s", Info(f"t{i}"), f"mcp__s__t{i}") for i in range(3)]
    ctx = ToolContext(project_root=Path.cwd(), session=SessionState(cwd=Path.cwd()))
    ctx.session.tool_search = ToolSearchSession(SearchMode("on"))
    specs = [t.to_api() for t in tools]
    news, _ = plan_request(tools, specs, [], ctx, 200_000)
    history = [*news, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": [
        {"type": "tool_reference", "tool_name": "mcp__s__t1"}]}]}]
    _, sent = plan_request(tools, specs, history, ctx, 200_000)
    assert [t["name"] for t in sent if t.get("defer_loading")] == ["DeferredToolPlaceholder", "mcp__s__t1"]
    left = [t for t in tools if t.name != "mcp__s__t1"]
    again, sent = plan_request(left, [t.to_api() for t in left], history, ctx, 200_000)
    assert not again and [t["name"] for t in sent if t.get("defer_loading")] == [
        "DeferredToolPlaceholder", "mcp__s__t1"]
