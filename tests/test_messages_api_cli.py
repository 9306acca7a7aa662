"""Every Messages API outcome through the real CLI (`python -m agent`) in text, json and stream-json,
and in the REPL (a real pseudo-terminal). The one-shot runs start together (the SDK import is slow)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TEST_KEY, CliRunner
from tests.fake_anthropic import FakeAnthropic, thinking_block, tool_block

SCENARIOS: dict = {}
FORMATS = ("text", "json", "stream-json")


def scenario(name: str, formats=FORMATS):
    def register(fn):
        for fmt in formats:
            SCENARIOS[f"{name}-{fmt}"] = (fn, fmt)
        return fn

    return register


@scenario("refusal")
def refusal(fake: FakeAnthropic):
    fake.reply(stop_reason="refusal")
    return ["do something refused"], {}


@scenario("max_tokens_text")
def max_tokens_text(fake: FakeAnthropic):
    fake.reply("The answer begins and", stop_reason="max_tokens")
    return ["long answer"], {}


@scenario("max_tokens_tool_twice")
def max_tokens_tool_twice(fake: FakeAnthropic):
    for _ in range(2):
        fake.reply("Writing.", tool_block("Echo", raw_json='{"message": "a long fi'), stop_reason="max_tokens")
    # A model whose default max_tokens (32000) is below its maximum (64000): the retry has room to grow.
    return ["--model", "claude-haiku-4-5", "write it"], {}


@scenario("dropped_then_whole")
def dropped_then_whole(fake: FakeAnthropic):
    fake.drop("The first attempt that is cut off half way through")
    fake.text("A whole answer.")
    return ["hi"], {}


@scenario("dropped_partial", formats=("stream-json",))
def dropped_partial(fake: FakeAnthropic):
    fake.drop("The first attempt that is cut off half way through")
    fake.text("A whole answer.")
    return ["--include-partial-messages", "hi"], {}


@scenario("thinking", formats=("text", "json"))
def thinking(fake: FakeAnthropic):
    fake.reply(thinking_block("secret plan", "sig-1"), "Visible answer.")
    return ["--model", "claude-haiku-4-5", "think"], {"MAX_THINKING_TOKENS": "4000"}  # a budget-thinking model


@scenario("output_env", formats=("text",))
def output_env(fake: FakeAnthropic):
    fake.text("ok")
    return ["hi"], {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "2000"}


@scenario("key_in_error", formats=("text", "json"))
def key_in_error(fake: FakeAnthropic):
    fake.http_error(400, "invalid_request_error", f"header x-api-key: {TEST_KEY} rejected")
    return ["hi"], {}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    fakes, running = {}, {}
    try:
        for name, (setup, fmt) in SCENARIOS.items():
            base = tmp_path_factory.mktemp(name)
            (base / "home").mkdir()
            (base / "project").mkdir()
            fake = fakes[name] = FakeAnthropic()
            argv, env = setup(fake)
            verbose = ["--verbose"] if fmt == "stream-json" else []  # Claude Code requires it there
            running[name] = CliRunner(base / "home", base / "project", fake).start(
                "-p", "--output-format", fmt, *verbose, *argv, **env)
        results = {name: run.result(timeout=180) for name, run in running.items()}
        yield {name: (results[name], fakes[name]) for name in SCENARIOS}
    finally:
        for fake in fakes.values():
            fake.close()


def run_of(batch, name: str):
    result, fake = batch[name]
    fake.check()
    assert TEST_KEY not in result.stdout + result.stderr
    return result, fake


def result_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("fmt", FORMATS)
def test_refusal_is_an_error_in_every_format(batch, fmt):
    r, _ = run_of(batch, f"refusal-{fmt}")
    assert r.code == 1
    assert "declined" in r.stderr
    if fmt != "text":
        res = result_line(r.stdout)
        assert res["is_error"] is True and res["stop_reason"] == "refusal" and res["terminal_reason"] == "refusal"
        assert "declined" in res["result"]
    if fmt == "stream-json":
        assert not [e for e in lines(r.stdout) if e["type"] == "assistant"]  # no empty message


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_tokens_in_text_keeps_the_text_and_marks_the_result(batch, fmt):
    r, _ = run_of(batch, f"max_tokens_text-{fmt}")
    assert r.code == 1
    assert "cut at the output limit" in r.stderr
    if fmt == "text":
        assert r.stdout == "The answer begins and\n"
    else:
        res = result_line(r.stdout)
        assert res["subtype"] == "error_max_tokens" and res["is_error"] is True
        assert res["result"] == "The answer begins and"


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_tokens_inside_a_tool_call_twice_never_runs_it(batch, fmt):
    r, fake = run_of(batch, f"max_tokens_tool_twice-{fmt}")
    assert r.code == 1
    assert "not run" in r.stderr
    assert [q.body["max_tokens"] for q in fake.requests] == [32000, 64000]
    if fmt == "stream-json":  # the half-written call never ran and was never shown as a call
        events = lines(r.stdout)
        assert len([e for e in events if e.get("subtype") == "api_retry"]) == 1
        blocks = [e["message"]["content"][0] for e in events if e["type"] == "assistant"]
        assert blocks == [{"type": "text", "text": "Writing."}]
        assert not [e for e in events if e["type"] == "user"] and "__invalid_json__" not in r.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_dropped_stream_is_retried_and_its_text_never_shows_twice(batch, fmt):
    r, fake = run_of(batch, f"dropped_then_whole-{fmt}")
    assert r.code == 0, r.stderr
    assert len(fake.requests) == 2
    if fmt == "text":
        assert r.stdout == "A whole answer.\n"  # nothing of the cut attempt
    elif fmt == "json":
        assert result_line(r.stdout)["result"] == "A whole answer."
    else:
        events = lines(r.stdout)
        assert [e.get("subtype") for e in events].count("api_retry") == 1
        assert "stream_event" not in [e["type"] for e in events]  # no partial output without the flag
        assistants = [e for e in events if e["type"] == "assistant"]
        assert len(assistants) == 1 and assistants[0]["message"]["content"] == [
            {"type": "text", "text": "A whole answer."}]  # only the whole reply is a message


def test_partial_messages_mark_the_discarded_attempt(batch):
    r, _ = run_of(batch, "dropped_partial-stream-json")
    assert r.code == 0, r.stderr
    events = lines(r.stdout)
    retry_at = [e.get("subtype") for e in events].index("api_retry")
    def deltas(evs):
        return "".join(e["event"]["delta"].get("text", "") for e in evs
                       if e["type"] == "stream_event" and e["event"]["type"] == "content_block_delta")

    assert deltas(events[:retry_at]).startswith("The first")  # the cut attempt's deltas come before the mark
    assert deltas(events[retry_at:]) == "A whole answer."  # and only the retried reply's after it


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_thinking_is_requested_and_omitted_from_text(batch, fmt):
    r, fake = run_of(batch, f"thinking-{fmt}")
    assert r.code == 0, r.stderr
    body = fake.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000, "display": "omitted"}
    assert body["max_tokens"] > 4000
    assert "secret plan" not in r.stdout
    if fmt == "text":
        assert r.stdout == "Visible answer.\n"


def test_claude_code_max_output_tokens_sets_max_tokens(batch):
    r, fake = run_of(batch, "output_env-text")
    assert r.code == 0 and fake.requests[0].body["max_tokens"] == 2000


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_an_api_error_echoing_the_key_is_scrubbed(batch, fmt):
    r, _ = run_of(batch, f"key_in_error-{fmt}")  # run_of asserts the key is nowhere
    assert r.code == 1 and "[REDACTED]" in r.stdout + r.stderr


def test_refusal_then_continue_never_sends_empty_content(cli, fake_anthropic):
    fake_anthropic.reply(stop_reason="refusal")
    fake_anthropic.text("Hello.")
    assert cli("-p", "refused").code == 1
    r = cli("-p", "-c", "hello")
    assert r.code == 0 and r.stdout == "Hello.\n"
    assert all(m["content"] for m in fake_anthropic.requests[-1].messages)


def test_mock_reports_itself_and_costs_nothing(cli):
    r = cli("-p", "--mock", "--output-format", "json", "echo hi", with_fake=False)
    assert r.code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["total_cost_usd"] == 0 and list(res["modelUsage"]) in ([], ["mock"])


def test_bad_output_limit_and_effort_are_one_line_errors(cli):
    r = cli("-p", "hi", CLAUDE_CODE_MAX_OUTPUT_TOKENS="lots")
    assert r.code != 0 and "CLAUDE_CODE_MAX_OUTPUT_TOKENS" in r.stderr and "Traceback" not in r.stderr
    r = cli("-p", "--effort", "extreme", "hi")
    assert r.code != 0 and "--effort" in r.stderr and "Traceback" not in r.stderr


def test_repl_shows_a_refusal_and_goes_on(cli, fake_anthropic):
    from tests.test_repl_pty import finish, run_line, spawn

    fake_anthropic.reply(stop_reason="refusal")
    fake_anthropic.text("Still here.")
    child = spawn(cli)
    run_line(child, "refused thing", "declined")
    run_line(child, "hello", "Still here.")
    child.send("\x04")
    assert finish(child) == 0
    assert all(m["content"] for m in fake_anthropic.requests[-1].messages)


def test_repl_retries_a_dropped_attempt_and_shows_thinking(cli, fake_anthropic):
    from tests.test_repl_pty import finish, run_line, spawn

    fake_anthropic.drop("Partial words that will be dropped soon")
    fake_anthropic.reply(thinking_block("pondering the question", "sig-r"), "Final words.")
    child = spawn(cli, "--model", "claude-haiku-4-5", MAX_THINKING_TOKENS="2000")  # a budget-thinking model
    run_line(child, "go", "pondering the question", "Final words.")
    child.send("\x04")
    assert finish(child) == 0
    assert fake_anthropic.requests[1].body["thinking"]["type"] == "enabled"
