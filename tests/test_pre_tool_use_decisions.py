"""PreToolUse runs before the permission gate, with Claude Code's control output, through `agent -p`:
`permissionDecision` "allow" answers the question (deny rules still hold), "deny" gives the model the reason,
"ask" asks even where a rule allows (in `-p` nobody can answer: denied), and `updatedInput` replaces the
input, which the gate then judges (a rewrite into a command no rule allows is refused)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.trust import trust
from tests.fake_anthropic import tool_block


def setup(cli, output: dict[str, Any], allow: list[str] | None = None, deny: list[str] | None = None) -> None:
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir(exist_ok=True)
    line = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **output}})
    (proj / "hook.sh").write_text(f"cat > /dev/null\necho '{line}'\n")
    (proj / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": allow or [], "deny": deny or []},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"sh {proj / 'hook.sh'}"}]}]}}))
    trust(proj, cli.agent_home)


def run_bash(cli, fake, command: str) -> dict[str, Any]:
    fake.reply(tool_block("Bash", {"command": command, "description": "run"}, id="b1"))
    fake.text("Done.")
    r = cli("-p", "Run it.", "--output-format", "json")
    assert r.code == 0, r.stderr
    (result,) = [b for m in fake.requests[-1].messages[-2:] if isinstance(m["content"], list)
                 for b in m["content"] if b.get("tool_use_id") == "b1"]
    return result


def text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_allow_answers_the_question_but_not_a_deny_rule(cli, fake_anthropic) -> None:
    setup(cli, {})  # no decision: -p cannot ask, so an un-allowed command is denied
    assert run_bash(cli, fake_anthropic, "echo plain").get("is_error")
    setup(cli, {"permissionDecision": "allow", "permissionDecisionReason": "trusted by the hook"})
    result = run_bash(cli, fake_anthropic, "echo plain")
    assert not result.get("is_error") and "plain" in text(result)
    setup(cli, {"permissionDecision": "allow"}, deny=["Bash(echo:*)"])
    assert run_bash(cli, fake_anthropic, "echo plain").get("is_error")


WORDS = json.loads((Path(__file__).parent / "fixtures/claude_code/hook_words.json").read_text())


def test_hook_words_are_recorded_from_the_current_binary() -> None:
    version = (Path(__file__).parent / "fixtures/claude_code/version.txt").read_text().split()[0]
    assert WORDS["version"] == version == "2.1.332"


def raw_hook(cli, script: str, allow: list[str] | None = None) -> str:
    """A PreToolUse hook running `script` (its stdin read first); returns its command line."""
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir(exist_ok=True)
    (proj / "pre.sh").write_text(f"#!/bin/sh\ncat > /dev/null\n{script}\n")
    (proj / "pre.sh").chmod(0o755)
    command = str(proj / "pre.sh")
    (proj / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": allow or []},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}))
    trust(proj, cli.agent_home)
    return command


def test_deny_gives_the_model_the_reason_in_claude_codes_words(cli, fake_anthropic) -> None:
    """Each text the model gets was recorded from 2.1.332 with the same hook output (record_hooks.py)."""
    cases = WORDS["cases"]
    deny = {"permissionDecision": "deny", "permissionDecisionReason": "no touching today"}
    raw_hook(cli, f"echo '{json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', **deny}})}'",
             allow=["Bash(touch:*)"])
    result = run_bash(cli, fake_anthropic, "touch made.txt")
    assert result.get("is_error") and text(result) == cases["deny"][0]
    raw_hook(cli, """echo '{"decision":"block","reason":"legacy no"}'""")
    assert text(run_bash(cli, fake_anthropic, "touch made.txt")) == cases["block"][0]
    command = raw_hook(cli, 'echo "stderr reason" >&2; exit 2')
    recorded = cases["exit2"][0].replace(f"{WORDS['root']}/exit2/pre.sh", command)
    assert text(run_bash(cli, fake_anthropic, "touch made.txt")) == recorded
    raw_hook(cli, """echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}'""")
    assert text(run_bash(cli, fake_anthropic, "touch made.txt")) == "PreToolUse:Bash hook error: Blocked by hook"
    assert not (Path(cli.cwd) / "made.txt").exists()


def test_ask_with_nobody_to_ask_and_additional_context(cli, fake_anthropic) -> None:
    cases = WORDS["cases"]
    ask = {"hookEventName": "PreToolUse", "permissionDecision": "ask"}
    raw_hook(cli, f"echo '{json.dumps({'hookSpecificOutput': ask})}'", allow=["Bash(touch:*)"])
    assert text(run_bash(cli, fake_anthropic, "touch made.txt")) == cases["t_ask0_allowrule"][0]
    ask["permissionDecisionReason"] = "hook wants a human"
    raw_hook(cli, f"echo '{json.dumps({'hookSpecificOutput': ask})}'", allow=["Bash(touch:*)"])
    assert text(run_bash(cli, fake_anthropic, "touch made.txt")) == cases["t_ask_allowrule"][0]
    assert not (Path(cli.cwd) / "made.txt").exists()
    extra = {"hookEventName": "PreToolUse", "additionalContext": "PreToolUse-ctx"}
    raw_hook(cli, f"echo '{json.dumps({'hookSpecificOutput': extra})}'", allow=["Bash(echo:*)"])
    run_bash(cli, fake_anthropic, "echo a")
    last = fake_anthropic.requests[-1].messages[-1]["content"]
    texts = [last] if isinstance(last, str) else [b.get("text", "") for b in last if b.get("type") == "text"]
    label = cases["ctx"][0].split("\n\n")[0]  # 2.1.332 joins it with the batch's context; here it stands alone
    assert any(t.strip() == label for t in texts), texts


def test_ask_asks_even_where_a_rule_allows(cli, fake_anthropic) -> None:
    setup(cli, {}, allow=["Bash(echo:*)"])
    assert not run_bash(cli, fake_anthropic, "echo plain").get("is_error")
    setup(cli, {"permissionDecision": "ask", "permissionDecisionReason": "double-check"}, allow=["Bash(echo:*)"])
    assert run_bash(cli, fake_anthropic, "echo plain").get("is_error")  # nobody to answer in -p


def test_updated_input_runs_and_is_judged(cli, fake_anthropic) -> None:
    setup(cli, {"updatedInput": {"command": "echo rewritten", "description": "run"}}, allow=["Bash(echo:*)"])
    result = run_bash(cli, fake_anthropic, "echo original")
    assert not result.get("is_error") and "rewritten" in text(result) and "original" not in text(result)
    marker = Path(cli.cwd) / "victim"
    marker.write_text("keep me")
    setup(cli, {"updatedInput": {"command": f"rm -f {marker}", "description": "run"}}, allow=["Bash(echo:*)"])
    assert run_bash(cli, fake_anthropic, "echo harmless").get("is_error")
    assert marker.exists()  # the rewrite no rule allows was refused, not run
    setup(cli, {"updatedInput": {"command": 42}}, allow=["Bash(echo:*)"])
    result = run_bash(cli, fake_anthropic, "echo harmless")
    assert result.get("is_error") and "InputValidationError" in text(result)


def permission_hook(cli, decision: dict[str, Any], allow: list[str] | None = None) -> Path:
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir(exist_ok=True)
    log = proj / "asked.jsonl"
    line = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
    (proj / "perm.sh").write_text(f"cat >> {log}\necho >> {log}\necho '{line}'\n")
    (proj / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": allow or []},
        "hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"sh {proj / 'perm.sh'}"}]}]}}))
    trust(proj, cli.agent_home)
    return log


def test_permission_request_hooks_answer_the_question(cli, fake_anthropic) -> None:
    """Claude Code's PermissionRequest: asked only where a question would be put, it may allow (with a new
    input, judged again by validation), or deny with a message for the model."""
    log = permission_hook(cli, {"behavior": "allow"})
    result = run_bash(cli, fake_anthropic, "echo asked")
    assert not result.get("is_error") and "asked" in text(result)
    sent = json.loads(log.read_text().splitlines()[0])
    assert sent["hook_event_name"] == "PermissionRequest" and sent["tool_name"] == "Bash"
    assert sent["tool_input"]["command"] == "echo asked" and sent["permission_mode"] == "default"
    log = permission_hook(cli, {"behavior": "deny", "message": "not on Fridays"})
    result = run_bash(cli, fake_anthropic, "echo asked")
    assert result.get("is_error") and text(result) == "not on Fridays"
    # An allowed call asks nobody: the hook is not run.
    log.unlink()
    log = permission_hook(cli, {"behavior": "deny", "message": "never"}, allow=["Bash(echo:*)"])
    assert not run_bash(cli, fake_anthropic, "echo allowed").get("is_error") and not log.exists()
