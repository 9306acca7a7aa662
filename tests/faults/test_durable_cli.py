"""Nothing lost, nothing crashes: a table of faults, each through the real CLI
(`python -m agent` subprocesses against the fake Anthropic server).

Every row does its runs, then checks the same three things: the faulty run ended with at most one clear
`error:` line and no traceback (nor asyncio noise), and the next `agent -c` resumes a history the API
accepts that holds every user message that was on disk. Rows run concurrently (importing the SDK costs
seconds per run); each test asserts its own row.

Rows: a torn last record (three byte offsets; every offset is covered in process by test_store.py), a
line merged by an older version, a corrupted tool_use line, a second process on the session (refused,
then --fork-session), a full disk (a small tmpfs), a read-only home (a read-only tmpfs), a closed stdout
(text and stream-json), Ctrl-C during a Bash command whose child called setsid, input nested 5,000 deep,
duplicate tool_use ids, Grep on a FIFO, and kill -9 at ten points of a turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services.config import project_slug
from services.session import ensure_private_dir
from tests.conftest import CliResult, CliRunner
from tests.fake_anthropic import FakeAnthropic, tool_block
from tests.faults.test_faults_cli import HomeAndProject, assert_well_formed, results_by_id, user_texts
from tests.procs import pid_alive

BYPASS = ("--permission-mode", "bypassPermissions")
WAIT = 90.0
NOISE = ("Traceback", "never retrieved", "Event loop is closed", "Exception ignored")


class Skip(Exception):
    pass


@dataclass
class Row(HomeAndProject):
    base: Path
    fakes: list[FakeAnthropic] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    faulty: list[CliResult] = field(default_factory=list)
    resumed: CliResult | None = None
    resume_request: Any = None

    def fake(self) -> FakeAnthropic:
        f = FakeAnthropic()
        self.fakes.append(f)
        return f

    def cli(self, fake: FakeAnthropic | None = None) -> CliRunner:
        return CliRunner(self.home, self.project, fake or self.fakes[0])

    def project_dir(self) -> Path:
        return self.home / "projects" / project_slug(self.project)

    def transcripts(self) -> list[Path]:
        return sorted(self.project_dir().glob("*.jsonl"))

    def lines(self) -> int:
        return sum(p.read_bytes().count(b"\n") for p in self.transcripts())

    def on_disk_user_texts(self, only: Path | None = None) -> list[str]:
        """The user's prompts that reached the disk as whole lines (what must never be lost)."""
        out = []
        for p in [only] if only else self.transcripts():
            for raw in p.read_bytes().split(b"\n")[:-1]:
                with contextlib.suppress(ValueError):
                    rec = json.loads(raw)
                    msg = rec.get("message") or {}
                    if rec.get("type") == "message" and msg.get("role") == "user" and not msg.get("meta"):
                        out += [b["text"] for b in msg["content"] if b.get("type") == "text"]
        return out

    def resume(self, *extra: str, prompt: str = "are you there?", only: Path | None = None) -> None:
        """The check every row ends with: `agent -c` against a fresh fake that answers once."""
        fake = self.fake()
        fake.text("Resumed.")
        self.notes["expected_users"] = self.on_disk_user_texts(only)
        self.resumed = self.cli(fake)("-c", *extra, "-p", prompt, timeout=WAIT)
        self.resume_request = fake.requests[-1] if fake.requests else None


def wait_until(cond: Callable[[], bool], proc: subprocess.Popen | None = None, limit: float = WAIT) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return cond()
        time.sleep(0.01)
    return False


def header(sid: str) -> dict:
    return {"type": "session", "version": 1, "session_id": sid, "cwd": "x", "model": "m", "created_at": 1.0}


def msg(role: str, *blocks: dict) -> dict:
    return {"type": "message", "message": {"role": role, "content": list(blocks)}}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def write_session(row: Row, records: list[dict | bytes], sid: str = "20260101-000000-aaaaaaaa") -> Path:
    d = ensure_private_dir(row.project_dir())
    path = d / f"{sid}.jsonl"
    path.write_bytes(b"".join(r if isinstance(r, bytes) else json.dumps(r).encode() + b"\n" for r in records))
    return path


@contextlib.contextmanager
def tmpfs(where: Path, options: str):
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip(f"cannot mount a tmpfs here: {r.stderr.strip() or r.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# -- the rows -------------------------------------------------------------------------------------

ROWS: dict[str, Callable[[Row], None]] = {}


def row(fn: Callable[[Row], None]) -> Callable[[Row], None]:
    ROWS[fn.__name__] = fn
    return fn


def _torn(offset_kind: str) -> Callable[[Row], None]:
    def setup(r: Row) -> None:
        r.fake()
        last = json.dumps(msg("assistant", text("second answer, the record a crash cut"))).encode()
        cut = {"one byte": 1, "half": len(last) // 2, "all but the newline's neighbour": len(last) - 1}[offset_kind]
        write_session(r, [header("t"), msg("user", text("q1")), msg("assistant", text("a1")),
                          msg("user", text("q2")), last[:cut]])
        r.resume()
        again = r.fake()
        again.text("ok")
        r.notes["second"] = r.cli(again)("-c", "-p", "again", timeout=WAIT)

    setup.__name__ = f"torn_tail_{offset_kind.split()[0]}"
    return setup


for _kind in ("one byte", "half", "all but the newline's neighbour"):
    row(_torn(_kind))


@row
def merged_by_an_older_version(r: Row) -> None:
    r.fake()
    torn = b'{"type":"message","message":{"role":"assistant","content":[{"type":"te'
    write_session(r, [header("m"), msg("user", text("q1")), torn + json.dumps(msg("user", text("q2"))).encode() + b"\n"])
    r.resume()


@row
def corrupted_tool_use_line(r: Row) -> None:
    r.fake()
    use = {"type": "tool_use", "id": "toolu_bad", "name": "Echo", "input": {}}
    line = json.dumps(msg("assistant", text("calling"), use)).encode()
    write_session(r, [header("c"), msg("user", text("q1")), line[:-9] + b"#garbage\n",
                      msg("user", {"type": "tool_result", "tool_use_id": "toolu_bad", "content": "x"}),
                      msg("assistant", text("a1"))])
    r.resume()


@row
def tool_use_without_its_id(r: Row) -> None:
    """The crash the byte fuzz once found: a tool_use whose "id" key was renamed."""
    r.fake()
    use = {"type": "tool_use", "ID": "toolu_x", "name": "Echo", "input": {"message": "m"}}
    bad_meta = msg("assistant", text("a1"))
    bad_meta.update({"usage": {"input_tokens": "many"}, "meta": {"model": ["not", "a", "name"]}, "extra": 1})
    write_session(r, [header("i"), msg("user", text("q1")), msg("assistant", text("calling"), use),
                      msg("user", {"type": "tool_result", "tool_use_id": "toolu_x", "content": "x"}),
                      bad_meta, msg("user", text("q2")), msg("assistant", {"type": "text", "text": 7})])
    r.resume()
    again = r.fake()
    again.text("Again.")
    r.notes["second"] = r.cli(again)("-c", "-p", "again", timeout=WAIT)


@row
def second_process_on_the_session(r: Row) -> None:
    first = r.fake()
    gate = threading.Event()
    first.reply("holding the session", gate=gate, gate_timeout=WAIT)
    runner = r.cli(first)
    held = write_session(r, [header("s"), msg("user", text("q1")), msg("assistant", text("a1"))])
    holder = runner.popen("-c", "-p", "q2", API_TIMEOUT_MS="120000")  # held while the others run
    try:
        r.notes["holding"] = wait_until(lambda: len(first.requests) >= 1, holder)
        r.notes["holder_pid"] = holder.pid
        r.faulty.append(r.cli(r.fake())("-c", "-p", "intruder", timeout=WAIT))
        forked = r.fake()
        forked.text("forked answer")
        r.notes["fork"] = r.cli(forked)("-c", "--fork-session", "--output-format", "json", "-p", "forked",
                                        timeout=WAIT)
        r.notes["fork_request"] = forked.requests[-1] if forked.requests else None
    finally:
        gate.set()
        out, err = holder.communicate(timeout=WAIT)
    r.notes["holder"] = CliResult(holder.returncode, out, err)
    r.resume("--resume", held.stem, only=held)


@row
def full_disk(r: Row) -> None:
    with tmpfs(r.home, "size=1m,mode=0700"):
        fake = r.fake()
        fake.text("a1")
        first = r.cli()("-p", "q1", timeout=WAIT)
        assert first.code == 0, first.stderr
        filler = r.home / "filler"
        with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
        os.truncate(filler, max(0, filler.stat().st_size - 32 * 1024))  # room for a prompt, not for the reply
        fake.text("y" * 300_000)
        r.faulty.append(r.cli()("-c", "-p", "q2 on a full disk", timeout=WAIT))
        filler.unlink()
        r.resume()


@row
def read_only_home(r: Row) -> None:
    with tmpfs(r.home, "ro,size=64k"):
        r.fake().text("never kept")
        r.faulty.append(r.cli()("-p", "q on a read-only home", timeout=WAIT))
        r.notes["nothing_to_resume"] = True


def _closed_stdout(fmt: str) -> Callable[[Row], None]:
    def setup(r: Row) -> None:
        fake = r.fake()
        fake.text("The reply nobody read.")
        proc = r.cli().popen("-p", "--output-format", fmt, *(["--verbose"] if fmt == "stream-json" else []),
                             "write a poem")
        proc.stdout.close()  # the reader went away (`agent -p ... | head -c0`)
        err = proc.stderr.read()
        proc.wait(timeout=WAIT)
        r.faulty.append(CliResult(proc.returncode, "", err))
        r.resume()

    setup.__name__ = f"closed_stdout_{fmt.replace('-', '_')}"
    return setup


for _fmt in ("text", "stream-json"):
    row(_closed_stdout(_fmt))


@row
def ctrl_c_during_bash_with_setsid_child(r: Row) -> None:
    fake = r.fake()
    pid_file = r.project / "escaped.pid"
    command = f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 300"
    fake.reply("Sleeping.", tool_block("Bash", {"command": command}, id="toolu_sleep"))
    proc = r.cli().popen("-p", *BYPASS, "sleep please")
    started = wait_until(lambda: pid_file.is_file() and pid_file.read_text().strip() != "", proc)
    r.notes["started"] = started
    if started:
        r.notes["escaped_pid"] = int(pid_file.read_text())
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT)
    r.faulty.append(CliResult(proc.returncode, out, err))
    pid = r.notes.get("escaped_pid")
    r.notes["escaped_alive"] = bool(pid) and not wait_until(lambda: not pid_alive(pid), limit=10)
    r.resume()


@row
def input_nested_5000_deep(r: Row) -> None:
    fake = r.fake()
    fake.reply(tool_block("Echo", raw_json='{"message": ' + "[" * 5000 + "]" * 5000 + "}", id="toolu_deep"),
               fragment=1 << 16)
    fake.text("Survived.")
    r.faulty.append(r.cli()("-p", "--output-format", "stream-json", "--verbose", "go deep", timeout=WAIT))
    r.notes["request"] = fake.requests[1] if len(fake.requests) > 1 else None
    r.resume()


@row
def duplicate_tool_use_ids(r: Row) -> None:
    fake = r.fake()
    fake.reply(tool_block("Echo", {"message": "one"}, id="toolu_dup"), tool_block("Echo", {"message": "two"}, id="toolu_dup"))
    fake.text("Both seen.")
    r.faulty.append(r.cli()("-p", "twice", timeout=WAIT))
    r.notes["request"] = fake.requests[1] if len(fake.requests) > 1 else None
    r.resume()


@row
def grep_on_a_fifo(r: Row) -> None:
    os.mkfifo(r.project / "pipe")
    fake = r.fake()
    fake.reply(tool_block("Grep", {"pattern": "x", "path": "pipe"}, id="toolu_fifo"))
    fake.text("Done.")
    started = time.monotonic()
    r.faulty.append(r.cli()("-p", "search the pipe", timeout=WAIT))
    r.notes["seconds"] = time.monotonic() - started
    r.notes["request"] = fake.requests[1] if len(fake.requests) > 1 else None
    r.resume()


# kill -9 at ten points of one turn: prompt -> reply 1 (text + Bash) -> the tool -> results -> reply 2.
KILL_POINTS = ("started", "prompt_saved", "awaiting_headers", "mid_stream", "tool_use_saved", "tool_running",
               "results_saved", "second_mid_stream", "second_awaiting_headers", "answer_saved")


def _kill_at(point: str) -> Callable[[Row], None]:
    def setup(r: Row) -> None:
        fake = r.fake()
        marker = r.project / "tool-running"
        gate = threading.Event()
        call = tool_block("Bash", {"command": f"touch {marker}; sleep 2; echo done"}, id="toolu_k")
        if point == "awaiting_headers":
            fake.stall(WAIT, False, "Working.", call)
        elif point in ("mid_stream", "prompt_saved"):
            fake.reply("Working.", call, gate=gate, gate_timeout=WAIT)
        else:
            fake.reply("Working.", call)
        if point == "second_awaiting_headers":
            fake.stall(WAIT, False, "Finished.")
        elif point in ("second_mid_stream", "results_saved"):
            fake.reply("Finished.", gate=gate, gate_timeout=WAIT)
        else:
            fake.text("Finished.")
        proc = r.cli().popen("-p", *BYPASS, "do the work")
        conditions: dict[str, Callable[[], bool]] = {
            "started": lambda: r.lines() >= 1,
            "prompt_saved": lambda: r.lines() >= 2,
            "awaiting_headers": lambda: len(fake.requests) >= 1,
            "mid_stream": lambda: len(fake.requests) >= 1,
            "tool_use_saved": lambda: r.lines() >= 3,
            "tool_running": marker.exists,
            "results_saved": lambda: r.lines() >= 4,
            "second_mid_stream": lambda: len(fake.requests) >= 2,
            "second_awaiting_headers": lambda: len(fake.requests) >= 2,
            "answer_saved": lambda: r.lines() >= 5,
        }
        r.notes["reached"] = wait_until(conditions[point], proc)
        if "stream" in point or "headers" in point:
            time.sleep(0.3)  # into the stream (or the wait for it)
        proc.kill()
        out, err = proc.communicate(timeout=WAIT)
        gate.set()
        r.faulty.append(CliResult(proc.returncode, out, err, signalled=True))
        r.resume()

    setup.__name__ = f"kill_9_{point}"
    return setup


for _point in KILL_POINTS:
    row(_kill_at(_point))


# -- running the table ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> dict[str, Row | BaseException]:
    out: dict[str, Row | BaseException] = {}

    def run(name: str, setup: Callable[[Row], None]) -> None:
        base = tmp_path_factory.mktemp(name)
        r = Row(base)
        r.home.mkdir()
        r.project.mkdir()
        try:
            setup(r)
            out[name] = r
        except BaseException as exc:  # reported by the row's test
            out[name] = exc
        finally:
            for f in r.fakes:
                f.close()

    tmp_path_factory.getbasetemp()  # made once here: mktemp from several threads would race to make it
    with ThreadPoolExecutor(max_workers=6) as pool:
        for f in [pool.submit(run, name, setup) for name, setup in ROWS.items()]:
            f.result()
    return out


def get(table: dict, name: str) -> Row:
    r = table[name]
    if isinstance(r, Skip):
        pytest.skip(str(r))
    if isinstance(r, BaseException):
        raise r
    return r


def assert_one_clear_line(res: CliResult) -> None:
    for noise in NOISE:
        assert noise not in res.stderr, res.stderr[-3000:]
    assert len([ln for ln in res.stderr.splitlines() if ln.startswith("error:")]) <= 1, res.stderr


def assert_resumed_whole(r: Row) -> list[dict]:
    assert r.resumed is not None
    assert r.resumed.code == 0, r.resumed.stderr[-3000:]
    assert_one_clear_line(r.resumed)
    assert r.resumed.stdout.strip().endswith("Resumed."), r.resumed.stdout
    assert r.resume_request is not None
    messages = assert_well_formed(r.resume_request)
    sent = user_texts(messages)
    for text_ in r.notes["expected_users"]:
        assert text_ in sent, (text_, sent)
    assert sent[-1] == "are you there?"
    return messages


@pytest.mark.parametrize("name", [n for n in ROWS if not n.startswith("kill_9_")])
def test_fault_ends_clearly_and_the_session_resumes(table, name):
    r = get(table, name)
    for res in r.faulty:
        assert_one_clear_line(res)
    if not r.notes.get("nothing_to_resume"):
        assert_resumed_whole(r)
    CHECKS.get(name.rsplit("_", 1)[0] if name.startswith("torn_tail") else name, lambda r: None)(r)


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_9_at_every_point_of_a_turn_resumes(table, point):
    r = get(table, f"kill_9_{point}")
    assert r.notes["reached"], f"the run never reached {point}: {r.faulty[0].stderr[-2000:]}"
    assert r.faulty[0].code == -signal.SIGKILL or point == "answer_saved"
    messages = assert_resumed_whole(r)
    if point not in ("started",):
        assert "do the work" in user_texts(messages)


# -- row-specific checks --------------------------------------------------------------------------


def check_torn(r: Row) -> None:
    assert [ln for ln in r.resumed.stderr.splitlines() if ln.startswith("warning:") and "cut mid-write" in ln]
    assert user_texts(assert_well_formed(r.resume_request)) == ["q1", "q2", "are you there?"]
    second = r.notes["second"]
    assert second.code == 0 and "warning" not in second.stderr, second.stderr  # reported once, fixed for good
    (path,) = r.transcripts()
    for raw in path.read_bytes().split(b"\n")[:-1]:
        json.loads(raw)  # nothing merged


def check_merged(r: Row) -> None:
    assert user_texts(assert_well_formed(r.resume_request))[:2] == ["q1", "q2"]


def check_corrupted(r: Row) -> None:
    assert "toolu_bad" not in json.dumps(r.resume_request.body["messages"])  # the orphan result was dropped


def check_missing_id(r: Row) -> None:
    warnings = [ln for ln in r.resumed.stderr.splitlines() if ln.startswith("warning:")]
    assert any(":3: message repaired" in ln and "without an id" in ln for ln in warnings), r.resumed.stderr
    assert any(":7: message skipped" in ln for ln in warnings), r.resumed.stderr
    messages = assert_well_formed(r.resume_request)
    assert "calling" in json.dumps(messages) and '"extra"' not in json.dumps(messages)
    second = r.notes["second"]
    assert second.code == 0 and "warning" not in second.stderr, second.stderr  # reported once, fixed for good


def check_second_process(r: Row) -> None:
    assert r.notes["holding"]
    (intruder,) = r.faulty
    assert intruder.code == 1
    (line,) = [ln for ln in intruder.stderr.splitlines() if ln.startswith("error:")]
    assert f"pid {r.notes['holder_pid']}" in line and "--fork-session" in line
    fork = r.notes["fork"]
    assert fork.code == 0, fork.stderr
    assert json.loads(fork.stdout)["session_id"] != "20260101-000000-aaaaaaaa"
    # The fork starts from what the holder had on disk (its prompt, still unanswered), then goes its own way.
    assert user_texts(assert_well_formed(r.notes["fork_request"])) == ["q1", "q2", "forked"]
    assert r.notes["holder"].code == 0, r.notes["holder"].stderr
    # The holder's transcript has its own turn only, never the intruder's or the fork's.
    sent = user_texts(assert_well_formed(r.resume_request))
    assert sent == ["q1", "q2", "are you there?"]


def check_full_disk(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 74, res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "ENOSPC" in line and str(r.home) in line and "agent -c" in line, line
    assert user_texts(assert_well_formed(r.resume_request)) == ["q1", "q2 on a full disk", "are you there?"]


def check_read_only(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 74, res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "EROFS" in line and str(r.home) in line and "nothing of this session could be saved" in line, line


def check_closed_stdout(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 141, res.stderr
    assert "error" not in res.stderr.lower(), res.stderr  # quiet, as Unix tools are
    messages = assert_well_formed(r.resume_request)
    assert "The reply nobody read." in json.dumps(messages)  # the reply is in the transcript


def check_ctrl_c(r: Row) -> None:
    assert r.notes["started"]
    (res,) = r.faulty
    assert res.code == 130, res.stderr
    assert "Interrupted" in res.stderr
    assert not r.notes["escaped_alive"], "the setsid child outlived the interrupt"
    assert results_by_id(assert_well_formed(r.resume_request))["toolu_sleep"]["is_error"] is True


def check_deep(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 0, res.stderr[-2000:]
    result = results_by_id(assert_well_formed(r.notes["request"]))["toolu_deep"]
    assert result["is_error"] is True and "nested too deeply" in result["content"]


def check_duplicates(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 0, res.stderr
    results = [b for m in assert_well_formed(r.notes["request"]) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert [(b["tool_use_id"], b["content"]) for b in results] == [("toolu_dup", "one"), ("toolu_dup_2", "two")]


def check_fifo(r: Row) -> None:
    (res,) = r.faulty
    assert res.code == 0, res.stderr
    result = results_by_id(assert_well_formed(r.notes["request"]))["toolu_fifo"]
    assert result["is_error"] is True and "not a regular file or directory" in result["content"]


CHECKS: dict[str, Callable[[Row], None]] = {
    "torn_tail": check_torn,
    "merged_by_an_older_version": check_merged,
    "corrupted_tool_use_line": check_corrupted,
    "second_process_on_the_session": check_second_process,
    "tool_use_without_its_id": check_missing_id,
    "full_disk": check_full_disk,
    "read_only_home": check_read_only,
    "closed_stdout_text": check_closed_stdout,
    "closed_stdout_stream_json": check_closed_stdout,
    "ctrl_c_during_bash_with_setsid_child": check_ctrl_c,
    "input_nested_5000_deep": check_deep,
    "duplicate_tool_use_ids": check_duplicates,
    "grep_on_a_fifo": check_fifo,
}
