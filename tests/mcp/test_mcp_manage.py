"""`agent mcp add/add-json/list/get/remove` through the real CLI: Claude Code's scopes and file formats,
live health checks against real servers, and one clear line for every bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import CliRunner

SERVERS = Path(__file__).resolve().parent / "servers"
CALC = str(SERVERS / "calculator.py")


def mcp(cli: CliRunner, *args: str, **env: str) -> tuple[int, str, str]:
    r = cli("mcp", *args, with_fake=False, timeout=120, **env)
    return r.code, r.stdout, r.stderr


def test_add_in_each_scope_writes_claude_codes_files(cli: CliRunner, agent_home: Path, workdir: Path) -> None:
    code, out, err = mcp(cli, "add", "calc", "-e", "TOKEN=abc", "--", sys.executable, CALC, "--flag")
    assert code == 0, err
    assert out.startswith(f"Added stdio MCP server calc with command: {sys.executable} {CALC} --flag to local config")
    user_file = agent_home / "mcp.json"
    data = json.loads(user_file.read_text())
    local = data["projects"][str(workdir.resolve())]["mcpServers"]["calc"]
    assert local == {"type": "stdio", "command": sys.executable, "args": [CALC, "--flag"], "env": {"TOKEN": "abc"}}
    assert user_file.stat().st_mode & 0o777 == 0o600
    code, out, err = mcp(cli, "add", "-s", "project", "-t", "http", "web", "http://127.0.0.1:9/mcp",
                         "-H", "Authorization: Bearer x")
    assert code == 0, err
    assert json.loads((workdir / ".mcp.json").read_text()) == {"mcpServers": {"web": {
        "type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}}}}
    code, out, err = mcp(cli, "add-json", "-s", "user", "everywhere", json.dumps({"command": "true"}))
    assert code == 0, err
    assert json.loads(user_file.read_text())["mcpServers"]["everywhere"] == {"command": "true"}
    # The same name twice in one scope is refused; in another scope it is fine.
    code, _, err = mcp(cli, "add", "calc", "--", "x")
    assert code == 1 and "already exists in local config" in err
    code, _, err = mcp(cli, "add", "-s", "user", "calc", "--", "x")
    assert code == 0, err


def test_list_and_get_check_health_and_remove_asks_which_scope(cli: CliRunner, workdir: Path) -> None:
    assert mcp(cli, "list")[1].startswith("No MCP servers configured")
    assert mcp(cli, "add", "calc", "--", sys.executable, CALC)[0] == 0
    assert mcp(cli, "add", "-s", "project", "dead", "--", sys.executable, str(SERVERS / "dies.py"))[0] == 0
    code, out, err = mcp(cli, "list", MCP_TIMEOUT="60000")
    assert code == 0, err
    assert f"calc: {sys.executable} {CALC} - ✓ Connected" in out
    # The project's own server is not started in a folder that is not trusted.
    assert "dead: " in out and "⏸ Not started: this folder is not trusted (agent trust)" in out
    from services.trust import trust

    trust(workdir, Path(cli.agent_home))
    code, out, err = mcp(cli, "list", MCP_TIMEOUT="60000")
    assert "dead: " in out and "✗ Failed to connect" in out and "DATABASE_URL is not set" in out
    code, out, err = mcp(cli, "get", "calc", MCP_TIMEOUT="60000")
    assert code == 0, err
    assert "  Scope: Local config (private to you in this project)" in out and "  Status: ✓ Connected" in out
    assert 'agent mcp remove "calc" -s local' in out
    assert mcp(cli, "get", "ghost")[0] == 1
    assert mcp(cli, "add", "-s", "user", "calc", "--", "true")[0] == 0
    code, _, err = mcp(cli, "remove", "calc")
    assert code == 1 and "several scopes (local, user)" in err and "agent mcp remove calc -s user" in err
    code, out, err = mcp(cli, "remove", "calc", "-s", "local")
    assert code == 0 and out.startswith("Removed MCP server calc from local config"), err
    assert mcp(cli, "remove", "calc")[0] == 0  # now only the user one is left
    assert mcp(cli, "remove", "calc")[0] == 1
    assert mcp(cli, "remove", "dead")[0] == 0
    assert json.loads((workdir / ".mcp.json").read_text()) == {"mcpServers": {}}


def test_bad_input_is_one_line_and_exit_2(cli: CliRunner, workdir: Path) -> None:
    cases = [
        (["add"], "missing the server name"),
        (["add", "bad/name", "--", "x"], "invalid server name"),
        (["add", "x"], "missing the command"),
        (["add", "-s", "global", "x", "--", "y"], "invalid scope"),
        (["add", "-t", "sse", "x", "http://h/"], "sse transport is not supported"),
        (["add", "-t", "http", "x", "not-a-url"], "one http:// or https:// URL"),
        (["add", "-e", "NOEQUALS", "x", "--", "y"], "invalid environment variable"),
        (["add", "-t", "http", "-H", "no colon", "x", "http://h/"], "invalid header"),
        (["add", "--bogus", "x", "--", "y"], "unknown option --bogus"),
        (["add-json", "x", "{not json"], "invalid JSON"),
        (["add-json", "x", '{"type": "http"}'], "invalid server entry"),
        (["frobnicate"], "unknown mcp command"),
    ]
    for args, message in cases:
        code, out, err = mcp(cli, *args)
        assert code == 2, (args, out, err)
        assert message in err and "Traceback" not in err, (args, err)
    # A broken config file is named, not overwritten.
    (workdir / ".mcp.json").write_text("{oops")
    code, _, err = mcp(cli, "add", "-s", "project", "x", "--", "y")
    assert code == 1 and ".mcp.json: invalid JSON" in err
    assert (workdir / ".mcp.json").read_text() == "{oops"
    # Server flags after the command are the server's, not ours.
    (workdir / ".mcp.json").unlink()
    code, out, err = mcp(cli, "add", "-s", "project", "srv", "node", "server.js", "--port", "3", "-e", "A=1")
    assert code == 0, err
    assert json.loads((workdir / ".mcp.json").read_text())["mcpServers"]["srv"] == {
        "type": "stdio", "command": "node", "args": ["server.js", "--port", "3"], "env": {"A": "1"}}


def test_a_malformed_user_file_is_named_and_kept(cli: CliRunner, agent_home: Path) -> None:
    (agent_home / "mcp.json").write_text(json.dumps({"projects": ["not", "an", "object"], "other": 1}))
    code, _, err = mcp(cli, "add", "calc", "--", "x")
    assert code == 1 and '"projects" must be an object; fix it first' in err
    assert json.loads((agent_home / "mcp.json").read_text()) == {"projects": ["not", "an", "object"], "other": 1}
    code, out, err = mcp(cli, "add", "-s", "user", "calc", "--", "x")  # the user scope does not need it
    assert code == 0, err
    assert json.loads((agent_home / "mcp.json").read_text())["other"] == 1
