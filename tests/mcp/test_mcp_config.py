"""MCP config files, name normalisation and mention parsing: no servers needed."""

from __future__ import annotations

import json
from pathlib import Path

from services.mcp.config import config_paths, load_config
from services.mcp.content import extract_mentions
from services.mcp.names import public_tool_name


def write(path: Path, data: object) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_missing_files_mean_no_servers(tmp_path: Path) -> None:
    assert load_config(tmp_path, {}) == ({}, [])


def test_stdio_and_http_servers_load_with_var_expansion(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", {"mcpServers": {
        "demo": {"command": "npx", "args": ["-y", "${PKG}"], "env": {"TOKEN": "${TOKEN}", "EMPTY": "${UNSET}"}},
        "web": {"type": "http", "url": "http://127.0.0.1:${PORT}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }})
    servers, warnings = load_config(tmp_path, {"PKG": "some-server", "TOKEN": "t0k", "PORT": "8123"})
    assert warnings == []
    demo, web = servers["demo"], servers["web"]
    assert (demo.transport, demo.command, demo.args, demo.env) == ("stdio", "npx", ["-y", "some-server"],
                                                                  {"TOKEN": "t0k", "EMPTY": ""})
    assert (web.transport, web.url, web.headers) == ("http", "http://127.0.0.1:8123/mcp", {"Authorization": "Bearer t0k"})
    assert demo.source == str(tmp_path / ".mcp.json")


def test_mcp_config_files_are_comma_separated_and_later_wins(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", {"mcpServers": {"one": {"command": "a"}, "shared": {"command": "node", "args": ["p.js"]}}})
    a = write(tmp_path / "a.json", {"mcpServers": {"shared": {"command": "node", "args": ["from-a.js"]}}})
    write(tmp_path / "b.json", {"mcpServers": {"shared": {"command": "node", "args": ["from-b.js"]}, "two": {"command": "b"}}})
    env = {"MCP_CONFIG": f"{a}, b.json"}
    assert config_paths(tmp_path, env) == [tmp_path / ".mcp.json", a, tmp_path / "b.json"]
    servers, warnings = load_config(tmp_path, env)
    assert warnings == []
    assert list(servers) == ["one", "shared", "two"]
    assert servers["shared"].args == ["from-b.js"]


def test_invalid_json_warns_naming_the_file_and_other_files_still_load(tmp_path: Path) -> None:
    bad = write(tmp_path / ".mcp.json", "{not json")
    good = write(tmp_path / "good.json", {"mcpServers": {"ok": {"command": "x"}}})
    servers, warnings = load_config(tmp_path, {"MCP_CONFIG": str(good)})
    assert list(servers) == ["ok"]
    assert len(warnings) == 1 and str(bad) in warnings[0] and "invalid JSON" in warnings[0]


def test_wrong_shape_warns(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", [1, 2])
    servers, warnings = load_config(tmp_path, {})
    assert servers == {} and "mcpServers" in warnings[0]


def test_only_the_bad_server_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / ".mcp.json", {"mcpServers": {
        "good": {"command": "x"},
        "nocommand": {"args": []},
        "badargs": {"command": "x", "args": "nope"},
        "badenv": {"command": "x", "env": {"A": 1}},
        "nourl": {"type": "http"},
        "badtype": {"type": "sse", "url": "http://x"},
        "notobj": 3,
    }})
    servers, warnings = load_config(tmp_path, {})
    assert list(servers) == ["good"]
    assert len(warnings) == 6
    assert all(str(path) in w for w in warnings)
    text = "\n".join(warnings)
    for needle in ['"nocommand" needs a non-empty "command"', '"badargs" "args" must be an array',
                   '"badenv" "env" must be', '"nourl" an http server needs', "unsupported \"type\" 'sse'",
                   '"notobj" must be an object']:
        assert needle in text


def test_public_names_are_normalised() -> None:
    assert public_tool_name("demo", "foo") == "mcp__demo__foo"
    assert public_tool_name("my.server", "foo.bar") == "mcp__my_server__foo_bar"
    assert public_tool_name("my server", "stats.mean value") == "mcp__my_server__stats_mean_value"


def test_mentions_are_extracted_deduplicated_and_split_at_the_first_colon() -> None:
    assert extract_mentions("first read @tour:docs://handbook , then plan") == [("tour", "docs://handbook")]
    text = "email@x.com @tour:docs://a @tour:docs://a @other:res://b."
    assert extract_mentions(text) == [("tour", "docs://a"), ("other", "res://b")]
    assert extract_mentions("@tour:docs://handbook") == [("tour", "docs://handbook")]
    assert extract_mentions("no mentions @here or a:b") == []


def test_scopes_stack_user_project_local_then_mcp_config(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    write(home / "mcp.json", {
        "mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}, "u": {"command": "only-user"}},
        "projects": {str(project.resolve()): {"mcpServers": {"b": {"command": "local-b"}, "c": {"command": "local-c"}}},
                     "/elsewhere": {"mcpServers": {"x": {"command": "not-this-project"}}}},
    })
    write(project / ".mcp.json", {"mcpServers": {"a": {"command": "project-a"}, "b": {"command": "project-b"},
                                                  "c": {"command": "project-c"}}})
    write(project / "more.json", {"mcpServers": {"c": {"command": "config-c"}}})
    servers, warnings = load_config(project, {"AGENT_HOME": str(home), "MCP_CONFIG": "more.json"})
    assert warnings == []
    got = {n: (s.command, s.scope) for n, s in servers.items()}
    assert got == {"a": ("project-a", "project"), "b": ("local-b", "local"), "c": ("config-c", "config"),
                   "u": ("only-user", "user")}


def test_a_broken_user_file_names_the_file_and_field(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write(home / "mcp.json", {"mcpServers": {"ok": {"command": "x"}, "bad": {"command": 3}},
                              "projects": {str(tmp_path.resolve()): {"mcpServers": []}}})
    servers, warnings = load_config(tmp_path, {"AGENT_HOME": str(home)})
    assert list(servers) == ["ok"]
    assert warnings[0] == f'MCP config {home / "mcp.json"} "mcpServers": server "bad" needs a non-empty "command" string; skipped'
    assert '"projects" / ' in warnings[1] and '"mcpServers" must be an object' in warnings[1]
    write(home / "mcp.json", "{broken")
    assert load_config(tmp_path, {"AGENT_HOME": str(home)})[1][0].startswith(f"MCP config {home / 'mcp.json'}: invalid JSON")
