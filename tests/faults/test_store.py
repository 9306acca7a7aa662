"""The transcript store's contract, in process: whole lines, torn tails, repairs, the lock,
the index, private modes. The same faults through the real CLI are in `test_durable_cli.py`."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.messages import (
    assistant_message,
    normalize_history,
    text_block,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.session import (
    INDEX_NAME,
    SessionLocked,
    SessionPaths,
    Transcript,
    TranscriptWriteError,
    latest_session,
    list_sessions,
    load_transcript,
    read_index,
)
from tools.echo import EchoTool


@pytest.fixture
def cwd(agent_home: Path, workdir: Path) -> Path:
    return workdir.resolve()


def make_engine(cwd: Path, steps) -> QueryEngine:
    return QueryEngine(EngineConfig(cwd=cwd, model="m"), [EchoTool()], QueryDeps(ScriptedModel(steps)))


async def run(engine: QueryEngine, text: str) -> None:
    async for _ in engine.run_turn(text):
        pass


def assert_valid(messages: list[dict]) -> None:
    """What the API accepts: user first, no two assistant messages in a row, every tool_use answered in
    order by the next message and every tool_result answering the message before it; ids unique."""
    assert messages and messages[0]["role"] == "user"
    ids = [b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_use"]
    assert len(ids) == len(set(ids)), ids
    for i, m in enumerate(messages):
        uses = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
        if m["role"] == "assistant":
            assert not results and (i == 0 or messages[i - 1]["role"] == "user")
            if uses:
                nxt = messages[i + 1]
                assert [b["tool_use_id"] for b in nxt["content"] if b.get("type") == "tool_result"] == uses
        else:
            prev = [b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"] if i else []
            assert results == prev
        assert m["content"], m


def user_texts(messages: list[dict]) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" for b in m["content"] if b.get("type") == "text"]


async def a_session(cwd: Path) -> QueryEngine:
    """user, assistant (tool_use), results, assistant (text), user, assistant (text)."""
    engine = make_engine(cwd, [reply("Echoing.", tool_call("Echo", {"message": "hi"}, id="toolu_a")),
                               reply("first answer"), reply("second answer")])
    await run(engine, "first question")
    await run(engine, "second question")
    engine.close()
    return engine


# -- torn tails -----------------------------------------------------------------------------------


async def test_a_torn_last_line_at_every_byte_offset_is_cut_never_merged(cwd):
    engine = await a_session(cwd)
    path = engine.paths.transcript
    whole = path.read_bytes()
    last_start = whole.rstrip(b"\n").rfind(b"\n") + 1  # the last record: the second answer
    for cut in range(last_start, len(whole)):
        path.write_bytes(whole[:cut])
        loaded = load_transcript(path)
        assert user_texts(loaded.messages) == ["first question", "second question"], cut
        assert_valid(loaded.messages)
        if cut in (last_start, len(whole) - 1):
            # Nothing torn (the record was not started), or only its newline is missing (the record is whole).
            assert not loaded.warnings, (cut, loaded.warnings)
        else:
            (warning,) = loaded.warnings
            assert "cut mid-write" in warning and "dropped" in warning
        # The next append is a line of its own: the file stays parseable line by line.
        t = Transcript(path, lock=True)
        t.append({"type": "message", "message": user_message(f"after {cut}")})
        t.close()
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b""
        for line in lines[:-1]:
            json.loads(line)
        again = load_transcript(path)
        assert not again.warnings and user_texts(again.messages)[-1] == f"after {cut}"


async def test_a_line_merged_by_an_older_version_gives_back_its_record(cwd):
    engine = await a_session(cwd)
    path = engine.paths.transcript
    torn = b'{"type":"message","message":{"role":"assistant","content":[{"type":"te'
    merged = json.dumps({"type": "message", "message": user_message("the lost question")}).encode()
    with open(path, "ab") as f:
        f.write(torn + merged + b"\n")
    loaded = load_transcript(path)
    assert user_texts(loaded.messages)[-1] == "the lost question"
    assert any("damaged line" in w for w in loaded.warnings)
    # Resumed once, the damage is recorded and later loads are quiet.
    resumed = make_engine(cwd, [reply("ok")])
    resumed.resume(loaded)
    resumed.close()
    assert not load_transcript(path).warnings


# -- repair in both directions --------------------------------------------------------------------

U, A = user_message, assistant_message
USE = tool_use_block


def R(tid: str, text: str = "out") -> dict:  # noqa: N802 - a table shorthand
    return tool_result_block(tid, text)


REPAIRS = {
    "orphan result dropped": [U("q"), A([text_block("t")]), U([R("toolu_ghost"), text_block("next")])],
    "missing result synthesised": [U("q"), A([USE("toolu_1", "Echo", {})]), U("next")],
    "results reordered": [U("q"), A([USE("toolu_1", "Echo", {}), USE("toolu_2", "Echo", {})]),
                          U([R("toolu_2"), R("toolu_1")])],
    "duplicate ids renamed": [U("q"), A([USE("toolu_d", "Echo", {}), USE("toolu_d", "Echo", {})]),
                              U([R("toolu_d", "one"), R("toolu_d", "two")])],
    "id reused later": [U("q"), A([USE("toolu_d", "Echo", {})]), U([R("toolu_d")]),
                        A([USE("toolu_d", "Echo", {})]), U([R("toolu_d", "later")])],
    "two assistants joined": [U("q"), A([text_block("a")]), A([text_block("b")])],
    "assistant first": [A([text_block("hello")]), U("q")],
    "empty user message dropped": [U("q"), A([text_block("t")]), U([R("toolu_x")]), U("after")],
    "dangling at the end": [U("q"), A([USE("toolu_1", "Echo", {}), USE("toolu_2", "Echo", {})]),
                            U([R("toolu_1")])],
}


@pytest.mark.parametrize("name", list(REPAIRS))
def test_repair_makes_any_history_valid_and_says_what_it_did(name):
    history = json.loads(json.dumps(REPAIRS[name]))
    fixed, actions = normalize_history(history)
    assert_valid(fixed)
    assert actions, "a repair that did something must say so"
    assert [t for t in user_texts(fixed) if t != "[Earlier messages of this session were lost.]"] == [
        t for t in user_texts(history)
    ]
    again, more = normalize_history(fixed)
    assert again == fixed and more == []  # idempotent: a repaired history needs no second repair
    if name == "duplicate ids renamed":
        results = [b for b in fixed[2]["content"] if b["type"] == "tool_result"]
        assert [r["content"] for r in results] == ["one", "two"]  # every output kept


# -- whole lines on a failing disk ------------------------------------------------------------------


def test_a_write_cut_short_by_the_file_size_limit_leaves_no_partial_line(cwd, tmp_path):
    path = tmp_path / "t.jsonl"
    t = Transcript(path)
    t.append({"type": "message", "message": user_message("kept")})
    size = path.stat().st_size
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, old[1]))  # the next record fits only in part
        with pytest.raises(TranscriptWriteError) as err:
            t.append({"type": "message", "message": user_message("x" * 1000)})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert err.value.filename == str(path)
    assert path.stat().st_size == size  # the partial line was truncated away
    t.append({"type": "message", "message": user_message("after")})
    t.close()
    assert user_texts(load_transcript(path).messages) == ["kept", "after"]


# -- one writer per session -------------------------------------------------------------------------


async def test_a_second_writer_is_refused_with_the_holders_pid_or_forks(cwd):
    engine = await a_session(cwd)
    holder = make_engine(cwd, [reply("ok")])
    holder.resume(load_transcript(engine.paths.transcript))  # holds the lock from here
    other = make_engine(cwd, [reply("forked answer")])
    with pytest.raises(SessionLocked, match=f"pid {os.getpid()}") as err:
        other.resume(load_transcript(engine.paths.transcript))
    assert "--fork-session" in str(err.value)
    other.resume(load_transcript(engine.paths.transcript), fork=True)
    assert other.session_id != engine.session_id
    await run(other, "in the fork")
    other.close()
    forked = load_transcript(other.paths.transcript)
    assert user_texts(forked.messages) == ["first question", "second question", "in the fork"]
    assert [r["from"] for r in forked.records if r.get("type") == "forked"] == [engine.session_id]
    assert user_texts(load_transcript(engine.paths.transcript).messages) == ["first question", "second question"]
    holder.close()
    again = make_engine(cwd, [reply("ok")])
    again.resume(load_transcript(engine.paths.transcript))  # released: free again
    again.close()


# -- the index --------------------------------------------------------------------------------------


async def test_the_index_orders_sessions_and_adopts_transcripts_it_does_not_know(cwd):
    a = await a_session(cwd)
    b = await a_session(cwd)
    assert latest_session(cwd) == b.paths.transcript
    # Resuming (and using) the older session makes it the newest.
    resumed = make_engine(cwd, [reply("again")])
    resumed.resume(load_transcript(a.paths.transcript))
    await run(resumed, "back to a")
    resumed.close()
    assert list_sessions(cwd) == [a.paths.transcript, b.paths.transcript]
    # A transcript from an older version (not in the index) is adopted by its mtime; a deleted one leaves.
    legacy = SessionPaths.for_session(cwd, "legacy").transcript
    legacy.write_text(json.dumps({"type": "message", "message": user_message("old")}) + "\n")
    os.utime(legacy, (1e9, 1e9))
    b.paths.transcript.unlink()
    assert list_sessions(cwd) == [a.paths.transcript, legacy]
    entries, _ = read_index(legacy.parent)
    assert "legacy" in entries
    (legacy.parent / INDEX_NAME).unlink()  # the index is a cache: losing it loses nothing
    assert set(list_sessions(cwd)) == {a.paths.transcript, legacy}


# -- private by default -----------------------------------------------------------------------------


async def test_everything_is_private_under_umask_000(cwd, agent_home, monkeypatch):
    home = agent_home / "fresh"  # created by the agent
    monkeypatch.setenv("AGENT_HOME", str(home))
    old = os.umask(0)
    try:
        engine = make_engine(cwd, [reply("ok")])
        await run(engine, "hello")
        engine.close()
    finally:
        os.umask(old)
    dirs = [home, home / "projects", engine.paths.transcript.parent]
    files = [engine.paths.transcript, engine.paths.lock, engine.paths.transcript.parent / INDEX_NAME]
    for d in dirs:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


def test_privacy_warnings_name_the_directory(cwd, agent_home):
    from services.session import ensure_private_dir, privacy_warnings

    os.chmod(agent_home, 0o700)
    project = ensure_private_dir(SessionPaths.for_session(cwd, "x").transcript.parent)
    assert privacy_warnings(cwd) == []
    os.chmod(project, 0o777)
    (line,) = [w for w in privacy_warnings(cwd) if str(project) in w]
    assert "0777" in line and f"chmod 700 {project}" in line


def test_a_transcript_owned_by_someone_else_is_not_resumed(cwd, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    path = SessionPaths.for_session(cwd, "planted").transcript
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "message", "message": user_message("planted")}) + "\n")
    os.chown(path, 12345, 12345)
    from services.session import TranscriptError

    with pytest.raises(TranscriptError, match="owned by uid 12345"):
        load_transcript(path)
