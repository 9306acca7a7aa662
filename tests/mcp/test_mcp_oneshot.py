"""MCP in one-shot runs through the real CLI: a server that never answers does not hold up the first
request, prompts work as slash commands (roles kept, a missing required argument is one clear error), and
a server that fails says why on stderr."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic

SERVERS = Path(__file__).resolve().parent / "servers"


def configure(root: Path, servers: dict[str, list[str]]) -> None:
    from services.trust import trust

    table = {n: {"command": sys.executable, "args": [str(SERVERS / args[0]), *args[1:]]} for n, args in servers.items()}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": table}))
    trust(root, Path(os.environ["AGENT_HOME"]))  # a project's .mcp.json is read only in a trusted folder


def test_a_hung_server_does_not_delay_the_first_request_past_the_bound(cli: CliRunner, workdir: Path,
                                                                      fake_anthropic: FakeAnthropic) -> None:
    # MCP_TIMEOUT is ten minutes but MCP_STARTUP_WAIT_MS bounds the wait: had the run waited for the silent
    # server, the 120 s timeout would hit. It is still connecting, so WaitForMcpServers is offered.
    configure(workdir, {"silent": ["hang.py", "silent"], "dead": ["dies.py"]})
    fake_anthropic.text("answered")
    r = cli("-p", "hello", timeout=120, MCP_TIMEOUT="600000", MCP_STARTUP_WAIT_MS="1000")
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "answered"
    names = [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    assert not [n for n in names if n.startswith("mcp__")] and "WaitForMcpServers" in names
    # The server that died at start is reported (with its stderr) if it failed before the run ended.
    if "dead" in r.stderr:
        assert "DATABASE_URL is not set" in r.stderr


def test_prompts_are_slash_commands_in_one_shot_runs(cli: CliRunner, workdir: Path,
                                                     fake_anthropic: FakeAnthropic) -> None:
    configure(workdir, {"templates": ["templates.py"]})
    fake_anthropic.text("reviewed")
    r = cli("-p", '/templates:review "alpha" tone="very dry"', timeout=120, MCP_TIMEOUT="90000")
    assert r.code == 0, r.stderr
    (request,) = fake_anthropic.requests
    roles = [m["role"] for m in request.messages]
    assert roles == ["user", "user", "assistant", "user"]
    texts = [b["text"] for m in request.messages for b in m["content"] if b.get("type") == "text"]
    assert texts[1:] == ["Review alpha in a very dry tone. See @templates:docs://intro",
                         "I will start with the notes.", "embedded note on alpha"]
    assert "Mounted MCP resource @templates:docs://intro (18 chars)" in r.stderr
    # The prompt's tools are there too: the run waited for the server it needed.
    assert "mcp__templates__slow" in [t["name"] for t in request.body["tools"]]


def test_a_missing_required_argument_is_one_clear_error(cli: CliRunner, workdir: Path,
                                                        fake_anthropic: FakeAnthropic) -> None:
    configure(workdir, {"templates": ["templates.py"]})
    r = cli("-p", "/templates:review", timeout=120, MCP_TIMEOUT="90000")
    assert r.code == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "error: /templates:review needs topic (usage: /templates:review <topic> [tone]; or name=value)")
    r = cli("-p", '/templates:review "unbalanced', timeout=120, MCP_TIMEOUT="90000")
    assert r.code == 1 and "cannot parse the arguments of /templates:review" in r.stderr
    r = cli("-p", "/templates:nope", timeout=120, MCP_TIMEOUT="90000")
    assert r.code == 1 and 'MCP server "templates" has no prompt "nope"' in r.stderr
    assert "Traceback" not in r.stderr
    assert fake_anthropic.requests == []
