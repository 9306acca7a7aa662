"""A session's budget (`--max-budget-usd`, settings' `maxBudgetUsd`) holds across turns: in the REPL (a real
terminal, pexpect) and in a stream-json session, against the fake API whose replies report large usage.

Prices: claude-sonnet-4-5 input is $3 per million tokens, so a reply reporting 100,000 input tokens spends
$0.30 (plus a few output tokens)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.budget import Budget, parse_usd
from tests.fake_anthropic import tool_block

pexpect = pytest.importorskip("pexpect")

from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402

MODEL = "claude-sonnet-4-5"
BIG = {"input_tokens": 100_000}  # $0.30 a reply


def test_budget_warns_once_then_stops_once_per_limit() -> None:
    b = Budget(1.0)
    assert b.notices(0.5) == []
    assert b.notices(0.85)[0].startswith("warning: $0.85 of the $1.00 budget is spent (85%)")
    assert b.notices(0.9) == []  # said once
    assert b.refuse(0.99) is None
    assert "The budget of $1.00 is spent" in (b.refuse(1.0) or "")
    assert b.notices(1.2) == []  # the refusal said it
    b.raise_to(2.0)
    assert b.refuse(1.2) is None and b.notices(1.2) == []
    assert parse_usd("$5") == 5.0 and parse_usd("0") is None and parse_usd("nan") is None
    assert parse_usd("-1") is None and parse_usd("inf") is None and parse_usd("lots") is None


def test_repl_budget_warns_stops_sending_and_budget_raises_it(cli, fake_anthropic) -> None:
    (Path(cli.cwd) / "a.txt").write_text("alpha\n")
    fake_anthropic.text("First answer.", usage=BIG)  # $0.30 of $0.35: past 80%
    fake_anthropic.reply(tool_block("Read", {"file_path": str(Path(cli.cwd) / "a.txt")}, id="r1"), usage=BIG)
    fake_anthropic.text("After the raise.")
    child = spawn(cli, "--model", MODEL, "--max-budget-usd", "0.35")
    stop = "The budget of $0.35 is spent: no further request is sent. /budget <usd> raises it."
    child.send("one\r")
    child.expect_exact("First answer.")
    child.expect_exact("of the $0.35 budget is spent (8")
    child.expect_exact(PROMPT_READY)
    child.send("two\r")  # its reply asks for a tool; the request after the tool is not sent
    child.expect_exact(stop)
    child.expect_exact(PROMPT_READY)
    assert len(fake_anthropic.requests) == 2
    child.send("three\r")  # refused before any request; the prompt goes back into the input box
    child.expect_exact(stop)
    child.expect_exact(PROMPT_READY)
    assert len(fake_anthropic.requests) == 2
    child.send("\x15/cost\r")  # Ctrl-U clears the put-back prompt first
    child.expect_exact("of the $0.35 budget; $0.00 remaining.")
    child.expect_exact(PROMPT_READY)
    child.send("/budget lots\r")
    child.expect_exact("Not an amount: 'lots'")
    child.expect_exact(PROMPT_READY)
    child.send("/budget 100\r")
    child.expect_exact("Budget set to $100.00")
    child.expect_exact(PROMPT_READY)
    child.send("four\r")
    child.expect_exact("After the raise.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert len(fake_anthropic.requests) == 3
    last = fake_anthropic.requests[2].messages[-1]["content"]
    assert any(b.get("text") == "four" for b in last if isinstance(b, dict))


def _stream_json(cli, *prompts: str, extra: tuple[str, ...] = ()) -> list[dict]:
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}}) + "\n"
                    for p in prompts)
    out = subprocess.run(
        [sys.executable, "-m", "agent", "-p", "--input-format", "stream-json", "--output-format", "stream-json",
         "--verbose", "--model", MODEL, *extra],
        input=lines, capture_output=True, text=True, cwd=cli.cwd, env=cli.env(), timeout=60)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_stream_json_session_stops_after_the_budget_across_turns(cli, fake_anthropic) -> None:
    (Path(cli.cwd) / "a.txt").write_text("alpha\n")
    fake_anthropic.text("First answer.", usage=BIG)
    fake_anthropic.reply(tool_block("Read", {"file_path": str(Path(cli.cwd) / "a.txt")}, id="r1"), usage=BIG)
    events = _stream_json(cli, "one", "two", "three", extra=("--max-budget-usd", "0.5"))
    results = [e for e in events if e.get("type") == "result"]
    assert [r["subtype"] for r in results] == ["success", "error_max_budget_usd", "error_max_budget_usd"]
    assert len(fake_anthropic.requests) == 2  # the tool's follow-up and the third prompt were never sent


def test_settings_max_budget_usd_is_the_default_and_the_flag_wins(cli, fake_anthropic) -> None:
    claude = Path(cli.cwd) / ".claude"
    claude.mkdir(exist_ok=True)
    (claude / "settings.json").write_text(json.dumps({"maxBudgetUsd": 0.2}))
    fake_anthropic.text("First answer.", usage=BIG)
    results = [e for e in _stream_json(cli, "one", "two") if e.get("type") == "result"]
    assert [r["subtype"] for r in results] == ["success", "error_max_budget_usd"]
    fake_anthropic.text("Again.", usage=BIG)
    fake_anthropic.text("And again.", usage=BIG)
    results = [e for e in _stream_json(cli, "one", "two", extra=("--max-budget-usd", "5"))
               if e.get("type") == "result"]
    assert [r["subtype"] for r in results] == ["success", "success"]
    assert len(fake_anthropic.requests) == 3


def test_a_sub_agent_stops_at_the_budget_and_a_resumed_session_keeps_it(cli, fake_anthropic) -> None:
    """The budget sees a sub-agent's spending while it runs, not only when it ends; a resumed session
    counts what it spent before."""
    (Path(cli.cwd) / "a.txt").write_text("alpha\n")
    read = {"file_path": str(Path(cli.cwd) / "a.txt")}
    fake_anthropic.reply(tool_block("Agent", {"description": "look", "prompt": "Read a.txt twice.",
                                              "subagent_type": "general-purpose"}, id="a1"))
    fake_anthropic.reply(tool_block("Read", read, id="c1"), usage=BIG)  # the sub-agent: $0.30
    fake_anthropic.reply(tool_block("Read", read, id="c2"), usage=BIG)  # $0.60: past the $0.50 budget
    result = cli("-p", "Delegate.", "--model", MODEL, "--max-budget-usd", "0.5", "--output-format", "json",
                 "--allowedTools", "Read")
    out = json.loads(result.stdout)
    assert result.code == 1 and out["subtype"] == "error_max_budget_usd", result.stdout + result.stderr
    assert len(fake_anthropic.requests) == 3  # the sub-agent's third request and the parent's next were not sent
    assert out["total_cost_usd"] >= 0.6
    resumed = cli("-p", "Go on.", "--model", MODEL, "--max-budget-usd", "0.5", "--output-format", "json",
                  "--resume", out["session_id"])
    assert json.loads(resumed.stdout)["subtype"] == "error_max_budget_usd", resumed.stdout + resumed.stderr
    assert len(fake_anthropic.requests) == 3


def test_stream_json_says_the_80_percent_warning_once(cli, fake_anthropic) -> None:
    fake_anthropic.text("First answer.", usage=BIG)  # $0.30 of $0.70, then $0.60: past 80%
    fake_anthropic.text("Second answer.", usage=BIG)
    fake_anthropic.text("Third answer.", usage=BIG)  # $0.90: the fourth prompt is refused
    events = _stream_json(cli, "one", "two", "three", "four", extra=("--max-budget-usd", "0.7"))
    warnings = [e for e in events if e.get("type") == "system" and e.get("subtype") == "budget_warning"]
    assert len(warnings) == 1 and warnings[0]["message"].startswith("warning: $0.6002 of the $0.7 budget is spent (86%)")
    results = [e["subtype"] for e in events if e.get("type") == "result"]
    assert results == ["success", "success", "success", "error_max_budget_usd"]
