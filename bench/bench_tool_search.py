"""Tool search: what deferring MCP tools saves, through the real CLI against the fake API.

1, 5 and 20 MCP servers of 30 tools each (tests/mcp/servers/many.py); a one-shot session of 29 MCP tool calls
(6 distinct tools) and a final answer, run twice: all schemas in (`ENABLE_TOOL_SEARCH=false`) and deferred
(`ENABLE_TOOL_SEARCH=true`: the same calls after two ToolSearch `select:` calls, three tools each).

Per run, from the requests the fake API received: the first request's size (units, 4 ~ 1 token); the
session's cache-weighted input: each request's part that is a prefix of the previous one *as the API renders
it* (tools shown in the prefix, system, messages; deferred tools are rendered where referenced) counts as a
cache read (x0.1), the rest as a cache write (x1.25), the first request all write; and the round trips.

`python bench/bench_tool_search.py` (about two minutes: 20 servers start in each of two runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT, header

from services.tokens import text_units
from tests.fake_anthropic import FakeAnthropic, Recorded, tool_block

SERVER = ROOT / "tests" / "mcp" / "servers" / "many.py"
TOOLS_PER_SERVER = 30
CALLS = 29
READ, WRITE = 0.1, 1.25


def used_tools(servers: int) -> list[str]:
    """Six distinct tools, spread over the servers."""
    picks = ["get_issue", "update_issue", "list_invoice", "create_customer", "search_issue", "count_customer"]
    return [f"mcp__s{(i % servers) + 1:02d}__{p}" for i, p in enumerate(picks)]


def script(fake: FakeAnthropic, servers: int, deferred: bool) -> None:
    tools = used_tools(servers)
    for i in range(CALLS):
        group = tools[:3] if i < 15 else tools[3:]
        if deferred and i in (0, 15):
            fake.reply(tool_block("ToolSearch", {"query": "select:" + ",".join(group)}))
        fake.reply(tool_block(group[i % 3], {"target": f"T-{i}"}))
    fake.text("Done.")


def rendered_parts(req: Recorded) -> list[str]:
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k != "cache_control"}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    body = req.body
    parts = [json.dumps(clean(t), sort_keys=True) for t in body.get("tools", []) if not t.get("defer_loading")]
    parts.append(json.dumps(clean(body.get("system")), sort_keys=True))
    return parts + [json.dumps(clean(m), sort_keys=True) for m in body.get("messages", [])]


def weighted_cost(reqs: list[Recorded]) -> tuple[int, float]:
    """(total input units, cache-weighted units) over the session."""
    total, cost, prev = 0, 0.0, ""
    for req in reqs:
        text = "\n".join(rendered_parts(req))
        n = 0
        limit = min(len(text), len(prev))
        while n < limit and text[n] == prev[n]:  # the common prefix, in characters
            n += 1
        units, cached = text_units(text), text_units(text[:n])
        total += units
        cost += READ * cached + WRITE * (units - cached)
        prev = text
    return total, cost


def run(servers: int, deferred: bool) -> dict[str, float]:
    fake = FakeAnthropic()
    try:
        script(fake, servers, deferred)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "home").mkdir()
            table = {f"s{k:02d}": {"command": sys.executable, "args": [str(SERVER)],
                                   "env": {"MANY_TOOLS": str(TOOLS_PER_SERVER)}} for k in range(1, servers + 1)}
            cfg = root / "mcp.json"
            cfg.write_text(json.dumps({"mcpServers": table}))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TRACE", "ENABLE_TOOL"))}
            env.update({"AGENT_HOME": str(root / "home"), "PYTHONPATH": str(ROOT), "ANTHROPIC_BASE_URL": fake.url,
                        "ANTHROPIC_API_KEY": "sk-test", "MCP_TIMEOUT": "120000", "MCP_STARTUP_WAIT_MS": "120000",
                        "ENABLE_TOOL_SEARCH": "true" if deferred else "false"})
            proc = subprocess.run([sys.executable, "-m", "agent", "-p", "Do the task.", "--mcp-config", str(cfg),
                                   "--dangerously-skip-permissions"], cwd=root, env=env, capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode != 0 or fake.steps:
                raise SystemExit(f"run failed ({servers} servers, deferred={deferred}): {proc.stderr[-500:]}")
        reqs = list(fake.requests)
    finally:
        fake.close()
    total, cost = weighted_cost(reqs)
    return {"first": text_units("\n".join(rendered_parts(reqs[0]))), "total": total, "cost": cost,
            "trips": len(reqs)}


def main() -> None:
    header("Tool search: deferred MCP tools vs all schemas in")
    print(f"{TOOLS_PER_SERVER} tools per server; {CALLS} MCP calls and a final answer; units (4 ~ 1 token); "
          f"cache-weighted = read x{READ} + write x{WRITE} of the rendered prefix\n")
    print(f"{'servers':>7} | {'mode':>8} | {'first request':>13} | {'session input':>13} | "
          f"{'cache-weighted':>14} | {'round trips':>11}")
    rows = []
    for servers in (1, 5, 20):
        whole, lazy = run(servers, False), run(servers, True)
        rows.append((servers, whole, lazy))
        for name, r in (("all in", whole), ("deferred", lazy)):
            print(f"{servers:>7} | {name:>8} | {r['first']:>13,.0f} | {r['total']:>13,.0f} | {r['cost']:>14,.0f} | "
                  f"{r['trips']:>11.0f}")
    print("\nratios, deferred / all in:")
    for servers, whole, lazy in rows:
        print(f"  {servers:>2} servers: first request {lazy['first'] / whole['first']:.2f}, "
              f"cache-weighted input {lazy['cost'] / whole['cost']:.2f}, "
              f"+{lazy['trips'] - whole['trips']:.0f} round trips")


if __name__ == "__main__":
    sys.exit(main())
