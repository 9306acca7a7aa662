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
    (result,) = [b for b in fake.requests[-1].messages[-1]["content"] if b.get("tool_use_id") == "b1"]
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


def test_deny_gives_the_model_the_reason(cli, fake_anthropic) -> None:
    setup(cli, {"permissionDecision": "deny", "permissionDecisionReason": "no shell today"}, allow=["Bash(echo:*)"])
    result = run_bash(cli, fake_anthropic, "echo plain")
    assert result.get("is_error") and text(result) == "PreToolUse hook denied this tool call: no shell today"


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
