"""Bash: run a command with `bash -c` in its own process group; the working directory carries over."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from services.credentials import child_env
from services.hooks.session_env import env_script
from tools.base import Tool, ToolContext, ToolError, ToolOutput
from tools.proctree import TOKEN_VAR, kill_tree, new_token
from tools.sandbox import Sandbox, Wrapped

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
HARD_CAP_BYTES = 5 * 1024 * 1024
KILL_GRACE_S = 1.0
NO_OUTPUT = "(Bash completed with no output)"

# The user's command runs through eval inside one shell so that a `cd` is seen by the EXIT trap,
# which writes the final directory to a file; positional parameters are cleared first.
_WRAPPER = (
    '__agent_cwd_file=$1; __agent_cmd=$2; __agent_env=$3; shift 3; '
    "trap 'pwd -P >\"$__agent_cwd_file\" 2>/dev/null' EXIT; "
    'if [ -n "$__agent_env" ]; then eval "$__agent_env"; fi; unset __agent_env; '
    'eval "$__agent_cmd"'
)
# A background command runs the hooks' environment script (CLAUDE_ENV_FILE) first too.
_BACKGROUND = 'eval "$1"; shift; eval "$1"'


DESCRIPTION = f"""Executes a bash command (`bash -c`) and returns its output (stdout and stderr interleaved) and exit code.

Usage:
- The working directory persists between calls: a `cd` carries over to the next command. Environment variables you export do not persist. Prefer absolute paths or paths relative to the working directory over many `cd`s.
- timeout is in milliseconds: default {DEFAULT_TIMEOUT_MS} (2 minutes), at most {MAX_TIMEOUT_MS} (10 minutes). On timeout the whole process group is killed.
- There is no terminal and no stdin: interactive programs and `read` get end-of-file. Pass non-interactive flags (e.g. `git --no-pager`, `-y`, `--yes`).
- Do not use Bash to find, read or edit files: use Glob (not find/ls -R), Grep (not grep/rg), Read (not cat/head/tail) and Edit/Write (not sed/awk/echo >). Keep Bash for running programs: tests, builds, git, package managers.
- Chain dependent commands with `&&`; independent commands can be separate Bash calls in one message.
- Quote paths that contain spaces with double quotes.
- For a long-running command (a server, a watcher), set `run_in_background`: it keeps running across turns, its output goes to a file you can Read, TaskStop stops it. A plain `cmd &` must redirect its output (e.g. `> log 2>&1 &`), otherwise the call waits for it.
- Give a short description (5-10 words) of what the command does."""


# Claude Code 2.1.332's words (the input's description; the refusal when the sandbox is required).
DISABLE_SANDBOX_DESCRIPTION = "Set this to true to dangerously override sandbox mode and run commands without sandboxing."
SANDBOX_REQUIRED = ("Sandbox is required (sandbox.failIfUnavailable) and is not available here: {reason}. The command "
                    "was refused, and so is a request to run it outside the sandbox (dangerouslyDisableSandbox): do "
                    "not retry it that way.")


def sandboxed_argv(sandbox: Sandbox | None, argv: list[str], cwd: Path, env: dict[str, str], command: str,
                   input: dict[str, Any] | None = None, extra_writable: tuple[str, ...] = ()) -> Wrapped:
    """`argv` as it is spawned: under bubblewrap when this call runs sandboxed, else unchanged.
    Raises ToolError when the sandbox is required and cannot run."""
    if sandbox is not None and sandbox.refuses:
        raise ToolError(SANDBOX_REQUIRED.format(reason=sandbox.availability.reason))
    if sandbox is not None and sandbox.runs_sandboxed(command, input):
        return sandbox.wrap(argv, cwd, env, extra_writable)
    return Wrapped(argv)


class Running(Protocol):
    """A started command: a plain or per-command-sandbox subprocess, or one in the session's sandbox."""

    @property
    def stdout(self) -> asyncio.StreamReader: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    def kill(self, sig: int) -> None: ...

    def abandon(self) -> None: ...


class _Spawned:
    """A subprocess we started (asyncio): killed as a whole tree by its session and token."""

    def __init__(self, proc: asyncio.subprocess.Process, token: str) -> None:
        self.proc, self.token = proc, token
        assert proc.stdout is not None
        self.stdout: asyncio.StreamReader = proc.stdout

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    async def wait(self) -> int:
        return await self.proc.wait()

    def kill(self, sig: int) -> None:
        kill_tree(self.proc.pid, self.token, sig)

    def abandon(self) -> None:
        pass  # a process of ours: reaped by asyncio whenever it ends


def _kill_when_spawned(task: asyncio.Future[Any]) -> None:
    """Done callback: the command started after all (its caller was cancelled): kill it, release it."""
    if not task.cancelled() and task.exception() is None:
        proc, launch = task.result()
        proc.kill(signal.SIGKILL)
        launch.release()


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Done callback: mark a helper future's outcome as seen (no 'exception was never retrieved')."""
    if not fut.cancelled():
        fut.exception()


async def _reap(proc: Running, reader: asyncio.Future[Any], seconds: float) -> None:
    """Wait briefly for the killed command to be gone and its pipe closed, so nothing is left to the
    event loop's shutdown (the 'Event loop is closed' noise after Ctrl-C)."""
    with contextlib.suppress(TimeoutError, asyncio.CancelledError, ToolError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), seconds)
    if not reader.done():
        reader.cancel()


class BashTool(Tool):
    name = "Bash"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to execute."},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS})."},
            "description": {"type": "string", "description": "What the command does, in 5-10 words, e.g. 'Run the unit tests'."},
            "run_in_background": {"type": "boolean", "description": "Set to true to run this command in the background (read its output with Read or TaskOutput, stop it with TaskStop)."},
            "dangerouslyDisableSandbox": {"type": "boolean", "description": DISABLE_SANDBOX_DESCRIPTION},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    max_result_chars = 30_000
    # The session's sandbox (tools/sandbox.py), shared with the gate; None: commands run as they are.
    sandbox: Sandbox | None = None

    def describe(self, input: dict[str, Any]) -> str:
        cmd = input.get("command")
        if isinstance(cmd, str) and cmd:
            short = cmd if len(cmd) <= 80 else cmd[:79] + "…"
            return f"Bash {short}"
        return "Bash"

    def normalize_input(self, input: dict[str, Any]) -> dict[str, Any]:
        """`timeout_ms` is react-agent-mini's deprecated alias of `timeout` (not in the schema we send)."""
        if "timeout_ms" in input:
            input = dict(input)
            alias = input.pop("timeout_ms")
            input.setdefault("timeout", alias)
        return input

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command = input["command"]
        if not command.strip():
            raise ToolError("command is empty. Pass the shell command to run.")
        timeout_ms = max(1, min(int(input.get("timeout") or DEFAULT_TIMEOUT_MS), MAX_TIMEOUT_MS))
        cwd = Path(ctx.session.cwd)
        note = ""
        if not cwd.is_dir():
            note = f"[The working directory {cwd} no longer exists; ran in {ctx.project_root} instead.]\n"
            cwd = Path(ctx.project_root)
            ctx.session.cwd = cwd
        # The agent's credentials never reach the command (services/credentials.py); BASH_ENV and ENV
        # would make bash source a file before the command: only the user's own environment sets them.
        env = child_env()
        # Inherited by every descendant, whatever group or session it moves to: the kill finds them all.
        token = env[TOKEN_VAR] = new_token()
        if input.get("run_in_background"):
            from tools.background_tasks import start_background

            script = env_script(ctx.session_dir)
            argv = ["bash", "-c", _BACKGROUND, "bash", script, command] if script else ["bash", "-c", command]
            launch = sandboxed_argv(self.sandbox, argv, cwd, env, command, input)
            return await start_background(command, ctx, env, launch)
        in_session = self._reuses_sandbox(command, input)
        # In the session's sandbox the cwd file lives in its TMPDIR, which the sandbox sees at the same path.
        fd, cwd_file = tempfile.mkstemp(prefix="agent-cwd-", suffix=".txt",
                                        dir=str(self.sandbox.temp_dir()) if in_session and self.sandbox else None)
        os.close(fd)
        started = time.monotonic()
        launch = Wrapped([])
        try:
            argv = ["bash", "-c", _WRAPPER, "bash", cwd_file, command, env_script(ctx.session_dir)]
            spawn = asyncio.ensure_future(self._spawn(argv, cwd, env, token, input, cwd_file, in_session))
            try:
                proc, launch = await asyncio.shield(spawn)
            except asyncio.CancelledError:
                # Cancelled while the process was being set up (it may already run): kill it once it exists.
                spawn.add_done_callback(_kill_when_spawned)
                raise
            except FileNotFoundError:
                raise ToolError("bash was not found on PATH; Bash needs a POSIX shell.") from None
            chunks, dropped, timed_out = await _collect(proc, timeout_ms)
            rc = proc.returncode
            try:
                final = Path(cwd_file).read_text().strip()
            except OSError:
                final = ""
            if final and os.path.isdir(final) and not timed_out:
                ctx.session.cwd = Path(final)
        finally:
            removed = launch.release()
            try:
                os.unlink(cwd_file)
            except OSError:
                pass
        elapsed = time.monotonic() - started
        output = b"".join(chunks).decode("utf-8", errors="replace")
        return _result(note, output, removed, dropped, timed_out, timeout_ms, rc, elapsed)

    def _reuses_sandbox(self, command: str, input: dict[str, Any]) -> bool:
        """Whether this command runs in the session's long-lived sandbox (else per command, or unsandboxed)."""
        sb = self.sandbox
        return (sb is not None and sb.reuse and not sb.refuses and sb.runs_sandboxed(command, input)
)

    async def _spawn(self, argv: list[str], cwd: Path, env: dict[str, str], token: str, input: dict[str, Any],
                     cwd_file: str, in_session: bool) -> tuple[Running, Wrapped]:
        if in_session and self.sandbox is not None:
            from tools.sandbox_session import SessionUnavailable, start_command

            try:
                return await start_command(self.sandbox, argv, cwd, env, token)
            except SessionUnavailable:
                pass  # this command gets a bubblewrap of its own: as contained, only slower
        # The cwd file is the one path outside the writable roots the sandboxed shell may write.
        launch = sandboxed_argv(self.sandbox, argv, cwd, env, input["command"], input, (cwd_file,))
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv,
                cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, pass_fds=launch.pass_fds,
            )
        except BaseException:
            launch.release()
            raise
        return _Spawned(proc, token), launch


async def _collect(proc: Running, timeout_ms: int) -> tuple[list[bytes], int, bool]:
    """Read the command's output (capped) until it has ended; on timeout kill its whole tree (SIGTERM, a
    grace period, SIGKILL); on cancellation (Ctrl-C) kill it at once. Returns (chunks, dropped, timed_out)."""
    chunks: list[bytes] = []
    size = 0
    dropped = 0

    async def pump() -> None:
        nonlocal size, dropped
        while True:
            chunk = await proc.stdout.read(65536)
            if not chunk:
                return
            room = HARD_CAP_BYTES - size
            if room > 0:
                chunks.append(chunk[:room])
                size += min(len(chunk), room)
            dropped += max(0, len(chunk) - max(room, 0))

    reader = asyncio.ensure_future(pump())
    timed_out = False
    both = asyncio.gather(reader, proc.wait())
    # Retrieved here so an abort (the reader cancelled) never logs "exception was never retrieved".
    both.add_done_callback(_retrieve)
    try:
        await asyncio.wait_for(asyncio.shield(both), timeout_ms / 1000)
    except TimeoutError:
        timed_out = True
        proc.kill(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(both), KILL_GRACE_S)
        # The whole tree, escaped children (setsid) included, not only the process group.
        proc.kill(signal.SIGKILL)
        try:
            await asyncio.wait_for(asyncio.shield(both), 5)
        except TimeoutError:
            reader.cancel()
            proc.abandon()  # no exit code after SIGKILL: whatever runs it is stuck
    except asyncio.CancelledError:
        # Abort (Ctrl-C): the loop cancelled us. Kill the whole tree now, then reap it.
        proc.kill(signal.SIGKILL)
        await _reap(proc, reader, 2.0)
        raise
    return chunks, dropped, timed_out


def _result(note: str, output: str, removed: list[str], dropped: int, timed_out: bool, timeout_ms: int,
            rc: int | None, elapsed: float) -> ToolOutput:
    for path in removed:
        output += f"\n[sandbox: removed {path}, which the command created: git outside the sandbox would run code from it]"
    if dropped:
        output += f"\n[Output exceeded {HARD_CAP_BYTES // (1024 * 1024)} MB; {dropped} more bytes were discarded. Redirect large output to a file and Grep or Read it.]"
    text = note + output.rstrip("\n")
    if timed_out:
        text += (f"\n[Command timed out after {timeout_ms} ms; its process group was killed (SIGTERM, then SIGKILL). "
                 "Pass a larger timeout (max 600000) or run it in the background with output redirected to a file.]")
        return ToolOutput(text.lstrip("\n"), is_error=True, summary=f"timed out after {timeout_ms / 1000:.1f} s")
    if rc is not None and rc < 0:
        text += f"\n[Killed by signal {-rc}]"
    text = text.strip("\n")
    if rc and rc > 0:
        # Claude Code's shape: the exit code first, then the output (if any).
        text = f"Exit code {rc}\n{text}" if text.strip() else f"Exit code {rc}"
    elif not text.strip():
        text = NO_OUTPUT
    return ToolOutput(text, is_error=bool(rc), summary=f"exit {rc}, {elapsed:.1f} s")


async def run_direct(command: str, cwd: Path | str, timeout_s: float = 120.0,
                     sandbox: Sandbox | None = None) -> tuple[str, int]:
    """The REPL's `!command`: bash -c in `cwd` (in the sandbox when it is on), output interleaved, the
    agent's credentials kept out, the whole process tree killed on timeout or interrupt.
    Returns (output, exit code)."""
    env = child_env()
    token = env[TOKEN_VAR] = new_token()
    try:
        launch = sandboxed_argv(sandbox, ["bash", "-c", command], Path(cwd), env, command)
    except ToolError as exc:
        return str(exc), 1
    try:
        proc = await asyncio.create_subprocess_exec(
            *launch.argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL, pass_fds=launch.pass_fds,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            kill_tree(proc.pid, token, signal.SIGKILL)
            await proc.wait()
            raise
    finally:
        launch.release()
    text = out[:HARD_CAP_BYTES].decode("utf-8", errors="replace")
    return text, proc.returncode or 0
