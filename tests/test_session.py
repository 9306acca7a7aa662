"""Transcripts on disk: written message by message, resumed with --continue, damaged files handled."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.anthropic import AnthropicModel
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.events import AssistantEvent, ToolResultsEvent
from services.messages import (
    assistant_message,
    text_block,
    tool_results,
    tool_use_block,
    tool_uses,
    user_message,
)
from services.session import (
    FORMAT_VERSION,
    SessionPaths,
    TranscriptError,
    delete_session,
    list_sessions,
    load_transcript,
)
from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic
from tools.echo import EchoTool


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_engine(cwd: Path, model, **kw) -> QueryEngine:
    return QueryEngine(EngineConfig(cwd=cwd, model="test-model"), [EchoTool()], QueryDeps(model), **kw)


def write_transcript(cwd: Path, session_id: str, records: list[dict | str]) -> Path:
    path = SessionPaths.for_session(cwd, session_id).transcript
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def header(session_id: str, version: int = FORMAT_VERSION) -> dict:
    return {"type": "session", "version": version, "session_id": session_id, "cwd": "x", "model": "m",
            "created_at": time.time()}


def assert_request_paired(messages: list[dict]) -> None:
    """The pairing the API enforces: each tool_use answered in the very next (user) message."""
    for i, m in enumerate(messages):
        uses = tool_uses(m)
        if uses:
            assert i + 1 < len(messages) and messages[i + 1]["role"] == "user"
            answered = [r["tool_use_id"] for r in tool_results(messages[i + 1])]
            assert answered[: len(uses)] == [u["id"] for u in uses]
        for r in tool_results(m):
            assert i > 0 and r["tool_use_id"] in {u["id"] for u in tool_uses(messages[i - 1])}


@pytest.fixture
def cwd(agent_home: Path, workdir: Path) -> Path:
    return workdir.resolve()


async def test_transcript_is_written_message_by_message(cwd):
    call = tool_call("Echo", {"message": "persist me"})
    engine = make_engine(cwd, ScriptedModel([reply("Saving.", call), reply("saved")]))
    path = engine.paths.transcript
    seen_on_disk = []
    async for ev in engine.run_turn("remember this"):
        if isinstance(ev, AssistantEvent | ToolResultsEvent):
            # Already flushed when the event reaches the front end.
            seen_on_disk.append(read_lines(path)[-1]["message"])
            assert seen_on_disk[-1] == (ev.message)
    engine.close()
    records = read_lines(path)
    assert records[0]["type"] == "session" and records[0]["version"] == FORMAT_VERSION
    assert records[0]["session_id"] == engine.session_id
    messages = [r for r in records[1:] if r["type"] == "message"]  # decisions may sit between them
    assert [r["message"]["role"] for r in messages] == ["user", "assistant", "user", "assistant"]
    assert len(seen_on_disk) == 3
    assert path.stat().st_mode & 0o777 == 0o600
    assert str(path).startswith(str(Path(engine.paths.directory).parent))
    loaded = load_transcript(path)
    assert loaded.messages == engine.messages and loaded.warnings == []
    assert list_sessions(cwd) == [path]


def test_deleting_a_session_deletes_its_spill_files_and_nothing_else(cwd):
    keep, gone = (SessionPaths.for_session(cwd, sid) for sid in ("keep", "gone"))
    for paths in (keep, gone):
        write_transcript(cwd, paths.transcript.stem, [header(paths.transcript.stem)])
        spill = paths.directory / "tool-results"
        spill.mkdir(parents=True)
        (spill / "toolu_1.txt").write_text("big output")
    delete_session(cwd, "gone")
    assert not gone.transcript.exists() and not gone.directory.exists()
    assert (keep.directory / "tool-results" / "toolu_1.txt").read_text() == "big output"
    assert list_sessions(cwd) == [keep.transcript]


def test_newer_format_version_is_refused(cwd):
    path = write_transcript(cwd, "s-new", [header("s-new", FORMAT_VERSION + 1), {"type": "message",
                            "message": user_message("hi")}])
    with pytest.raises(TranscriptError, match="newer version"):
        load_transcript(path)


def test_unparseable_line_is_skipped_with_its_line_number(cwd):
    path = write_transcript(cwd, "s-bad", [
        header("s-bad"),
        {"type": "message", "message": user_message("one")},
        '{"type": "message", "message": {"role": "assis',  # line 3: cut by a crash
        {"type": "message", "message": assistant_message([text_block("two")])},
        "[1, 2]",  # line 5: JSON but not a record
    ])
    loaded = load_transcript(path)
    assert [m["content"][0]["text"] for m in loaded.messages] == ["one", "two"]
    assert len(loaded.warnings) == 2
    assert f"{path}:3:" in loaded.warnings[0] and f"{path}:5:" in loaded.warnings[1]


async def test_cut_after_tool_use_resumes_with_a_valid_request(fake_env: FakeAnthropic, cwd):
    """The session died while a tool ran: resuming answers the dangling tool_use first."""
    use = tool_use_block("toolu_cut", "Echo", {"message": "never finished"})
    path = write_transcript(cwd, "s-cut", [
        header("s-cut"),
        {"type": "message", "message": user_message("start")},
        {"type": "message", "message": assistant_message([text_block("Running."), use], usage={"input_tokens": 3})},
    ])
    loaded = load_transcript(path)
    assert tool_results(loaded.messages[-1])[0]["tool_use_id"] == "toolu_cut"
    fake_env.text("Resumed fine.")
    engine = QueryEngine(EngineConfig(cwd=cwd, model="claude-test"), [EchoTool()], QueryDeps(AnthropicModel()))
    engine.resume(loaded)
    async for _ in engine.run_turn("carry on"):
        pass
    engine.close()
    assert engine.last_terminal.reason == "completed"
    sent = fake_env.requests[0].messages
    assert_request_paired(sent)
    assert sent[1]["content"][1]["id"] == "toolu_cut"
    synthesized = sent[2]["content"][0]
    assert synthesized["tool_use_id"] == "toolu_cut" and synthesized["is_error"] is True
    assert sent[-1]["content"][0]["text"] == "carry on"
    # The repair was written to the transcript: loading again needs no second repair.
    again = load_transcript(path)
    assert not [r for r in again.records if r.get("type") == "repaired"]
    assert [m["role"] for m in again.messages] == ["user", "assistant", "user", "user", "assistant"]


async def test_continue_carries_the_history_in_the_next_request(agent_home, cwd, fake_anthropic: FakeAnthropic):
    # First session, in process (a scripted model): a tool round and an answer.
    call = tool_call("Echo", {"message": "first session"}, id="toolu_s1")
    first = make_engine(cwd, ScriptedModel([reply(call), reply("The first answer.")]))
    async for _ in first.run_turn("first question"):
        pass
    first.close()
    earlier = [json.loads(json.dumps(m)) for m in first.messages]
    # A damaged line at the end (a crash mid-write) is reported by number and skipped.
    with open(first.paths.transcript, "a", encoding="utf-8") as fh:
        fh.write('{"type": "message", "mess\n')
    bad_line = len(first.paths.transcript.read_text().splitlines())

    fake_anthropic.text("I remember the first session.")
    run = CliRunner(agent_home, cwd, fake_anthropic)
    r = run("--continue", "--output-format", "json", "what did I ask?")
    assert r.code == 0, r.stderr
    assert f":{bad_line}: unreadable transcript line skipped" in r.stderr
    assert json.loads(r.stdout)["session_id"] == first.session_id
    (req,) = fake_anthropic.requests
    sent = req.messages
    strip = [{k: v for k, v in m.items() if k in ("role", "content")} for m in earlier]
    # Byte-for-byte the earlier history (cache marker aside), then the new prompt.
    unmarked = json.loads(json.dumps(sent).replace(', "cache_control": {"type": "ephemeral"}', ""))
    assert unmarked[:4] == strip
    assert sent[4]["content"][0]["text"] == "what did I ask?"
    assert_request_paired(sent)
    # The resumed run appended to the same transcript.
    roles = [m["role"] for m in load_transcript(first.paths.transcript).messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_continue_refuses_a_newer_transcript(agent_home, cwd, fake_anthropic: FakeAnthropic):
    write_transcript(cwd, "s-future", [header("s-future", FORMAT_VERSION + 5)])
    r = CliRunner(agent_home, cwd, fake_anthropic)("--continue", "hi")
    assert r.code == 1
    assert "newer version" in r.stderr and "Traceback" not in r.stderr
    assert fake_anthropic.requests == []


def test_continue_without_a_session_is_a_clear_error(agent_home, cwd, fake_anthropic: FakeAnthropic):
    r = CliRunner(agent_home, cwd, fake_anthropic)("--continue", "hi")
    assert r.code == 1 and "no earlier session" in r.stderr
