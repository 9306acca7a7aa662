"""Every field read back from a transcript is untrusted: a property test over every record and block type.

A good session holds one record of each kind the agent writes and a message with each block type; the
test then replaces, deletes or renames any field at any depth with any JSON value (huge numbers,
infinities, lone surrogates, deep nesting, wrong types) and asserts that the whole resume path holds:
the load, the engine's resume (usage, todos, replacement decisions), the REPL's checkpoints and its
history view, and one more model call whose history the API would accept.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply
from agent.repl.transcript_view import render_transcript
from services.messages import to_api
from services.session import SessionPaths, TranscriptError, load_transcript
from services.transcript_check import check_message
from tests.faults.test_store import assert_valid
from tools.checkpoints import CheckpointStore
from tools.echo import EchoTool

SID = "0b6a3f0e-5d2c-4a53-9d50-7a3d7cf0f001"
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


def good_records(root: str) -> list[dict[str, Any]]:
    """One record of each kind, one message with each block type the agent stores."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "Echo", "input": {"message": "hi", "n": [1, {"a": 2}]}}
    server = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "first"}, IMAGE], "meta": {"kind": "prompt"}},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"}, {"type": "redacted_thinking", "data": "xx"},
            {"type": "text", "text": "Echoing.", "citations": []}, server,
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}, use],
         "usage": {"input_tokens": 10, "output_tokens": 5}, "meta": {"model": "m"}},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                      "content": [{"type": "text", "text": "hi"}, IMAGE,
                                                  {"type": "tool_reference", "tool_name": "Echo"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    return [
        {"type": "session", "version": 1, "session_id": SID, "cwd": root},
        *({"type": "message", "message": m} for m in msgs),
        {"type": "decision", "stage": "budget", "id": "toolu_1", "replacement": "<persisted-output>x"},
        {"type": "decision", "stage": "micro", "id": "toolu_1", "replacement": "[cleared]"},
        {"type": "decision", "stage": "retain", "cut": 2, "keep": [0], "anchor": None},
        {"type": "decision", "stage": "micro_floor", "floor": 1},
        {"type": "agent_usage", "tool_use_id": "toolu_1", "usage": {"input_tokens": 3, "output_tokens": 1},
         "requests": 1, "model": "m"},
        {"type": "todos", "tool_use_id": "toolu_1", "todos": [{"content": "a", "status": "pending",
                                                                "activeForm": "doing a"}]},
        {"type": "checkpoint", "kind": "written", "path": root + "/a.txt", "sha": "abc"},
        {"type": "checkpoint", "kind": "files", "turn": 1, "root": root, "manifest": root + "/m.json",
         "excluded": ["node_modules"], "complete": True},
        {"type": "checkpoint", "turn": 1, "path": root + "/a.txt", "existed": True, "blob": root + "/blob"},
        {"type": "checkpoint", "kind": "rewound", "turn": 3},
        {"type": "history_replaced", "messages": msgs},
        {"type": "repair", "actions": ["x"], "lines": [2], "messages": msgs, "at": 1.0},
        {"type": "forked", "from": SID, "at": 1.0},
    ]


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["", "\ud800", "x\udfff", "toolu_1", "tool_use", "tool_result", "text", "assistant", "user",
                     "/etc/passwd", "../../x", "1e400"]),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["type", "id", "text", "content", "x"]), inner,
                                                 max_size=3)), max_leaves=8)
mutation = st.tuples(st.sampled_from(["set", "delete", "rename", "whole"]), st.lists(st.integers(0, 50), min_size=1,
                                                                                     max_size=6), json_values)


def _mutate(record: Any, op: str, path: list[int], value: Any) -> Any:
    if op == "whole":
        return value
    node, i = record, 0
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
        if not keys:
            return record
        key = keys[path[i % len(path)] % len(keys)]
        child = node[key]
        i += 1
        if i >= len(path) or not isinstance(child, dict | list) or not child:
            break
        node = child
    if op == "set":
        node[key] = value
    elif isinstance(node, dict):
        value_here = node.pop(key)
        if op == "rename":
            node[str(key) + "_"] = value_here
    else:
        node.pop(key)
    return record


def _write(path: Path, records: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))


def _assert_sendable(messages: list[Any]) -> None:
    assert_valid(messages)
    for m in messages:
        fixed, notes = check_message(m)
        assert fixed is not None and not notes, notes
    json.dumps(to_api(messages), ensure_ascii=False).encode("utf-8")


async def _resume_and_call(cwd: Path, path: Path) -> None:
    try:
        loaded = load_transcript(path)
    except TranscriptError:
        return  # a clear one-line refusal (say, a newer format) is a valid outcome
    assert all("\n" not in w and w.startswith(str(path)) for w in loaded.warnings), loaded.warnings
    model = ScriptedModel([reply("ok")])
    engine = QueryEngine(EngineConfig(cwd=cwd, model="m"), [EchoTool()], QueryDeps(model))
    try:
        engine.resume(loaded)
        CheckpointStore(engine.session_dir / "checkpoints", engine.record).load(loaded.records)
        render_transcript(loaded.messages)
        async for _ in engine.run_turn("next"):
            pass
    finally:
        engine.close()
    _assert_sendable(model.requests[-1].messages)
    again = load_transcript(path)  # the repair was written once; the next load is quiet and valid
    assert again.warnings == [], again.warnings
    _assert_sendable(again.messages)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mutations=st.lists(mutation, min_size=1, max_size=4))
def test_any_damaged_field_of_any_record_resumes_to_a_valid_history(agent_home, workdir, data, mutations):
    cwd = workdir.resolve()
    records: list[Any] = good_records(str(cwd))
    for op, where, value in mutations:
        i = data.draw(st.integers(0, len(records) - 1))
        records[i] = _mutate(records[i], op, where, value)
    path = SessionPaths.for_session(cwd, SID).transcript
    path.unlink(missing_ok=True)
    _write(path, records)
    note(path.read_text())
    asyncio.run(_resume_and_call(cwd, path))


@pytest.mark.parametrize("block", [
    {"type": "tool_use", "name": "Echo", "input": {}},  # no id: the crash once found by the byte fuzz
    {"type": "tool_use", "id": 7, "name": "Echo", "input": "not an object"},
    {"type": "tool_use", "id": "toolu_1", "input": {}},
    {"type": "image", "source": "x"}, {"type": "thinking", "thinking": "t"}, {"type": "no_such_block"}, "text",
])
def test_each_damaged_block_is_repaired_or_dropped_with_a_notice(agent_home, workdir, block):
    cwd = workdir.resolve()
    records = good_records(str(cwd))[:5]
    records[2]["message"]["content"].append(block)
    path = SessionPaths.for_session(cwd, SID).transcript
    _write(path, records)
    loaded = load_transcript(path)
    assert [w for w in loaded.warnings if f"{path}:3:" in w], loaded.warnings
    _assert_sendable(loaded.messages)
    asyncio.run(_resume_and_call(cwd, path))
