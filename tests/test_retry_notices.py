"""A retried model call is never silent: the real CLI against the fake server answering 529 twice, then the
answer (`retry-after-ms: 1` keeps the waits short; nothing here asserts on time).

- text and json: one `[retry]` line per retry on stderr (the reason, the wait, attempt n/max); json's stdout
  is the one result object, nothing more;
- stream-json: Claude Code 2.1.332's `system`/`api_retry` records, compared with the recording in
  tests/fixtures/claude_code/api_retry.json (keys in order, values but the random delay), nothing on stderr;
- a closed port: "connection refused" in each line, then the one error line.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "claude_code" / "api_retry.json").read_text())
RETRY_LINE = re.compile(r"^\[retry\] API error \((?P<reason>[^)]*)\); retrying in (?P<wait>\d+(\.\d)? m?s) "
                        r"\(attempt (?P<n>\d+)/(?P<max>\d+)\)$")
SHORT = {"retry-after-ms": "1"}


def overloaded_twice(fake: FakeAnthropic) -> None:
    for _ in range(2):
        fake.http_error(529, "overloaded_error", "Overloaded", headers=SHORT)
    fake.text("The answer.")


def retry_lines(stderr: str) -> list[re.Match[str]]:
    lines = [line for line in stderr.splitlines() if line.startswith("[retry]")]
    matches = [RETRY_LINE.match(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m is not None]


def test_text_mode_says_each_retry_on_stderr(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    overloaded_twice(fake_anthropic)
    r = cli("-p", "hi", API_MAX_RETRIES="4", timeout=120)
    assert r.code == 0, r.stderr
    assert r.stdout == "The answer.\n"
    lines = retry_lines(r.stderr)
    assert [(m["reason"], m["n"], m["max"]) for m in lines] == [("529 overloaded", "1", "4"),
                                                                 ("529 overloaded", "2", "4")]
    assert len(fake_anthropic.requests) == 3


def test_json_mode_keeps_stdout_to_the_result(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    overloaded_twice(fake_anthropic)
    r = cli("-p", "hi", "--output-format", "json", API_MAX_RETRIES="4", timeout=120)
    assert r.code == 0, r.stderr
    (line,) = r.stdout.splitlines()  # one result object, no retry record beside it
    assert json.loads(line)["result"] == "The answer."
    assert len(retry_lines(r.stderr)) == 2


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the fixture keeps it: ids dropped, the delay (random jitter) as its type."""
    kept = {k: v for k, v in record.items() if k not in ("session_id", "uuid")}
    kept["retry_delay_ms"] = "<ms>" if isinstance(record["retry_delay_ms"], int) else record["retry_delay_ms"]
    kept["keys"] = list(record)
    return kept


def test_stream_json_has_claude_codes_api_retry_records(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    overloaded_twice(fake_anthropic)
    recorded = RECORDED["cases"]["529_twice"]["stream_json"]
    r = cli("-p", "hi", "--output-format", "stream-json", "--verbose", API_MAX_RETRIES="10", timeout=120)
    assert r.code == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [[e.get("type"), e.get("subtype")] for e in events] == recorded["events"]
    retries = [e for e in events if e.get("subtype") == "api_retry"]
    assert [comparable(e) for e in retries] == recorded["api_retry"]  # max_retries 10 here, as there
    assert all(e["session_id"] == events[0]["session_id"] and e["uuid"] for e in retries)
    assert "[retry]" not in r.stderr and r.stderr == recorded["stderr"]


@pytest.mark.parametrize("case", ["429", "503", "dropped_stream"])
def test_stream_json_error_categories_match_the_recording(case: str, cli: CliRunner,
                                                          fake_anthropic: FakeAnthropic) -> None:
    recorded = RECORDED["cases"][case]["stream_json"]
    if case == "dropped_stream":
        fake_anthropic.drop("partial")
    else:
        status = int(case)
        fake_anthropic.http_error(status, "rate_limit_error" if status == 429 else "api_error", "x", headers=SHORT)
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--output-format", "stream-json", "--verbose", API_MAX_RETRIES="10", timeout=120)
    assert r.code == 0, r.stderr
    retries = [comparable(json.loads(line)) for line in r.stdout.splitlines() if '"api_retry"' in line]
    assert retries == recorded["api_retry"]


def test_an_error_event_inside_the_stream_gets_no_record(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.stream_error("overloaded_error")
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--output-format", "stream-json", "--verbose", API_MAX_RETRIES="2", timeout=120)
    assert r.code == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [[e.get("type"), e.get("subtype")] for e in events] == RECORDED["cases"]["stream_overloaded_error"][
        "stream_json"]["events"]
    assert len(fake_anthropic.requests) == 2  # retried all the same


def test_a_closed_port_says_connection_refused(agent_home: Path, workdir: Path) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cli = CliRunner(agent_home, workdir, None)
    r = cli("-p", "hi", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="sk-ant-test",
            API_MAX_RETRIES="2", timeout=120)
    assert r.code == 1
    assert r.stdout == ""
    lines = retry_lines(r.stderr)
    assert [(m["reason"], m["n"], m["max"]) for m in lines] == [("connection refused", "1", "2"),
                                                                 ("connection refused", "2", "2")]
    assert "connection refused" in r.stderr.splitlines()[-1]  # then the one error line
    assert "Traceback" not in r.stderr
