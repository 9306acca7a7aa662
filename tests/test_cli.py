"""The real CLI (`python -m agent`) as a subprocess against the fake Anthropic server.

Importing the SDK costs seconds, so the runs that reach the (fake) API are started together by the
`batch` fixture, each with its own fake server, home and project directory; each test then asserts on
its own run. Runs that exit before any model call (usage errors, --version, --mock) run on their own.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable

import pytest

from agent import __version__
from services.messages import tool_results, tool_uses
from tests.conftest import TEST_KEY, CliResult, CliRunner, RunningCli
from tests.fake_anthropic import FakeAnthropic, tool_block

TRACE_STAGES = ("cli.start", "query.turn_start", "api.request", "api.assistant", "tool.start", "tool.end",
                "query.turn_end")

# name -> setup(fake) returning (argv, input, env)
SCENARIOS: dict[str, Callable[[FakeAnthropic], tuple[list[str], str, dict[str, str]]]] = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
def round_trip(fake: FakeAnthropic):
    fake.reply("Echoing now.", tool_block("Echo", {"message": "round trip"}, id="toolu_cli1"))
    fake.text("The echo said: round trip.")
    return ["--verbose", "echo round trip"], "", {"TRACE": "1"}


@scenario
def json_after_529(fake: FakeAnthropic):
    fake.http_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    fake.reply(tool_block("Echo", {"message": "x"}))
    fake.text("final answer", usage={"input_tokens": 50, "cache_read_input_tokens": 10}, output_tokens=5)
    return ["--output-format", "json", "go"], "", {"TRACE": "true"}


@scenario
def stream_json_stdin(fake: FakeAnthropic):
    fake.reply("Calling.", tool_block("Echo", {"message": "s"}))
    fake.text("streamed done")
    return ["-p", "--output-format", "stream-json", "--verbose"], "task from stdin\n", {}


@scenario
def max_turns(fake: FakeAnthropic):
    fake.reply(tool_block("Echo", {"message": "again"}))
    return ["--max-turns", "1", "loop"], "", {}


@scenario
def mid_stream_retry(fake: FakeAnthropic):
    fake.stream_error("overloaded_error", "Half an ans")
    fake.text("A whole answer.")
    return ["--verbose", "hi"], "", {}


@scenario
def sigint_stalled(fake: FakeAnthropic):
    fake.stall(300)  # ended by the fixture's teardown if the interrupt never comes
    return ["wait for it"], "", {"API_TIMEOUT_MS": "600000"}


INTERRUPT_WHEN_STREAMING = {"sigint_stalled"}


def interrupt_once_streaming(fake: FakeAnthropic, run: RunningCli) -> None:
    deadline = time.monotonic() + 120
    while not fake.requests and time.monotonic() < deadline and run.proc.poll() is None:
        time.sleep(0.02)
    if fake.requests:
        time.sleep(0.2)  # the stream has started and stalls
        run.proc.send_signal(signal.SIGINT)
        run.signalled = True


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    fakes: dict[str, FakeAnthropic] = {}
    running: dict[str, RunningCli] = {}
    try:
        for name, setup in SCENARIOS.items():
            base = tmp_path_factory.mktemp(name)
            (base / "home").mkdir()
            (base / "project").mkdir()
            fake = fakes[name] = FakeAnthropic()
            argv, stdin, env = setup(fake)
            running[name] = CliRunner(base / "home", base / "project", fake).start(*argv, input=stdin, **env)
        for name in INTERRUPT_WHEN_STREAMING:
            interrupt_once_streaming(fakes[name], running[name])
        results = {name: run.result(timeout=180) for name, run in running.items()}
        yield {name: (results[name], fakes[name]) for name in SCENARIOS}
    finally:
        for fake in fakes.values():
            fake.close()


def run_of(batch, name: str) -> tuple[CliResult, FakeAnthropic]:
    result, fake = batch[name]
    try:
        fake.check()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nexit {result.code} timed_out={result.timed_out}\nstdout: {result.stdout}\nstderr: {result.stderr}") from None
    return result, fake


def no_key_anywhere(*texts: str) -> None:
    for t in texts:
        assert TEST_KEY not in t


def test_text_output_tool_round_trip_and_trace(batch):
    """Only the final answer on stdout (Claude Code's text mode), tool lines on stderr with --verbose, the
    tool_result sent back, every TRACE stage on stderr and the key nowhere."""
    r, fake_anthropic = run_of(batch, "round_trip")
    assert r.code == 0, r.stderr
    assert r.stdout == "The echo said: round trip.\n"
    assert "[tool] Echo: round trip" in r.stderr
    first, second = fake_anthropic.requests
    assert first.messages[0]["content"][0]["text"] == "echo round trip"
    assert "Echo" in [t["name"] for t in first.body["tools"]]
    assert "Working directory" in first.body["system"][0]["text"]
    assert tool_uses(second.messages[1])[0]["id"] == "toolu_cli1"
    result = tool_results(second.messages[2])[0]
    assert result["tool_use_id"] == "toolu_cli1" and result["content"] == "round trip"

    traces = [line for line in r.stderr.splitlines() if line.startswith("[trace] ")]
    stages = [line.split()[1] for line in traces]
    for stage in TRACE_STAGES:
        assert stage in stages, f"missing trace stage {stage}: {stages}"
    assert "[trace] cli.start mode=oneshot" in traces
    assert any(t.startswith("[trace] tool.start name=Echo id=toolu_cli1") for t in traces)
    assert any(t.startswith("[trace] tool.end name=Echo id=toolu_cli1 ok=true") for t in traces)
    tools = len(first.body["tools"])
    assert any(t.startswith(f"[trace] api.request messages=1 tools={tools} model=") for t in traces)
    assert any(t.startswith("[trace] api.assistant kind=tool_use") for t in traces)
    assert traces[-1].startswith("[trace] query.turn_end reason=completed turn=2")
    no_key_anywhere(r.stdout, r.stderr)
    assert TEST_KEY not in json.dumps(first.body)


def test_json_output_after_a_retried_529(batch):
    r, fake_anthropic = run_of(batch, "json_after_529")
    assert r.code == 0, r.stderr
    assert len(fake_anthropic.requests) == 3
    assert "[trace]" not in r.stderr  # TRACE is on only for exactly "1"
    obj = json.loads(r.stdout)
    assert obj["type"] == "result" and obj["subtype"] == "success" and obj["is_error"] is False
    assert obj["num_turns"] == 2 and obj["result"] == "final answer"
    assert isinstance(obj["session_id"], str) and obj["session_id"]
    usage = obj["usage"]
    assert usage["input_tokens"] == 12 + 50 and usage["output_tokens"] == 7 + 5
    assert usage["cache_read_input_tokens"] == 10 and "cache_creation_input_tokens" in usage


def test_stream_json_lines_all_parse_prompt_from_stdin(batch):
    r, fake_anthropic = run_of(batch, "stream_json_stdin")
    assert r.code == 0, r.stderr
    assert fake_anthropic.requests[0].messages[0]["content"][0]["text"] == "task from stdin"
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    types = [obj["type"] for obj in lines]
    assert types[0] == "system" and lines[0]["subtype"] == "init"
    assert types[-1] == "result" and lines[-1]["subtype"] == "success"
    # Claude Code's event types only: one assistant event per content block, the tool results as a user event.
    assert set(types) == {"system", "assistant", "user", "result"}, types
    blocks = [(o["type"], o["message"]["content"][0]["type"]) for o in lines if o["type"] in ("assistant", "user")]
    assert blocks == [("assistant", "text"), ("assistant", "tool_use"), ("user", "tool_result"), ("assistant", "text")]
    for o in lines[1:]:
        assert o["session_id"] == lines[0]["session_id"] and o["uuid"]
    assistant = lines[1]
    assert assistant["parent_tool_use_id"] is None and assistant["message"]["model"]
    assert assistant["message"]["id"].startswith("msg_") and assistant["message"]["type"] == "message"
    assert assistant["message"]["id"] == lines[2]["message"]["id"]  # two blocks of one message


def test_mid_stream_overloaded_error_is_retried_by_the_cli(batch):
    r, fake_anthropic = run_of(batch, "mid_stream_retry")
    assert r.code == 0, r.stderr
    assert len(fake_anthropic.requests) == 2
    assert "[retry] API error (overloaded error in the stream); retrying in " in r.stderr
    # Only the answer of the attempt that completed reaches stdout: no half answer, no duplicate.
    assert r.stdout == "A whole answer.\n"


def test_max_turns_exits_1_as_claude_code_does(batch):
    r, _ = run_of(batch, "max_turns")
    assert r.code == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "error: Reached maximum number of turns (1); raise it with --max-turns.")


def test_usage_errors_exit_2(cli, fake_anthropic: FakeAnthropic):
    r = cli("--output-format", "xml", "hi")
    assert r.code == 2 and "--output-format" in r.stderr
    r = cli("--permission-mode", "yolo", "hi")
    assert r.code == 2
    r = cli("-p", input="")
    assert r.code == 2 and "no prompt" in r.stderr


def test_sigint_during_a_stalled_stream_exits_130(batch):
    r, fake_anthropic = run_of(batch, "sigint_stalled")
    assert len(fake_anthropic.requests) == 1, "the CLI never reached the server"
    assert batch["sigint_stalled"][0].signalled
    assert r.code == 130, r.stderr
    assert "Interrupted" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_mock_runs_with_no_key_and_no_network(cli, fake_anthropic: FakeAnthropic):
    r = cli("--mock", "--verbose", "echo hello mock", with_fake=False)
    assert r.code == 0, r.stderr
    assert "[tool] Echo: hello mock" in r.stderr
    assert "hello mock" in r.stdout and "Mock model" in r.stdout
    assert fake_anthropic.requests == []


def test_query_mock_env_selects_the_mock(cli, fake_anthropic: FakeAnthropic):
    r = cli("--output-format", "json", "echo via env", with_fake=False, QUERY_MOCK="1")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["num_turns"] == 2


def test_no_key_without_mock_exits_1_naming_the_variable(cli, fake_anthropic: FakeAnthropic):
    r = cli("hi", with_fake=False)
    assert r.code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0]


def test_version(cli, fake_anthropic: FakeAnthropic):
    r = cli("--version", with_fake=False)
    assert r.code == 0 and r.stdout.strip() == f"agent {__version__}"


def test_malformed_setting_is_one_line_not_a_traceback(cli, fake_anthropic: FakeAnthropic):
    r = cli("hi", API_MAX_RETRIES="abc")
    assert r.code == 1
    assert r.stderr.strip().splitlines() == [
        "error: environment variable API_MAX_RETRIES: expected an integer, got 'abc'"
    ]
    assert fake_anthropic.requests == []
