"""/model in a real terminal (pexpect + a terminal emulator): a typo is refused at once with Claude Code's
words and the known models, a catalog name is taken, and the status line and /status show the model."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pexpect")

from tests.test_repl_pty import finish, read_until, run_line, spawn  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


def test_model_refuses_a_typo_and_takes_a_known_name(cli, fake_anthropic) -> None:
    fake_anthropic.serve_models({"claude-opus-5-5": {}, "claude-sonnet-5-5": {}})
    fake_anthropic.text("Hello from Sonnet.")
    child = spawn(cli)
    screen = read_until(child, lambda s: "claude-opus-5-5 ·" in s)
    assert "claude-opus-5-5 ·" in screen  # the status line names the default model
    run_line(child, "/model claude-opuss-5-5",
             "Model \"claude-opuss-5-5\" is not a recognized model id. Did you mean 'claude-opus-5-5'?",
             "Known models:")
    run_line(child, "/model sonnet", "Set model to Sonnet 5.5 (claude-sonnet-5-5)")
    screen = read_until(child, lambda s: "claude-sonnet-5-5 ·" in s)
    assert "claude-sonnet-5-5 ·" in screen
    run_line(child, "/status", "Model: Sonnet 5.5 (claude-sonnet-5-5)")
    run_line(child, "hi", "Hello from Sonnet.")
    child.send("/exit\r")
    assert finish(child) == 0
    # The typo cost one Models API question and its list; no model call; the turn went to Sonnet.
    assert [r.path for r in fake_anthropic.get_requests] == ["/v1/models/claude-opuss-5-5", "/v1/models"]
    assert [r.body["model"] for r in fake_anthropic.requests] == ["claude-sonnet-5-5"]


def test_a_retired_model_is_said_once_at_start_and_on_model(cli, fake_anthropic) -> None:
    line = "\u26a0 Claude Sonnet 4.5 was retired on November 30, 2026. Consider switching to a newer model."
    child = spawn(cli, "--model", "claude-sonnet-4-5")
    screen = read_until(child, lambda s: line in s)
    assert screen.count(line) == 1 and "claude-sonnet-4-5 ·" in read_until(child, lambda s: "claude-sonnet-4-5 ·" in s)
    run_line(child, "/model opus", "Set model to Opus 5.5 (claude-opus-5-5)")
    run_line(child, "/model claude-sonnet-4-5", line, "Set model to Sonnet 4.5 (claude-sonnet-4-5)")
    child.send("/exit\r")
    assert finish(child) == 0


def test_alt_t_turns_thinking_off_for_the_session_and_status_says_so(cli, fake_anthropic) -> None:
    fake_anthropic.text("Thought about it.")
    fake_anthropic.text("Answered without thinking.")
    child = spawn(cli, "--model", "claude-haiku-4-5")
    run_line(child, "/status", "Thinking: on (enabled, budget 31999) (Alt+T turns it off)")
    run_line(child, "first", "Thought about it.")
    child.send("\x1bt")  # Alt+T
    assert "Thinking: off (Alt+T turns it on)" in read_until(child, lambda s: "Thinking: off (Alt+T" in s)
    run_line(child, "second", "Answered without thinking.")
    run_line(child, "/status", "Thinking: off (Alt+T turns it on)")
    child.send("/exit\r")
    assert finish(child) == 0
    first, second = (r.body for r in fake_anthropic.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 31_999, "display": "omitted"}
    assert second["thinking"] == {"type": "disabled"} and "context_management" not in second
