"""Claude Code's `-p` flags, each run through the real CLI against the fake API and checked by what reaches
the API or the disk: tool lists, system prompts, settings layers, session ids, budgets, schemas, fallback."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic, tool_block


def result_of(r) -> dict:
    assert r.stdout.strip(), r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_comma_and_space_tool_lists_allow_each_rule(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                                   workdir: Path) -> None:
    fake_anthropic.reply(tool_block("Bash", {"command": "git --version > v.txt"}, id="t1"),
                         tool_block("Write", {"file_path": "w.txt", "content": "w"}, id="t2"))
    fake_anthropic.text("done")
    r = cli("-p", "go", "--output-format", "json", "--allowedTools", "Bash(git --version:*),Write")
    res = result_of(r)
    assert res["permission_denials"] == [] and (workdir / "w.txt").read_text() == "w"
    assert (workdir / "v.txt").read_text().startswith("git version")
    # A space-separated list in one argument works the same; a rule with a space inside parentheses stays whole.
    fake_anthropic.reply(tool_block("Bash", {"command": "echo a b > ab.txt"}, id="t3"))
    fake_anthropic.text("done")
    r = cli("-p", "go", "--output-format", "json", "--allowed-tools", "Read Bash(echo a b:*)")
    assert result_of(r)["permission_denials"] == [] and (workdir / "ab.txt").read_text() == "a b\n"


def test_tools_flag_and_system_prompts(cli: CliRunner, fake_anthropic: FakeAnthropic, workdir: Path) -> None:
    fake_anthropic.text("one")
    (workdir / "sys.txt").write_text("You are a test prompt from a file.")
    r = cli("-p", "hi", "--tools", "Read,Grep", "--system-prompt-file", "sys.txt",
            "--append-system-prompt", "Always answer in one word.")
    assert r.code == 0, r.stderr
    body = fake_anthropic.requests[0].body
    assert [t["name"] for t in body["tools"]] == ["Read", "Grep"]
    system = "".join(b["text"] for b in body["system"])
    assert system == "You are a test prompt from a file.\n\nAlways answer in one word."
    fake_anthropic.text("two")
    r = cli("-p", "hi", "--tools", "", "--system-prompt", "")
    assert r.code == 0, r.stderr
    body = fake_anthropic.requests[1].body
    assert "tools" not in body and "system" not in body


def test_settings_inline_and_setting_sources(cli: CliRunner, fake_anthropic: FakeAnthropic, workdir: Path,
                                             agent_home: Path) -> None:
    (agent_home / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write"]}}))
    fake_anthropic.reply(tool_block("Write", {"file_path": "a.txt", "content": "a"}, id="w1"))
    fake_anthropic.text("done")
    # --setting-sources without "user": the user file's allow rule is not read, so Write is denied.
    r = cli("-p", "go", "--output-format", "json", "--setting-sources=project,local")
    assert [d["tool_name"] for d in result_of(r)["permission_denials"]] == ["Write"]
    assert not (workdir / "a.txt").exists()
    fake_anthropic.reply(tool_block("Write", {"file_path": "b.txt", "content": "b"}, id="w2"))
    fake_anthropic.text("done")
    r = cli("-p", "go", "--output-format", "json", "--setting-sources=",
            "--settings", '{"permissions": {"allow": ["Write(b.txt)"]}}')
    assert result_of(r)["permission_denials"] == [] and (workdir / "b.txt").read_text() == "b"
    r = cli("-p", "go", "--settings", "{not json")
    assert r.code == 2 and r.stderr.startswith("error: --settings: not valid JSON")


def test_session_id_fork_and_no_persistence(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                            agent_home: Path) -> None:
    sid = str(uuid.uuid4())
    fake_anthropic.text("first")
    res = result_of(cli("-p", "one", "--output-format", "json", f"--session-id={sid}"))
    assert res["session_id"] == sid
    transcripts = list((agent_home / "projects").glob(f"*/{sid}.jsonl"))
    assert len(transcripts) == 1
    before = transcripts[0].read_bytes()
    fake_anthropic.text("forked")
    res = result_of(cli("-p", "two", "--output-format", "json", "--resume", sid, "--fork-session"))
    forked = res["session_id"]
    assert forked != sid and uuid.UUID(forked)
    assert transcripts[0].read_bytes() == before  # the original is left as it was
    (fork_file,) = (agent_home / "projects").glob(f"*/{forked}.jsonl")
    assert fork_file.read_bytes().startswith(before)
    # The fork's request carried the original conversation.
    assert [m["role"] for m in fake_anthropic.requests[1].messages] == ["user", "assistant", "user"]
    fake_anthropic.text("gone")
    res = result_of(cli("-p", "three", "--output-format", "json", "--no-session-persistence"))
    assert not list((agent_home / "projects").glob(f"*/{res['session_id']}.jsonl"))
    assert cli("-p", "x", "--session-id", "not-a-uuid").code == 2


def test_budget_schema_and_fallback(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply(tool_block("Echo", {"message": "x"}), usage={"input_tokens": 400_000}, output_tokens=5)
    r = cli("-p", "spend", "--output-format", "json", "--max-budget-usd", "0.01")
    res = result_of(r)
    assert r.code == 1 and res["subtype"] == "error_max_budget_usd" and res["is_error"]
    assert res["total_cost_usd"] >= 0.01
    fake_anthropic.text('{"name": "Ada"}')
    schema = '{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}'
    res = result_of(cli("-p", "who", "--output-format", "json", "--json-schema", schema))
    assert res["structured_output"] == {"name": "Ada"}
    assert "JSON Schema" in fake_anthropic.requests[-1].body["system"][0]["text"]
    fake_anthropic.http_error(529, "overloaded_error", "Overloaded")
    fake_anthropic.text("from the fallback")
    r = cli("-p", "hi", "--model", "claude-opus-4-8", "--fallback-model", "claude-haiku-4-5", API_MAX_RETRIES="0")
    assert r.code == 0 and r.stdout == "from the fallback\n", r.stderr
    assert [q.body["model"] for q in fake_anthropic.requests[-2:]] == ["claude-opus-4-8", "claude-haiku-4-5"]


def test_mcp_config_inline_and_strict(cli: CliRunner, fake_anthropic: FakeAnthropic, workdir: Path) -> None:
    import sys

    server = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "calculator.py"
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "false"}}}))
    from services.trust import trust

    trust(workdir, cli.agent_home)  # trusted: only --strict-mcp-config keeps the project's servers out
    inline = json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [str(server)]}}})
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--output-format", "stream-json", "--verbose", "--mcp-config", inline,
            "--strict-mcp-config", MCP_STARTUP_WAIT_MS="60000")  # servers start in the background (issue 18)
    assert r.code == 0, r.stderr
    init = json.loads(r.stdout.splitlines()[0])
    assert init["mcp_servers"] == [{"name": "calc", "status": "connected"}]
    assert any(n.startswith("mcp__calc__") for n in init["tools"])
    assert "proj" not in r.stderr  # the project's .mcp.json was not read


def test_subcommands_and_prompts(cli: CliRunner, fake_anthropic: FakeAnthropic, workdir: Path,
                                 agent_home: Path) -> None:
    r = cli("config", "set", "permissions.defaultMode", "acceptEdits")
    assert r.code == 0, r.stderr
    local = json.loads((workdir / ".agents" / "settings.local.json").read_text())
    assert local == {"permissions": {"defaultMode": "acceptEdits"}}
    assert cli("config", "get", "permissions.defaultMode").stdout == "acceptEdits\n"
    assert cli("config", "add", "-g", "permissions.allow", "Read", "Grep").code == 0
    assert json.loads((agent_home / "settings.json").read_text())["permissions"]["allow"] == ["Read", "Grep"]
    assert cli("config", "get", "nope").code == 1
    (workdir / ".claude").mkdir()
    (workdir / ".claude" / "settings.json").write_text("{broken")
    r = cli("doctor")
    assert r.code == 1  # the broken settings file is a failed check
    assert "ok    API key: ANTHROPIC_API_KEY is set" in r.stdout
    assert "ok    API endpoint:" in r.stdout and "ok    ripgrep:" in r.stdout
    assert "settings.json: invalid JSON" in r.stdout
    # A first word that is not a subcommand is a prompt, as in Claude Code.
    fake_anthropic.text("it was a prompt")
    r = cli("-p", "doctors", "are", "busy")
    assert r.stdout == "it was a prompt\n"
    assert fake_anthropic.requests[-1].messages[0]["content"][0]["text"] == "doctors are busy"
