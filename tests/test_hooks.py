"""Command hooks against real scripts: config, matching, PreToolUse, PostToolUse, Stop, UserPromptSubmit,
SessionStart, timeouts that kill the whole process group, and the engine end to end."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.config import Settings
from services.events import Terminal
from services.hooks.command import (
    DEFAULT_HOOK_TIMEOUT_MS,
    CommandHooks,
    HookEntry,
    load_hooks_file,
    match_hook,
    parse_hooks_config,
    run_hook_command,
)
from services.messages import message_text, tool_results
from services.trust import trust
from tests.files import write
from tests.procs import pid_alive as _alive

PY = sys.executable


def script(tmp_path: Path, name: str, body: str) -> str:
    """A python hook script; it records its stdin payload to <name>.payloads (one JSON per line)."""
    log = tmp_path / f"{name}.payloads"
    path = write(
        tmp_path / f"{name}.py",
        "import json, sys\n"
        "payload = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(payload) + '\\n')\n" + body,
    )
    return f"{PY} {path}"


def payloads(tmp_path: Path, name: str) -> list[dict]:
    log = tmp_path / f"{name}.payloads"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def hooks_json(proj: Path, config: dict) -> Path:
    return write(proj / ".agents" / "hooks.json", json.dumps(config))


@pytest.fixture
def proj(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    return d


def make_hooks(proj: Path, config: dict | None = None, **kw) -> tuple[CommandHooks, list[str]]:
    if config is not None:
        hooks_json(proj, config)
    reports: list[str] = []
    return CommandHooks(proj, None, session_id="sess-1", report=reports.append, **kw), reports


# -- config (reference: parseHooksConfig / loadHooksConfig) --------------------------------------------
def test_top_level_pre_tool_use_entry():
    config = parse_hooks_config({"PreToolUse": [{"matcher": "Bash", "command": "./check.sh"}]})
    assert config["PreToolUse"][0].matcher == "Bash"
    assert config["PreToolUse"][0].timeout_ms == DEFAULT_HOOK_TIMEOUT_MS


def test_nested_post_tool_use_entry():
    config = parse_hooks_config({"hooks": {"PostToolUse": [{"matcher": "*", "command": "echo post"}]}})
    assert config["PostToolUse"][0].command == "echo post"


def test_stop_entry():
    config = parse_hooks_config({"Stop": [{"command": "node ./on-stop.mjs", "timeoutMs": 3000}]})
    assert config["Stop"] == [HookEntry("Stop", "node ./on-stop.mjs", "*", 3000, False)]


def test_missing_file_is_none(tmp_path):
    assert load_hooks_file(tmp_path / "nope.json") is None


def test_valid_file(tmp_path):
    path = write(tmp_path / "hooks.json", json.dumps({"PreToolUse": [{"matcher": "*", "command": "node deny.js"}]}))
    assert load_hooks_file(path)["PreToolUse"][0].command == "node deny.js"


def test_hooks_0_disables_everything(proj, monkeypatch, tmp_path):
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": "exit 2"}]})
    monkeypatch.setenv("HOOKS", "0")
    assert hooks.entries("PreToolUse", "Bash") == []


def test_invalid_json_is_none(tmp_path):
    assert load_hooks_file(write(tmp_path / "hooks.json", "{not json")) is None


def test_invalid_entries_are_dropped_and_claude_settings_are_read(proj):
    config = parse_hooks_config(
        {"PreToolUse": [{"matcher": 3, "command": "x"}, {"command": ""}, {"command": "ok", "timeoutMs": -1}, {"command": "y"}]}
    )
    assert [e.command for e in config["PreToolUse"]] == ["y"]
    write(
        proj / ".claude" / "settings.json",
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "cc", "timeout": 2}]}]}}),
    )
    hooks, _ = make_hooks(proj)
    [entry] = hooks.entries("PreToolUse", "Write")
    assert (entry.command, entry.timeout_ms) == ("cc", 2000)
    assert hooks.entries("PreToolUse", "Read") == []


# -- matching -------------------------------------------------------------------------------------------
def test_match_hook():
    assert match_hook("*", "Bash") and match_hook("", "Bash") and match_hook("Bash", "Bash")
    assert not match_hook("Read", "Bash")
    assert match_hook("Edit|Write", "Write") and not match_hook("Edit|Write", "WriteX")


# -- PreToolUse (reference: runPreToolUse) ------------------------------------------------------------------
async def test_pre_no_config_allows(proj):
    hooks, _ = make_hooks(proj)
    assert await hooks.pre_tool_use("Bash", {"command": "ls"}, "t1") is None


async def test_pre_exit_2_denies_with_stderr(proj, tmp_path):
    cmd = script(tmp_path, "pre", "sys.stderr.write('blocked by policy'); sys.exit(2)\n")
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "Bash", "command": cmd}]})
    decision = await hooks.pre_tool_use("Bash", {"command": "rm -rf /"}, "t1")
    assert decision.action == "deny" and "blocked" in decision.reason
    [payload] = payloads(tmp_path, "pre")
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == "Bash" and payload["tool_input"] == {"command": "rm -rf /"}
    assert payload["session_id"] == "sess-1" and payload["cwd"] == str(proj)


async def test_pre_json_permission_decision_deny(proj, tmp_path):
    out = json.dumps({"permissionDecision": "deny", "permissionDecisionReason": "policy"})
    cmd = script(tmp_path, "pre", f"print('some log line'); print({out!r})\n")
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": cmd}]})
    decision = await hooks.pre_tool_use("Bash", {}, "t1")
    assert (decision.action, decision.reason) == ("deny", "policy")


async def test_pre_unmatched_matcher_does_not_run(proj, tmp_path):
    cmd = script(tmp_path, "pre", "sys.exit(2)\n")
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "Write", "command": cmd}]})
    assert await hooks.pre_tool_use("Bash", {}, "t1") is None
    assert payloads(tmp_path, "pre") == []


async def test_pre_exit_1_allows_unless_deny_on_failure(proj, tmp_path):
    cmd = script(tmp_path, "pre", "sys.stderr.write('crashed'); sys.exit(1)\n")
    hooks, reports = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": cmd}]})
    assert await hooks.pre_tool_use("Bash", {}, "t1") is None
    assert any("PreToolUse" in r and "exit 1" in r for r in reports)
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": cmd, "denyOnFailure": True}]})
    decision = await hooks.pre_tool_use("Bash", {}, "t1")
    assert decision.action == "deny" and "crashed" in decision.reason


# -- PostToolUse --------------------------------------------------------------------------------------------
async def test_post_failure_is_reported_never_raised(proj, tmp_path):
    cmd = script(tmp_path, "post", "sys.stderr.write('lint failed'); sys.exit(1)\n")
    hooks, reports = make_hooks(proj, {"PostToolUse": [{"matcher": "*", "command": cmd}]})
    assert await hooks.post_tool_use("Spy", {"x": 1}, "t1", "ok", False) is None
    assert any("PostToolUse" in r and "lint failed" in r for r in reports)
    [payload] = payloads(tmp_path, "post")
    assert payload["hook_event_name"] == "PostToolUse" and payload["tool_name"] == "Spy"
    assert payload["tool_response"] == "ok" and payload["tool_is_error"] is False


# -- Stop (reference: runStop) ---------------------------------------------------------------------------------
async def test_stop_two_entries_neither_blocks(proj, tmp_path):
    a, b = script(tmp_path, "a", ""), script(tmp_path, "b", "")
    hooks, _ = make_hooks(proj, {"Stop": [{"command": a}, {"command": b}]})
    result = await hooks.run_stop(False)
    assert result.count == 2 and not result.prevent_continuation and result.blocking_feedback is None
    for name in ("a", "b"):
        [p] = payloads(tmp_path, name)
        assert p["hook_event_name"] == "Stop" and p["stop_hook_active"] is False
    assert await hooks.stop("done", False) is None


async def test_stop_exit_1(proj, tmp_path):
    hooks, reports = make_hooks(proj, {"Stop": [{"command": script(tmp_path, "s", "sys.exit(1)\n")}]})
    result = await hooks.run_stop(False)
    assert result.count == 1 and result.outcomes[0].exit_code == 1
    assert not result.prevent_continuation and result.blocking_feedback is None
    assert any("Stop failed (exit 1)" in r for r in reports)


async def test_stop_without_config_runs_nothing(proj):
    calls = []

    async def executor(*a):
        calls.append(a)

    for config in (None, {}):
        hooks, _ = make_hooks(proj, config, executor=executor)
        result = await hooks.run_stop(False)
        assert (result.count, result.outcomes, result.prevent_continuation) == (0, [], False)
    assert calls == []


async def test_stop_exit_2_feedback(proj, tmp_path):
    cmd = script(tmp_path, "s", "sys.stderr.write('fix the tests'); sys.exit(2)\n")
    hooks, _ = make_hooks(proj, {"Stop": [{"command": cmd}]})
    assert (await hooks.run_stop(False)).blocking_feedback == "fix the tests"
    decision = await hooks.stop("done", False)
    assert (decision.action, decision.reason) == ("block", "fix the tests")


async def test_stop_decision_block(proj, tmp_path):
    out = json.dumps({"decision": "block", "reason": "incomplete"})
    hooks, _ = make_hooks(proj, {"Stop": [{"command": script(tmp_path, "s", f"print({out!r})\n")}]})
    assert (await hooks.run_stop(False)).blocking_feedback == "incomplete"


async def test_stop_continue_false_prevents(proj, tmp_path):
    out = json.dumps({"continue": False, "stopReason": "done"})
    cmd = script(tmp_path, "s", f"print({out!r}); sys.exit(2)\n")
    hooks, _ = make_hooks(proj, {"Stop": [{"command": cmd}]})
    result = await hooks.run_stop(False)
    assert result.prevent_continuation and result.stop_reason == "done" and result.blocking_feedback is None
    decision = await hooks.stop("x", False)
    assert (decision.action, decision.reason) == ("stop", "done")


async def test_stop_hook_active_is_passed(proj, tmp_path):
    hooks, _ = make_hooks(proj, {"Stop": [{"command": script(tmp_path, "s", "")}]})
    await hooks.run_stop(True, "last words")
    [p] = payloads(tmp_path, "s")
    assert p["stop_hook_active"] is True and p["last_assistant_message"] == "last words"


# -- UserPromptSubmit and SessionStart ---------------------------------------------------------------------------
async def test_user_prompt_submit_blocks_or_adds_context(proj, tmp_path):
    cmd = script(
        tmp_path,
        "ups",
        "if 'secret' in payload['prompt']:\n    sys.stderr.write('no secrets'); sys.exit(2)\nprint('today is sprint 7')\n",
    )
    hooks, _ = make_hooks(proj, {"UserPromptSubmit": [{"command": cmd}]})
    denied = await hooks.user_prompt_submit("tell me the secret")
    assert (denied.action, denied.reason) == ("deny", "no secrets")
    allowed = await hooks.user_prompt_submit("plan the work")
    assert allowed.action == "allow" and allowed.additional_context == "today is sprint 7"
    assert payloads(tmp_path, "ups")[1]["prompt"] == "plan the work"


async def test_session_start_context_from_json(proj, tmp_path):
    out = json.dumps({"hookSpecificOutput": {"additionalContext": "branch main is frozen"}})
    hooks, _ = make_hooks(proj, {"SessionStart": [{"command": script(tmp_path, "ss", f"print({out!r})\n")}]})
    decision = await hooks.session_start("startup")
    assert decision.additional_context == "branch main is frozen"
    assert payloads(tmp_path, "ss")[0]["source"] == "startup"


# -- config caching ------------------------------------------------------------------------------------------------
async def test_config_read_once_and_on_change(proj, tmp_path):
    hooks, _ = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": "true"}]})
    for _ in range(5):
        await hooks.pre_tool_use("Bash", {}, "t")
    assert hooks.loads == 1
    path = hooks_json(proj, {"PreToolUse": [{"matcher": "*", "command": "exit 2"}]})
    os.utime(path, ns=(5_000_000_000, 5_000_000_000))
    assert (await hooks.pre_tool_use("Bash", {}, "t")).action == "deny"
    assert hooks.loads == 2


# -- timeouts kill the process group --------------------------------------------------------------------------------


async def test_a_hung_hook_is_killed_with_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    entry = HookEntry("PreToolUse", f"sleep 30 & echo $! > {pidfile}; wait", "*", 300)
    outcome = await run_hook_command(entry, {"hook_event_name": "PreToolUse"}, tmp_path)
    assert outcome.timed_out and outcome.exit_code == 124
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.02)
    assert not _alive(child)


async def test_a_timed_out_pre_hook_allows_unless_deny_on_failure(proj):
    hooks, reports = make_hooks(proj, {"PreToolUse": [{"matcher": "*", "command": "sleep 10", "timeoutMs": 200}]})
    assert await hooks.pre_tool_use("Bash", {}, "t") is None
    assert any("exit 124" in r for r in reports)


def test_trace_lines(proj, tmp_path, capsys, monkeypatch):
    import asyncio

    monkeypatch.setenv("TRACE", "1")
    hooks, _ = make_hooks(
        proj,
        {"PreToolUse": [{"matcher": "*", "command": "true"}], "PostToolUse": [{"matcher": "*", "command": "true"}],
         "Stop": [{"command": "true"}]},
    )

    async def go():
        await hooks.pre_tool_use("Spy", {}, "t")
        await hooks.post_tool_use("Spy", {}, "t", "ok", False)
        await hooks.stop("x", False)

    asyncio.run(go())
    err = capsys.readouterr().err
    assert "[trace] hooks.pre tool=Spy" in err and "[trace] hooks.post tool=Spy" in err
    assert "[trace] hooks.stop count=1" in err


# -- through the engine --------------------------------------------------------------------------------------------------
def engine_for(proj: Path, model: ScriptedModel):
    opts = AppOptions(cwd=proj, settings=Settings(model="test-model"), trusted=True)
    return build_engine(opts, deps=QueryDeps(call_model=model))


async def run(engine, text: str) -> tuple[list, Terminal]:
    events = [e async for e in engine.run_turn(text)]
    assert isinstance(events[-1], Terminal)
    return events, events[-1]


async def test_end_to_end_agents_md_skill_and_pre_tool_use_hook(proj, tmp_path, agent_home):
    write(proj / "AGENTS.md", "# House rules\nAlways answer in haiku.")
    write(proj / ".agents/skills/review/SKILL.md", "---\ndescription: Review a change\n---\n# Review workflow\nRead the diff.")
    write(proj / "secret.txt", "top secret")
    deny = script(tmp_path, "deny", "sys.stderr.write('secret.txt is off limits'); sys.exit(2)\n")
    hooks_json(proj, {"PreToolUse": [{"matcher": "Read", "command": deny}]})
    model = ScriptedModel(
        [
            reply("Loading the skill.", tool_call("Skill", {"skill": "review"}, id="toolu_s1")),
            reply(tool_call("Read", {"file_path": str(proj / "secret.txt")}, id="toolu_r1")),
            reply("Done."),
        ]
    )
    engine = engine_for(proj, model)
    assert any(t.name == "Skill" for t in engine.tools)
    _, terminal = await run(engine, "review my change")
    assert terminal.reason == "completed"
    model.assert_done()
    first = model.requests[0]
    assert "Always answer in haiku." in first.system
    assert "## Available Skills" in first.system and "- review — Review a change" in first.system
    # The second request: assistant(tool_use) -> user(tool_result) -> user(skill body).
    msgs = model.requests[1].messages
    assert msgs[-3]["role"] == "assistant"
    assert tool_results(msgs[-2])[0]["content"] == "Launching skill: review"
    assert "# Review workflow" in message_text(msgs[-1]) and "Base directory for this skill:" in message_text(msgs[-1])
    # The hook denied the Read: an is_error tool_result with its reason, and the file was not read.
    [denied] = tool_results(model.requests[2].messages[-1])
    assert denied["is_error"] is True and "secret.txt is off limits" in denied["content"]
    assert "top secret" not in json.dumps(model.requests[2].messages)
    [payload] = payloads(tmp_path, "deny")
    assert payload["tool_name"] == "Read"
    assert payload["session_id"] == engine.session_id
    # Byte-stable system prompt across the requests of the session.
    assert len({r.system for r in model.requests}) == 1
    engine.close()


async def test_engine_prompt_stable_across_turns_and_refreshed_on_memory_change(proj, agent_home):
    write(proj / "AGENTS.md", "rules")
    model = ScriptedModel([reply("one"), reply("two"), reply("three")])
    engine = engine_for(proj, model)
    await run(engine, "first")
    await run(engine, "second")
    assert model.requests[0].system == model.requests[1].system
    mem = write(proj / ".agents/memory/MEMORY.md", "the user likes tea")
    os.utime(mem, ns=(9_000_000_000, 9_000_000_000))
    await run(engine, "third")
    assert "the user likes tea" in model.requests[2].system
    engine.close()


async def test_engine_user_prompt_submit_deny_and_context_and_session_start(proj, tmp_path, agent_home):
    ups = script(
        tmp_path,
        "ups",
        "if 'forbidden' in payload['prompt']:\n    print(json.dumps({'decision': 'block', 'reason': 'not today'}))\n"
        "else:\n    print('extra context line')\n",
    )
    ss = script(tmp_path, "ss", "print('session context line')\n")
    hooks_json(proj, {"UserPromptSubmit": [{"command": ups}], "SessionStart": [{"command": ss}]})
    model = ScriptedModel([reply("ok")])
    engine = engine_for(proj, model)
    _, terminal = await run(engine, "something forbidden")
    assert terminal.reason == "aborted" and terminal.error == "not today"
    assert model.requests == [] and engine.messages == []
    _, terminal = await run(engine, "hello")
    assert terminal.reason == "completed"
    texts = [message_text(m) for m in model.requests[0].messages]
    assert texts[0].startswith("SessionStart hook additional context: ") and "session context line" in texts[0]
    assert "extra context line" in texts[1] and texts[2] == "hello"
    assert [p["source"] for p in payloads(tmp_path, "ss")] == ["startup"]
    assert {p["session_id"] for p in payloads(tmp_path, "ups")} == {engine.session_id}
    engine.close()


async def test_engine_stop_hook_block_then_continue_false(proj, tmp_path, agent_home):
    stop = script(
        tmp_path,
        "stop",
        "if not payload['stop_hook_active']:\n    sys.stderr.write('run the tests first'); sys.exit(2)\n"
        "print(json.dumps({'continue': False, 'stopReason': 'enough'}))\n",
    )
    hooks_json(proj, {"Stop": [{"command": stop}]})
    model = ScriptedModel([reply("done?"), reply("now done")])
    engine = engine_for(proj, model)
    _, terminal = await run(engine, "work")
    assert terminal.reason == "completed"
    assert message_text(model.requests[1].messages[-1]) == "Stop hook feedback:\nrun the tests first"
    assert [p["stop_hook_active"] for p in payloads(tmp_path, "stop")] == [False, True]
    engine.close()


# -- through the real CLI against the fake Anthropic server ------------------------------------------------
def test_cli_project_with_agents_md_skill_and_hook(cli, workdir, fake_anthropic, tmp_path):
    from fake_anthropic import tool_block

    write(workdir / "AGENTS.md", "# House rules\nAlways answer in haiku.")
    write(workdir / ".agents/skills/review/SKILL.md", "---\ndescription: Review a change\n---\n# Review workflow")
    write(workdir / "secret.txt", "top secret")
    deny = script(tmp_path, "deny", "sys.stderr.write('secret.txt is off limits'); sys.exit(2)\n")
    hooks_json(workdir, {"PreToolUse": [{"matcher": "Read", "command": deny}]})
    fake_anthropic.reply(tool_block("Skill", {"skill": "review"}))
    fake_anthropic.reply(tool_block("Read", {"file_path": str(workdir / "secret.txt")}))
    fake_anthropic.reply("All reviewed.")
    trust(workdir, cli.agent_home)  # project hooks run only in a trusted folder
    r = cli("-p", "review my change", TRACE="1")
    assert r.code == 0, r.stderr
    assert "All reviewed." in r.stdout
    first, second, third = fake_anthropic.requests
    system = json.dumps(first.body["system"], ensure_ascii=False)
    assert "Always answer in haiku." in system and "- review — Review a change" in system
    assert first.body["system"] == second.body["system"] == third.body["system"]
    texts = json.dumps(second.messages[-2:])
    assert "Launching skill: review" in texts and "# Review workflow" in texts
    assert "secret.txt is off limits" in json.dumps(third.messages[-1]) and "top secret" not in json.dumps(third.messages)
    assert "[trace] hooks.pre tool=Read count=1 decision=deny" in r.stderr
    assert payloads(tmp_path, "deny")[0]["session_id"]
    assert not (workdir / ".agents" / "memory").exists()
