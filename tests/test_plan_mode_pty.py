"""ExitPlanMode in the REPL, in a real pseudo-terminal: the plan shown with Claude Code's question and choices;
approving leaves plan mode with Claude Code 2.1.332's result text; "No, keep planning" keeps it. A one-shot run
is not offered the tool (as the real 2.1.332 binary in `-p --permission-mode plan`, recorded)."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.test_repl_pty import finish, spawn, wait_screen  # noqa: E402
from tools.exit_plan_mode import approved_result  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
PLAN = "1. Add greet()\n2. Test it"


def _result(request) -> dict:  # noqa: ANN001
    return request.messages[-1]["content"][0]


def test_keep_planning_then_approve(cli, fake_anthropic) -> None:
    fake_anthropic.reply(tool_block("ExitPlanMode", {"plan": PLAN}))
    fake_anthropic.reply(tool_block("ExitPlanMode", {"plan": PLAN + "\n3. Ship"}))
    fake_anthropic.text("Starting.")
    child = spawn(cli, "--permission-mode", "plan")
    child.send("plan the greeting\r")
    wait_screen(child, "2. Test it")
    wait_screen(child, "3. No, keep planning")
    child.send("3")
    wait_screen(child, "what to do differently")
    child.send("add shipping\r")
    wait_screen(child, "3. Ship")
    wait_screen(child, "Exit plan mode?")
    child.send("\r")  # 1. Yes
    wait_screen(child, "Starting.")
    wait_screen(child, "default (shift+tab)")  # the toolbar: plan mode is over
    child.send("\x04")
    assert finish(child) == 0
    first, second, third = fake_anthropic.requests
    assert "ExitPlanMode" in [t["name"] for t in first.body["tools"]]
    kept = _result(second)
    assert kept["is_error"] and "To tell you how to proceed, the user said:\nadd shipping" in str(kept["content"])
    approved = _result(third)
    assert not approved.get("is_error") and approved_result(PLAN + "\n3. Ship") in str(approved["content"])


def test_one_shot_runs_do_not_offer_exit_plan_mode(cli, fake_anthropic) -> None:
    fake_anthropic.text("A plan.")
    r = cli("-p", "plan it", "--permission-mode", "plan")
    assert r.code == 0, r.stderr
    assert "ExitPlanMode" not in [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
