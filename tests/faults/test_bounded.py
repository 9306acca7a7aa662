"""Bounded work: hostile tool inputs, huge files, FIFOs, escaping children; plus the fuzz tests
(hypothesis) for random tool inputs and random transcript corruptions."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.model.anthropic import _Accumulator
from services.events import ToolEndEvent
from services.messages import (
    INVALID_INPUT_KEY,
    normalize_history,
    sanitize_assistant,
    tool_use_block,
)
from services.session import load_transcript
from tests.procs import pid_alive
from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.echo import EchoTool
from tools.grep import GrepTool
from tools.orchestration import BatchOutcome, ToolRunner
from tools.permissions import PermissionGate
from tools.read import ReadTool

ROOT = Path(__file__).resolve().parents[2]


def deep(n: int) -> Any:
    value: Any = "bottom"
    for _ in range(n):
        value = {"a": [value]} if n % 2 else [value]
    return value


def context(cwd: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=cwd), project_root=cwd)


async def run_tools(cwd: Path, uses: list[dict], tools=None) -> BatchOutcome:
    tools = tools or [EchoTool(), ReadTool(), GrepTool(), BashTool()]
    runner = ToolRunner({t.name: t for t in tools}, context(cwd), PermissionGate(mode="bypassPermissions"))
    outcome = None
    async for item in runner.run(uses):
        if isinstance(item, BatchOutcome):
            outcome = item
    assert outcome is not None
    return outcome


# -- hostile input --------------------------------------------------------------------------------


async def test_input_nested_5000_deep_is_an_error_result_everywhere(workdir):
    hostile = {"message": deep(5000)}
    # The provider's JSON parsing: an input error, not a RecursionError.
    acc = _Accumulator()
    acc.blocks[0] = {"type": "tool_use", "id": "toolu_deep", "name": "Echo", "input": {}}
    acc.partial_json[0] = '{"message": ' + "[" * 5000 + "]" * 5000 + "}"
    acc.stop_block(0)
    assert INVALID_INPUT_KEY in acc.blocks[0]["input"]
    # The loop's copy of the message: the deep input is replaced before anything stores or walks it.
    msg = sanitize_assistant({"role": "assistant", "content": [tool_use_block("toolu_deep", "Echo", hostile)]}, set())
    json.dumps(msg)
    assert INVALID_INPUT_KEY in msg["content"][0]["input"]
    # The runner, handed the deep input directly: an is_error result, and the start event shows no input.
    outcome = await run_tools(workdir, [tool_use_block("toolu_deep", "Echo", hostile)])
    (result,) = outcome.results
    assert result.get("is_error") is True and "nested deeper than" in result["content"]


async def test_an_oversized_input_is_refused_in_one_line(workdir):
    huge = {"message": ["x" * (1 << 20)] * 17}
    (result,) = (await run_tools(workdir, [tool_use_block("toolu_huge", "Echo", huge)])).results
    assert result.get("is_error") is True and "larger than 16 MB" in result["content"]
    assert "\n" not in result["content"]


async def test_duplicate_ids_in_one_message_keep_every_output(workdir):
    msg = sanitize_assistant({"role": "assistant", "content": [
        tool_use_block("toolu_same", "Echo", {"message": "one"}),
        tool_use_block("toolu_same", "Echo", {"message": "two"}),
    ]}, set())
    uses = msg["content"]
    assert [u["id"] for u in uses] == ["toolu_same", "toolu_same_2"]
    outcome = await run_tools(workdir, uses)
    assert [(r["tool_use_id"], r["content"]) for r in outcome.results] == [
        ("toolu_same", "one"), ("toolu_same_2", "two")]
    # Even handed the duplicates directly, the runner keeps each call's own result.
    raw = [tool_use_block("toolu_x", "Echo", {"message": "a"}), tool_use_block("toolu_x", "Echo", {"message": "b"})]
    assert [r["content"] for r in (await run_tools(workdir, raw)).results] == ["a", "b"]


# -- Read: memory stays bounded ---------------------------------------------------------------------

READ_SCRIPT = textwrap.dedent("""
    import asyncio, json, resource, sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tools.base import SessionState, ToolContext
    from tools.read import ReadTool
    path = Path(sys.argv[2])
    ctx = ToolContext(session=SessionState(cwd=path.parent), project_root=path.parent)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = asyncio.run(ReadTool().call({"file_path": str(path), "offset": 1, "limit": 3}, ctx))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"grew_kb": after - before, "text": out.content}))
""")


def test_read_of_a_400_mib_single_line_file_stays_small(tmp_path):
    path = tmp_path / "one-line.txt"
    block = b"x" * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(400):
            f.write(block)
    proc = subprocess.run([sys.executable, "-c", READ_SCRIPT, str(ROOT), str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["grew_kb"] < 64 * 1024, out["grew_kb"]  # was 1.6 GB
    assert f"[line cut: {400 * (1 << 20) - 2000} more characters]" in out["text"]
    assert len(out["text"]) < 3000


async def test_read_cuts_long_lines_inside_the_window(workdir):
    path = workdir / "mixed.txt"
    path.write_bytes(b"short\n" + "é".encode() * 5000 + b"\nlast line without newline")
    out = await ReadTool().call({"file_path": str(path), "offset": 2, "limit": 1}, context(workdir))
    assert "… [line cut: 3000 more characters]" in out.content
    (line,) = out.content.splitlines()
    assert line.lstrip().startswith("2\t" + "é" * 10)


# -- Grep: FIFOs, and rg never outlives the agent -------------------------------------------------


async def test_grep_with_a_fifo_as_path_answers_at_once(workdir):
    fifo = workdir / "pipe"
    os.mkfifo(fifo)
    (workdir / "a.txt").write_text("needle\n")
    started = time.monotonic()
    (r,) = (await run_tools(workdir, [tool_use_block("toolu_g", "Grep", {"pattern": "needle", "path": str(fifo)})])).results
    assert r.get("is_error") is True and "not a regular file or directory" in r["content"]
    assert time.monotonic() - started < 10
    # A directory holding the FIFO is searched without opening it.
    (r,) = (await run_tools(workdir, [tool_use_block("toolu_h", "Grep", {"pattern": "needle"})])).results
    assert "a.txt" in r["content"] and not r.get("is_error")


RG_SCRIPT = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tools.ripgrep import run_rg
    asyncio.run(run_rg(["-e", "x", "--", sys.argv[2]], Path(sys.argv[2]).parent, timeout=600))
""")


def test_a_blocked_rg_dies_with_the_agent(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    agent = subprocess.Popen([sys.executable, "-c", RG_SCRIPT, str(ROOT), str(fifo)])
    try:
        rg = None
        deadline = time.monotonic() + 30
        while rg is None and time.monotonic() < deadline:
            out = subprocess.run(["pgrep", "-P", str(agent.pid)], capture_output=True, text=True).stdout.split()
            rg = int(out[0]) if out else None
            time.sleep(0.05)
        assert rg is not None, "rg never started"
        agent.kill()  # kill -9: no cleanup code runs
        agent.wait()
        deadline = time.monotonic() + 10
        while pid_alive(rg) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(rg), "rg outlived the agent"
    finally:
        agent.kill()


# -- Bash: the whole tree, setsid included ------------------------------------------------------


def escaped(workdir: Path) -> tuple[str, Path]:
    pid_file = workdir / "escaped.pid"
    return f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 300' & sleep 300", pid_file


def wait_pid(pid_file: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pid_file.is_file() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.02)
    raise AssertionError("the escaping child never started")


def gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not pid_alive(pid)


async def test_bash_timeout_kills_a_child_that_called_setsid(workdir):
    command, pid_file = escaped(workdir)
    out = await BashTool().call({"command": command, "timeout": 1500}, context(workdir))
    assert out.is_error and "timed out" in out.content
    assert gone(wait_pid(pid_file)), "the setsid child escaped the timeout"


async def test_bash_interrupt_kills_a_child_that_called_setsid(workdir):
    command, pid_file = escaped(workdir)
    task = asyncio.ensure_future(BashTool().call({"command": command}, context(workdir)))
    pid = await asyncio.to_thread(wait_pid, pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(pid), "the setsid child escaped the interrupt"


# -- fuzz -------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)
tool_inputs = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(["file_path", "pattern", "path", "message", "offset", "limit", "command"]),
                    json_values, max_size=4),
    st.integers(min_value=100, max_value=3000).map(lambda n: {"message": deep(n)}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inputs=st.lists(st.tuples(st.sampled_from(["Echo", "Read", "Grep", "Nope"]), tool_inputs), min_size=1,
                       max_size=4))
def test_fuzz_random_tool_inputs_always_get_one_result_each(workdir, inputs):
    uses = [tool_use_block(f"toolu_{i % 2}", name, value) for i, (name, value) in enumerate(inputs)]
    msg = sanitize_assistant({"role": "assistant", "content": uses}, set())
    json.dumps(msg)  # storable
    outcome = asyncio.run(run_tools(workdir, msg["content"], [EchoTool(), ReadTool(), GrepTool()]))
    assert [r["tool_use_id"] for r in outcome.results] == [u["id"] for u in msg["content"]]
    for r in outcome.results:
        json.dumps(r)
        assert isinstance(r["content"], str | list)


def _session_bytes() -> bytes:
    from services.messages import assistant_message, text_block, tool_result_block, user_message

    msgs = [user_message("q1"), assistant_message([text_block("t"), tool_use_block("toolu_1", "Echo", {"m": 1})]),
            user_message([tool_result_block("toolu_1", "r")]), assistant_message([text_block("a1")]),
            user_message("q2"), assistant_message([tool_use_block("toolu_2", "Echo", {})])]
    lines = [{"type": "session", "version": 1, "session_id": "fuzz"}] + [{"type": "message", "message": m} for m in msgs]
    return b"".join(json.dumps(r).encode() + b"\n" for r in lines)


corruptions = st.lists(
    st.tuples(st.sampled_from(["truncate", "flip", "insert", "delete_line", "dup_line"]),
              st.integers(min_value=0, max_value=10_000), st.binary(min_size=1, max_size=8)),
    min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=corruptions)
def test_fuzz_random_transcript_corruption_loads_a_valid_history(tmp_path, ops):
    data = _session_bytes()
    for op, pos, blob in ops:
        pos = pos % (len(data) + 1)
        if op == "truncate":
            data = data[:pos]
        elif op == "flip":
            data = data[:pos] + blob + data[pos + len(blob):]
        elif op == "insert":
            data = data[:pos] + blob + data[pos:]
        else:
            lines = data.split(b"\n")
            i = pos % len(lines)
            lines = lines[:i] + lines[i + 1:] if op == "delete_line" else lines[:i] + [lines[i]] + lines[i:]
            data = b"\n".join(lines)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    loaded = load_transcript(path)
    if loaded.messages:
        from tests.faults.test_store import assert_valid

        assert_valid(loaded.messages)
        json.dumps(loaded.messages, ensure_ascii=False).encode("utf-8")
    assert normalize_history(loaded.messages)[1] == []


def test_tool_end_event_is_emitted_for_refused_input(workdir):
    events: list[Any] = []

    async def go() -> None:
        runner = ToolRunner({"Echo": EchoTool()}, context(workdir), PermissionGate(mode="bypassPermissions"))
        async for item in runner.run([tool_use_block("toolu_d", "Echo", {"message": deep(200)})]):
            events.append(item)

    asyncio.run(go())
    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert len(ends) == 1 and not ends[0].ok
