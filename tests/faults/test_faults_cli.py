"""Fault injection through the real CLI (`python -m agent -p ...` subprocesses) and the fake Anthropic
server: loopback only, scripted, deterministic (issue 10, "Fault-injection tests").

Which issue bullet each test covers:
1. HTTP 429 with retry-after, 500, 529 twice, then success -> `test_http_errors_are_retried_and_traced`
2. `error` event mid-stream / connection dropped in a tool_use's JSON / stall past the read timeout
   -> `test_broken_stream_ends_clearly_runs_nothing_and_resumes` (parametrized, one chained session) and
   `test_broken_streams_leave_a_resumable_session`
3. 401 -> `test_401_is_one_line_exit_1_and_the_key_never_shows`
4. malformed tool JSON, unknown tool, 50 calls in one message, a 5 MB argument
   -> `test_hostile_tool_calls_get_error_results_or_run_bounded`
5. kill -9 during a tool, then `--continue` -> `test_kill_9_during_a_tool_then_continue_is_well_formed`
6. the spill directory cannot be written -> `test_unwritable_spill_directory_keeps_content_and_warns`
7. invalid UTF-8 and NUL bytes in a tool result -> `test_invalid_utf8_and_nul_bytes_are_sent_as_valid_json`
8. two sessions of one project at once -> `test_two_concurrent_sessions_never_share_files`

Importing the SDK costs seconds per run, so every scenario is started at once by the module's `runs`
fixture (each with its own fake server, agent home and project): first runs together, then the follow-up
(`--continue`) runs in rounds. Each test asserts on its own scenario only. "Well-formed" is
`assert_well_formed`: strict UTF-8 JSON, no two assistant messages in a row, every tool_use answered in
order by the next message (two user messages in a row are allowed: the API joins them).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services.session import load_transcript
from tests.conftest import TEST_KEY, CliResult, CliRunner, RunningCli
from tests.fake_anthropic import FakeAnthropic, Recorded, tool_block
from tests.procs import pid_alive

# Small enough that the scripted results spill, large enough that the prompts never do.
SPILL_ENV = {"COMPACT_MAX_TOOL_RESULT_CHARS": "1000"}
BYPASS = ("--permission-mode", "bypassPermissions")
WAIT = 60.0  # upper bound for "the child got there"; a healthy run takes a fraction of it


@dataclass
class Plan:
    """One scenario: the first runs (started together), optional hooks, follow-up runs (one after another)."""

    first: list[tuple[list[str], dict[str, str]]]
    then: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)
    during: Callable[[Scenario], None] | None = None  # while the first runs are running
    between: Callable[[Scenario], None] | None = None  # after the first runs, before the follow-up
    cleanup: Callable[[Scenario], None] | None = None


class HomeAndProject:
    """A scenario's directories under `base`: `home` (AGENT_HOME) and `project` (the working directory)."""

    base: Path

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def project(self) -> Path:
        return self.base / "project"


@dataclass
class Scenario(HomeAndProject):
    base: Path
    fake: FakeAnthropic
    runners: list[CliRunner]
    plan: Plan | None = None
    running: list[RunningCli] = field(default_factory=list)
    first: list[CliResult] = field(default_factory=list)
    then: list[CliResult] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def transcripts(self) -> list[Path]:
        return sorted((self.home / "projects").glob("*/*.jsonl"))


SETUPS: dict[str, Callable[[Scenario], Plan]] = {}


def scenario(fn: Callable[[Scenario], Plan]) -> Callable[[Scenario], Plan]:
    SETUPS[fn.__name__] = fn
    return fn


def wait_for(condition: Callable[[], bool], procs: list[RunningCli]) -> bool:
    """Poll until `condition` holds; give up when every child has exited or after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return True
        if all(r.proc.poll() is not None for r in procs):
            return condition()
        time.sleep(0.02)
    return False


# -- 1. HTTP errors retried ----------------------------------------------------------------------


@scenario
def retried(s: Scenario) -> Plan:
    s.fake.http_error(429, "rate_limit_error", "slow down", headers={"retry-after": "0.05"})
    # The real API sends retry-after on these too; without it the backoff would make the test slow.
    s.fake.http_error(500, "api_error", "internal", headers={"retry-after-ms": "1"})
    s.fake.http_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    s.fake.http_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    s.fake.text("Recovered answer.")
    s.fake.text("Second answer.")
    return Plan(
        first=[(["-p", "--verbose", "first question"], {"TRACE": "1", "API_MAX_RETRIES": "4"})],
        then=[(["--continue", "-p", "second question"], {})],
    )


# -- 2. broken streams ---------------------------------------------------------------------------

# One session takes each fault in turn, resumed with `--continue` after each: the request that follows a
# fault is the proof that the transcript it left is valid. The last run succeeds.
BROKEN = ("error_event", "dropped_in_tool_json", "stalled")
BROKEN_PROMPTS = ("make the file", "try again", "once more", "last try")


@scenario
def broken(s: Scenario) -> Plan:
    runs: list[tuple[list[str], dict[str, str]]] = []
    for n, kind in enumerate(BROKEN):
        marker = s.project / f"half-call-ran-{kind}"
        call = tool_block("Bash", {"command": f"touch {marker}"}, id=f"toolu_{kind}")
        env = {"API_MAX_RETRIES": "0"}
        if kind == "error_event":
            # The whole tool_use arrives, then the error event: the message is still incomplete.
            s.fake.stream_error("overloaded_error", "Creating the file.", call)
        elif kind == "dropped_in_tool_json":
            s.fake.drop("Creating the file.", call, in_block=1)
        else:
            s.fake.stall(30, True, "Creating the file.", call)  # the fake's teardown ends the sleep
            # Long enough that even a loaded machine gets the headers in time: the stall comes after them.
            env["API_TIMEOUT_MS"] = "2000"
        resume = ["--continue"] if n else []
        runs.append(([*resume, "-p", *BYPASS, BROKEN_PROMPTS[n]], env))
    s.fake.text("Resumed fine.")
    runs.append((["--continue", "-p", *BYPASS, BROKEN_PROMPTS[-1]], {}))
    return Plan(first=runs[:1], then=runs[1:])


# -- 3. 401 --------------------------------------------------------------------------------------


@scenario
def unauthorized(s: Scenario) -> Plan:
    s.fake.http_error(401, "authentication_error", "invalid x-api-key")
    return Plan(first=[(["-p", "hi"], {"TRACE": "1"})])


# -- 4. hostile tool calls -----------------------------------------------------------------------

FIFTY = 50
BIG = 5 * 1024 * 1024


@scenario
def hostile_calls(s: Scenario) -> Plan:
    s.fake.reply(tool_block("Echo", raw_json='{"message": "unterminated', id="toolu_malformed"))
    s.fake.reply(tool_block("NoSuchTool", {"x": 1}, id="toolu_unknown"))
    s.fake.reply(*[tool_block("Echo", {"message": f"m{i}"}, id=f"toolu_many_{i:02d}") for i in range(FIFTY)])
    # Big fragments: the fake would otherwise send 1.3 million SSE events.
    s.fake.reply(tool_block("Echo", {"message": "x" * BIG}, id="toolu_big"), fragment=1 << 16)
    s.fake.text("Survived all of it.")
    return Plan(first=[(["-p", "be hostile"], {})])


# -- 5. kill -9 during a tool --------------------------------------------------------------------


@scenario
def killed(s: Scenario) -> Plan:
    pid_file = s.project / "tool-started.pid"
    s.notes["pid_file"] = pid_file
    # $$ is the Bash tool's shell, the leader of its own process group (sleep included).
    s.fake.reply("Sleeping.", tool_block("Bash", {"command": f"echo $$ > {pid_file}; sleep 30"}, id="toolu_sleep"))
    s.fake.text("Back after the crash.")

    def kill_when_the_tool_runs(s: Scenario) -> None:
        run = s.running[0]
        s.notes["tool_started"] = wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip() != "", [run])
        run.proc.kill()  # SIGKILL: no handler, no cleanup, the transcript is whatever was flushed
        run.signalled = True

    def kill_the_orphaned_tool(s: Scenario) -> None:
        if pid_file.is_file() and pid_file.read_text().strip():
            pgid = int(pid_file.read_text())
            if pid_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)

    return Plan(
        first=[(["-p", *BYPASS, "sleep a while"], {})],
        during=kill_when_the_tool_runs,
        between=kill_the_orphaned_tool,
        cleanup=kill_the_orphaned_tool,
        then=[(["--continue", "-p", "are you there?"], {})],
    )


# -- 6. the spill directory cannot be written ----------------------------------------------------

# Root ignores directory modes, so the read-only case runs only for other users; the file in the way
# fails the same code path (mkdir of the spill directory) for everyone.
SPILL_BLOCKERS = ("file_in_the_way", "read_only_dir") if os.geteuid() else ("file_in_the_way",)


def _unwritable(kind: str) -> Callable[[Scenario], Plan]:
    def setup(s: Scenario) -> Plan:
        s.fake.reply(tool_block("Echo", {"message": "y" * 5000}, id="toolu_unspillable"))
        s.fake.text("Got it whole.")

        def block_the_spill_directory(s: Scenario) -> None:
            (transcript,) = s.transcripts()
            spill_dir = transcript.with_suffix("") / "tool-results"
            spill_dir.parent.mkdir(parents=True, exist_ok=True)
            if kind == "file_in_the_way":
                spill_dir.write_text("not a directory")  # what a full or broken disk looks like to mkdir
            else:
                spill_dir.mkdir(mode=0o500)
                os.chmod(spill_dir, 0o500)
            s.notes["spill_dir"] = spill_dir

        # The first run only creates the session (offline: --mock skips the SDK's import).
        return Plan(first=[(["--mock", "-p", "hello"], {})], between=block_the_spill_directory,
                    then=[(["--continue", "-p", "echo a lot"], SPILL_ENV)])

    setup.__name__ = f"unwritable_{kind}"
    return setup


for _kind in SPILL_BLOCKERS:
    scenario(_unwritable(_kind))


# -- 7. hostile bytes ----------------------------------------------------------------------------


@scenario
def hostile_bytes(s: Scenario) -> Plan:
    # Octal escapes: printf's \x is not POSIX. Bytes ff fe (never UTF-8), a NUL, then text.
    s.fake.reply(tool_block("Bash", {"command": r"printf 'head\377\376\000abc\n'"}, id="toolu_bytes"))
    s.fake.text("Read the bytes.")
    return Plan(first=[(["-p", *BYPASS, "print bad bytes"], {})])


# -- 8. two sessions at once ---------------------------------------------------------------------


@scenario
def concurrent(s: Scenario) -> Plan:
    second = FakeAnthropic()
    s.notes["fakes"] = fakes = [s.fake, second]
    s.runners.append(CliRunner(s.home, s.project, second))
    gate = s.notes["gate"] = threading.Event()
    for fake, letter in zip(fakes, "AB", strict=True):
        # The same tool_use id in both sessions: only the session directory can keep the files apart.
        fake.reply(tool_block("Echo", {"message": letter * 5000}, id="toolu_same"))
        fake.reply(f"done {letter}", gate=gate, gate_timeout=WAIT)  # held until both sessions have spilled

    def overlap(s: Scenario) -> None:
        # Both sessions have sent the request that carries their pointer: both are mid-task at once.
        s.notes["overlapped"] = wait_for(lambda: all(len(f.requests) >= 2 for f in fakes), s.running)
        gate.set()

    def close_second(s: Scenario) -> None:
        gate.set()
        second.close()

    return Plan(first=[(["-p", "spill A"], SPILL_ENV), (["-p", "spill B"], SPILL_ENV)],
                during=overlap, cleanup=close_second)


# -- the runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Any:
    scenarios: dict[str, Scenario] = {}
    try:
        for name, setup in SETUPS.items():
            base = tmp_path_factory.mktemp(name)
            (base / "home").mkdir()
            (base / "project").mkdir()
            fake = FakeAnthropic()
            s = scenarios[name] = Scenario(base, fake, [CliRunner(base / "home", base / "project", fake)])
            s.plan = setup(s)
            # Run i talks to runner i's fake server (only the concurrent scenario has two).
            for runner, (argv, env) in zip(s.runners, s.plan.first, strict=True):
                s.running.append(runner.start(*argv, **env))
        for s in scenarios.values():
            if s.plan.during:
                s.plan.during(s)
        for s in scenarios.values():
            s.first = [r.result(timeout=WAIT * 2) for r in s.running]
        for s in scenarios.values():
            if s.plan.between:
                s.plan.between(s)
        # Round k starts every scenario's k-th follow-up together.
        for k in range(max(len(s.plan.then) for s in scenarios.values())):
            round_k = {name: s.runners[0].start(*s.plan.then[k][0], **s.plan.then[k][1])
                       for name, s in scenarios.items() if k < len(s.plan.then)}
            for name, run in round_k.items():
                scenarios[name].then.append(run.result(timeout=WAIT * 2))
        yield scenarios
    finally:
        for s in scenarios.values():
            if s.plan and s.plan.cleanup:
                s.plan.cleanup(s)
            s.fake.close()


def scenario_of(runs: dict[str, Scenario], name: str) -> Scenario:
    s = runs[name]
    outputs = "\n".join(f"run {i}: exit {r.code} timed_out={r.timed_out}\nstdout: {r.stdout[-2000:]}\n"
                        f"stderr: {r.stderr[-4000:]}" for i, r in enumerate([*s.first, *s.then]))
    for fake in s.notes.get("fakes", [s.fake]):
        try:
            fake.check()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{outputs}") from None
    for r in [*s.first, *s.then]:
        assert not r.timed_out, outputs
    return s


# -- checks --------------------------------------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def assert_well_formed(rec: Recorded) -> list[dict[str, Any]]:
    """What the real API would accept: strict UTF-8 JSON, roles from a user message on, and every
    tool_use answered by exactly one tool_result, in order, in the very next message."""
    rec.raw.decode("utf-8")  # strict: raises on invalid bytes
    assert isinstance(rec.body, dict), "the request body is not JSON"
    for text in _strings(rec.body):
        text.encode("utf-8")  # raises on a lone surrogate (valid JSON escape, invalid text)
    messages = rec.body["messages"]
    roles = [m["role"] for m in messages]
    assert roles and roles[0] == "user", roles
    # Two user messages in a row are legal (the API joins them; hook notes ride that way), two assistant
    # messages are not.
    assert all(not a == b == "assistant" for a, b in zip(roles, roles[1:], strict=False)), roles
    for i, m in enumerate(messages):
        uses = [b for b in _blocks(m) if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in _blocks(m) if b.get("type") == "tool_result"]
        if m["role"] == "assistant":
            assert not results
            assert all(isinstance(u["input"], dict) for u in uses)
            if uses:
                assert i + 1 < len(messages), "the request ends with unanswered tool calls"
                answered = [b["tool_use_id"] for b in _blocks(messages[i + 1]) if b.get("type") == "tool_result"]
                assert answered == [u["id"] for u in uses], (answered, [u["id"] for u in uses])
        else:
            asked = [b["id"] for b in _blocks(messages[i - 1]) if b.get("type") == "tool_use"] if i else []
            assert results == asked, (results, asked)
    return messages


def results_by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["tool_use_id"]: b for m in messages for b in _blocks(m) if b.get("type") == "tool_result"}


def error_lines(r: CliResult) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("error:")]


def traces(r: CliResult, stage: str) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith(f"[trace] {stage} ")]


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" for b in _blocks(m) if b.get("type") == "text"]


# -- the tests -----------------------------------------------------------------------------------


def test_http_errors_are_retried_and_traced(runs):
    s = scenario_of(runs, "retried")
    (r,) = s.first
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "Recovered answer."
    retries = traces(r, "api.retry")
    assert [line.split()[2] for line in retries] == [f"attempt={n}" for n in range(1, 5)], retries
    reasons = [line.split()[3] for line in retries]
    assert reasons == ["reason=rate_limit_error", "reason=api_error", "reason=overloaded_error",
                       "reason=overloaded_error"], retries
    assert "delay=0.05" in retries[0]  # retry-after obeyed
    assert len([line for line in r.stderr.splitlines() if line.startswith("[retry] ")]) == 4
    # Five attempts of the same request, then the follow-up run.
    first_five = s.fake.requests[:5]
    assert all(rec.body == first_five[0].body for rec in first_five)
    (then,) = s.then
    assert then.code == 0, then.stderr
    assert then.stdout.strip() == "Second answer."
    messages = assert_well_formed(s.fake.requests[-1])
    assert user_texts(messages) == ["first question", "second question"]
    assert messages[1]["content"][0]["text"] == "Recovered answer."


@pytest.mark.parametrize("kind", BROKEN)
def test_broken_stream_ends_clearly_runs_nothing_and_resumes(runs, kind):
    s = scenario_of(runs, "broken")
    n = BROKEN.index(kind)
    r = [*s.first, *s.then][n]
    assert r.code == 1, r.stderr  # EXIT_CODES["error"]
    (line,) = error_lines(r)
    # A stall is a read timeout; on a busy machine the SDK may meet it as its own APITimeoutError instead.
    expected = {"error_event": ("overloaded_error",), "dropped_in_tool_json": ("dropped",),
                "stalled": ("ReadTimeout", "APITimeoutError")}
    assert any(word in line for word in expected[kind]), line
    assert "Traceback" not in r.stderr and "[tool]" not in r.stderr
    assert not (s.project / f"half-call-ran-{kind}").exists(), "a tool call from an incomplete reply ran"
    # The next run's request: the session resumed from the transcript this fault left behind.
    messages = assert_well_formed(s.fake.requests[n + 1])
    assert user_texts(messages) == list(BROKEN_PROMPTS[: n + 2])
    assert f"toolu_{kind}" not in json.dumps(messages)  # nothing of the partial reply was kept


def test_broken_streams_leave_a_resumable_session(runs):
    s = scenario_of(runs, "broken")
    last = s.then[-1]
    assert last.code == 0, last.stderr
    assert last.stdout.strip() == "Resumed fine."
    (transcript,) = s.transcripts()  # one session across the four runs
    assert not load_transcript(transcript).warnings


def test_401_is_one_line_exit_1_and_the_key_never_shows(runs):
    s = scenario_of(runs, "unauthorized")
    (r,) = s.first
    assert r.code == 1
    (line,) = error_lines(r)
    assert "401" in line and "ANTHROPIC_API_KEY" in line
    assert traces(r, "api.request"), "TRACE was not on"
    assert "Traceback" not in r.stderr
    for text in (r.stdout, r.stderr):
        assert TEST_KEY not in text and TEST_KEY[-12:] not in text
    assert len(s.fake.requests) == 1  # 401 is never retried


def test_hostile_tool_calls_get_error_results_or_run_bounded(runs):
    s = scenario_of(runs, "hostile_calls")
    (r,) = s.first
    assert r.code == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1] == "Survived all of it."
    requests = s.fake.requests
    assert len(requests) == 5

    malformed = results_by_id(assert_well_formed(requests[1]))["toolu_malformed"]
    assert malformed.get("is_error") is True and "not valid JSON" in malformed["content"], malformed

    unknown = results_by_id(assert_well_formed(requests[2]))["toolu_unknown"]
    assert unknown.get("is_error") is True and "No such tool available: NoSuchTool" in unknown["content"]

    many = results_by_id(assert_well_formed(requests[3]))
    assert [many[f"toolu_many_{i:02d}"]["content"] for i in range(FIFTY)] == [f"m{i}" for i in range(FIFTY)]
    assert not any(many[f"toolu_many_{i:02d}"].get("is_error") for i in range(FIFTY))

    big = results_by_id(assert_well_formed(requests[4]))["toolu_big"]
    content = big["content"] if isinstance(big["content"], str) else json.dumps(big["content"])
    assert len(content) < 10_000, len(content)  # spilled: a pointer, not 5 MB
    assert "<persisted-output>" in content
    (spilled,) = (s.home / "projects").glob("*/*/tool-results/toolu_big-*.txt")
    assert spilled.stat().st_size == BIG
    # The user is told, in one line, where the output went (issue 4: no silent relocation).
    notices = [line for line in r.stderr.splitlines() if line.startswith("[spill] ")]
    assert notices == [f"[spill] Output of Echo (5MB) saved to {spilled}"], notices


def test_kill_9_during_a_tool_then_continue_is_well_formed(runs):
    s = scenario_of(runs, "killed")
    (r,) = s.first
    assert s.notes["tool_started"], f"the tool never started\n{r.stderr}"
    assert r.code == -signal.SIGKILL
    (then,) = s.then
    assert then.code == 0, then.stderr
    assert then.stdout.strip() == "Back after the crash."
    messages = assert_well_formed(s.fake.requests[-1])
    assert user_texts(messages)[0] == "sleep a while" and user_texts(messages)[-1] == "are you there?"
    interrupted = results_by_id(messages)["toolu_sleep"]  # the interrupted call got its result
    assert interrupted.get("is_error") is True


@pytest.mark.parametrize("kind", SPILL_BLOCKERS)
def test_unwritable_spill_directory_keeps_content_and_warns(runs, kind):
    s = scenario_of(runs, f"unwritable_{kind}")
    assert s.first[0].code == 0, s.first[0].stderr
    (r,) = s.then
    assert r.code == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "Got it whole."
    warnings = [line for line in r.stderr.splitlines() if "Could not save the output of Echo" in line]
    assert len(warnings) == 1, r.stderr
    messages = assert_well_formed(s.fake.requests[-1])
    assert results_by_id(messages)["toolu_unspillable"]["content"] == "y" * 5000  # in place, whole
    assert not list(s.home.glob("projects/*/*/tool-results/*.txt"))


def test_invalid_utf8_and_nul_bytes_are_sent_as_valid_json(runs):
    s = scenario_of(runs, "hostile_bytes")
    (r,) = s.first
    assert r.code == 0, r.stderr
    messages = assert_well_formed(s.fake.requests[1])  # strict UTF-8, no lone surrogates
    content = results_by_id(messages)["toolu_bytes"]["content"]
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    assert "head\ufffd\ufffd" in text and "abc" in text, repr(text)
    (transcript,) = s.transcripts()
    assert not load_transcript(transcript).warnings


def test_two_concurrent_sessions_never_share_files(runs):
    s = scenario_of(runs, "concurrent")
    assert s.notes["overlapped"], "the two sessions never ran at the same time"
    assert not any(f.gate_timed_out for f in s.notes["fakes"]), "one session finished before the other spilled"
    assert [r.code for r in s.first] == [0, 0], [r.stderr for r in s.first]
    assert [r.stdout.strip() for r in s.first] == ["done A", "done B"]
    transcripts = s.transcripts()
    assert len(transcripts) == 2
    spills = sorted(s.home.glob("projects/*/*/tool-results/toolu_same-*.txt"))
    assert len(spills) == 2 and spills[0] != spills[1]
    assert sorted(p.read_text() for p in spills) == ["A" * 5000, "B" * 5000]
    by_letter = {}
    for t in transcripts:
        loaded = load_transcript(t)
        assert not loaded.warnings
        letter = user_texts(loaded.messages)[0][-1]
        by_letter[letter] = t
        (own_spill,) = t.with_suffix("").glob("tool-results/toolu_same-*.txt")
        assert own_spill.read_text() == letter * 5000
    assert sorted(by_letter) == ["A", "B"]
    for fake, letter in zip(s.notes["fakes"], "AB", strict=True):
        pointer = results_by_id(assert_well_formed(fake.requests[1]))["toolu_same"]["content"]
        assert str(by_letter[letter].with_suffix("")) in pointer
