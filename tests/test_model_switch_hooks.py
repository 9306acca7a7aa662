"""Claude Code's PreModelSwitch/PostModelSwitch hooks, side by side with 2.1.332 (model_switch.json, recorded by
record_model_switch.py through the SDK's set_model): the same hook inputs, the same refusals in the control
response, the model kept when refused, the PostModelSwitch context sent with the next prompt. In the REPL,
`/model` runs them too, and a hook that asks gets a menu."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.trust import trust
from tests.fixtures.claude_code.record_model_switch import CASES, DROPPED, write_settings

FIXTURE = json.loads((Path(__file__).parent / "fixtures/claude_code/model_switch.json").read_text())


def project(cli, pre: dict[str, Any] | None) -> Path:
    proj = Path(cli.cwd)
    write_settings(proj, proj, pre)
    trust(proj, cli.agent_home)
    return proj


def test_recorded_from_the_current_binary() -> None:
    assert FIXTURE["version"] == "2.1.332" and set(FIXTURE["cases"]) == set(CASES)


@pytest.mark.parametrize("case", list(CASES))
def test_sdk_set_model_runs_the_hooks_as_claude_code_does(cli, fake_anthropic, case: str) -> None:
    recorded = FIXTURE["cases"][case]
    proj = project(cli, CASES[case])
    fake_anthropic.text("first")
    fake_anthropic.text("second")
    lines = [{"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}},
             {"type": "user", "message": {"role": "user", "content": "hello"}},
             {"type": "control_request", "request_id": "r2", "request": {"subtype": "set_model", "model": "sonnet"}},
             {"type": "user", "message": {"role": "user", "content": "again"}}]
    out = subprocess.run([sys.executable, "-m", "agent", "-p", "--input-format", "stream-json", "--output-format",
                          "stream-json", "--verbose", "--model", "claude-opus-5-5"],
                         input="".join(json.dumps(x) + "\n" for x in lines), capture_output=True, text=True,
                         cwd=proj, env=cli.env(), timeout=60)
    assert out.returncode == 0, out.stderr
    events = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    (response,) = [e["response"] for e in events if e.get("type") == "control_response"
                   and e["response"].get("request_id") == "r2"]
    assert response == recorded["response"]
    assert [r.body["model"] for r in fake_anthropic.requests] == recorded["models"]
    for event, want in recorded["inputs"].items():
        log = proj / f"{event}.jsonl"
        got = [{k: v for k, v in json.loads(x).items() if k not in DROPPED}
               for x in (log.read_text().splitlines() if log.exists() else []) if x.strip()]
        assert len(got) == len(want), event
        for ours, theirs in zip(got, want, strict=True):
            # The prompt's size is the fake's usage of each program's own first request.
            usage = fake_anthropic.requests[0]
            assert ours.pop("context_tokens") > 0 and theirs["context_tokens"] > 0, usage
            assert ours == {k: v for k, v in theirs.items() if k != "context_tokens"}
    sent = json.dumps(fake_anthropic.requests[-1].messages)
    # 2.1.332 sends the context as a system-role message; here it is a user message before the prompt.
    assert ("PostModelSwitch hook additional context: switched-ctx" in sent) == bool(recorded["context_in_roles"])


pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import PROMPT_READY, finish, spawn, wait_screen  # noqa: E402


def test_repl_model_command_runs_the_hooks(cli, fake_anthropic) -> None:
    """`/model` (source "command"): a hook that asks gets a menu (No keeps the model, Yes switches and the
    PostModelSwitch context goes with the next prompt); a hook that denies is told with its reason."""
    ask = {"hookSpecificOutput": {"hookEventName": "PreModelSwitch", "permissionDecision": "ask",
                                  "permissionDecisionReason": "re-caching is costly"}}
    proj = project(cli, ask)
    fake_anthropic.text("Now on the new model.")
    child = spawn(cli, "--model", "claude-opus-5-5")
    child.send("/model sonnet\r")
    child.expect_exact("(re-caching is costly)")
    wait_screen(child, "Number (Enter to cancel)")
    child.send("2\r")
    child.expect_exact("Model switch blocked by a PreModelSwitch hook: not confirmed")
    child.expect_exact(PROMPT_READY)
    child.send("/model sonnet\r")
    wait_screen(child, "Number (Enter to cancel)")
    child.send("1\r")
    child.expect_exact("Set model to")
    child.expect_exact(PROMPT_READY)
    child.send("go\r")
    child.expect_exact("Now on the new model.")
    child.expect_exact(PROMPT_READY)
    deny = {"hookSpecificOutput": {"hookEventName": "PreModelSwitch", "permissionDecision": "deny",
                                   "permissionDecisionReason": "stay on sonnet"}}
    project(cli, deny)  # hooks are read again as the settings change
    child.send("/model haiku\r")
    child.expect_exact("Model switch blocked by a PreModelSwitch hook: stay on sonnet")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    (request,) = fake_anthropic.requests
    assert request.body["model"] == "claude-sonnet-5-5"
    assert "PostModelSwitch hook additional context: switched-ctx" in json.dumps(request.messages)
    sent = [json.loads(x) for x in (proj / "PreModelSwitch.jsonl").read_text().splitlines() if x.strip()]
    assert [(s["source"], s["requested_model"], s["to_model"]) for s in sent] == [
        ("command", "sonnet", "claude-sonnet-5-5")] * 2 + [("command", "haiku", sent[-1]["to_model"])]
    assert sent[0]["context_tokens"] == 0 and sent[0]["prompt_cache_warm"] is False
