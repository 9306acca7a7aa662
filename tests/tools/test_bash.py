"""Bash with real processes: cwd persistence, interleaving, exit codes, timeouts, abort, stdin, env."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from tests.procs import pid_alive as _alive
from tools.bash import BashTool


async def _wait_dead(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_cd_carries_over_exports_do_not(project: Path, run, ctx) -> None:
    (project / "sub").mkdir()
    out = await run("Bash", command="cd sub && export FOO=bar && pwd")
    assert out.content.strip() == os.path.realpath(project / "sub")
    out = await run("Bash", command="pwd; echo foo=${FOO:-unset}")
    assert out.content.splitlines() == [os.path.realpath(project / "sub"), "foo=unset"]
    assert Path(ctx.session.cwd) == Path(os.path.realpath(project / "sub"))


async def test_interleaved_output_and_exit_code(run) -> None:
    out = await run("Bash", command="echo one; echo two >&2; echo three; exit 4")
    assert out.is_error
    assert out.content == "Exit code 4\none\ntwo\nthree"  # Claude Code's shape: the code first
    ok = await run("Bash", command="true")
    assert not ok.is_error and ok.content == "(Bash completed with no output)"
    blank = await run("Bash", command="printf '  \\n\\n'")
    assert not blank.is_error and blank.content == "(Bash completed with no output)"
    bare = await run("Bash", command="false")
    assert bare.is_error and bare.content == "Exit code 1"


async def test_stdin_gets_eof(run) -> None:
    out = await run("Bash", command="read line; echo rc=$? got=[$line]; cat; echo done", timeout=10_000)
    assert "rc=1 got=[]" in out.content and "done" in out.content


async def test_sleep_with_short_timeout_is_killed(run) -> None:
    out = await run("Bash", command="sleep 5", timeout=200)
    assert out.is_error and "timed out after 200 ms" in out.content and "killed" in out.content


async def test_child_outliving_the_shell_dies_on_timeout(project: Path, run) -> None:
    pidfile = project / "child.pid"
    out = await run("Bash", command=f"sleep 300 & echo $! > {pidfile}; wait", timeout=500)
    assert out.is_error and "timed out" in out.content
    pid = int(pidfile.read_text())
    assert await _wait_dead(pid)


async def test_background_child_holding_stdout_dies_on_timeout(project: Path, run) -> None:
    pidfile = project / "bg.pid"
    out = await run("Bash", command=f"(sleep 300; echo never) & echo $! > {pidfile}; echo started", timeout=500)
    assert "started" in out.content and "timed out" in out.content
    assert await _wait_dead(int(pidfile.read_text()))


async def test_cancellation_kills_the_process_group(project: Path, ctx) -> None:
    pidfile = project / "c.pid"
    tool = BashTool()
    task = asyncio.ensure_future(tool.call({"command": f"sleep 300 & echo $! > {pidfile}; wait"}, ctx.for_call("t")))
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert await _wait_dead(int(pidfile.read_text()))


async def test_credentials_are_scrubbed(run, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-secret")
    monkeypatch.setenv("OTHER_VAR", "visible")
    out = await run("Bash", command="echo key=${ANTHROPIC_API_KEY:-none} tok=${ANTHROPIC_AUTH_TOKEN:-none} $OTHER_VAR")
    assert out.content == "key=none tok=none visible"


async def test_no_self_truncation_below_the_hard_cap_and_a_marker_above(run) -> None:
    out = await run("Bash", command="head -c 100000 /dev/zero | tr '\\0' 'a'")
    assert len(out.content) == 100_000
    big = await run("Bash", command="head -c 6000000 /dev/zero | tr '\\0' 'b'", timeout=60_000)
    assert "Output exceeded 5 MB" in big.content and len(big.content) < 5_300_000


async def test_limits_and_preview() -> None:
    tool = BashTool()
    assert tool.max_result_chars == 30_000 and not tool.is_read_only({"command": "ls"})
    assert tool.spill_preview("h" * 50_000) is None  # the default preview: the first 2KB, as Claude Code


async def test_timeout_ms_alias() -> None:
    """react-agent-mini's deprecated `timeout_ms` is accepted and honoured (not offered in the schema)."""
    assert "timeout_ms" not in BashTool.input_schema["properties"]
    assert BashTool().normalize_input({"command": "x", "timeout_ms": 300}) == {"command": "x", "timeout": 300}
    assert BashTool().normalize_input({"command": "x", "timeout": 5, "timeout_ms": 300}) == {"command": "x", "timeout": 5}


async def test_timeout_is_capped(run, monkeypatch) -> None:
    out = await run("Bash", command="echo ok", timeout=10**9)
    assert out.content == "ok"
