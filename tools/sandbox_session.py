"""One long-lived sandbox for a session's Bash commands: bubblewrap started once, commands forked inside.

Starting bubblewrap costs 15-40 ms; a command forked by a supervisor already inside the namespaces costs
about what an unsandboxed one does. The sandbox is started lazily by the first sandboxed command, with
exactly the bubblewrap arguments a per-command sandbox would get (tools/sandbox.py: `Sandbox.wrap`), and
runs tools/sandbox_supervisor.py. Before every command the arguments are computed again, together with
the identity (device, inode) of every path they name: when anything differs (an `/add-dir`, changed
settings, a protected path created or replaced on the host, a placeholder removed by hand, the temp dir)
the old sandbox is stopped and a new one started, so a command never runs in a sandbox that no longer
matches what a fresh one would be. The sandbox stops after `IDLE_STOP_S` without a command (its
placeholders go with it) and when the agent exits; if it dies, the next command starts a new one.

The supervisor is inside the boundary and holds nothing a command lacks: same namespaces, mounts, seccomp
filter and (no) capabilities, so running something through it gains a command nothing. A command can
reach it only through its pid: it may kill it (its own and concurrent commands then fail with a clear
error and the next command starts a new sandbox). It cannot talk on its socket or forge an exit code: the
supervisor is non-dumpable, so its fds cannot be opened through /proc/PID/fd and it cannot be ptraced by a
process without capabilities; each command's exit code comes back on a pipe only the supervisor holds,
and the agent takes nothing else from it (the output is the command's own, as without a sandbox).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import json
import os
import secrets
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tools.base import ToolError
from tools.proctree import kill_marked
from tools.sandbox import Sandbox, Wrapped, sandbox_python

IDLE_STOP_S = 30.0
START_TIMEOUT_S = 10.0
MAX_START_FAILURES = 3
SOURCE_PATH = Path(__file__).with_name("sandbox_supervisor.py")
GONE = ("the sandbox's supervisor ended while the command ran (a command killed it, or bubblewrap failed); "
        "the next command starts a new sandbox")


class SessionUnavailable(Exception):
    """The long-lived sandbox could not be started: the caller uses a per-command sandbox."""


class SessionGone(ToolError):
    """The sandbox ended while a command was running in it."""


def _identity(argv: list[str]) -> tuple[Any, ...]:
    """The bubblewrap arguments, and the (device, inode) of every path they name (absent: None)."""
    stats: list[tuple[int, int] | None] = []
    for arg in argv:
        if arg.startswith("/"):
            try:
                st = os.lstat(arg)
                stats.append((st.st_dev, st.st_ino))
            except OSError:
                stats.append(None)
    normal = ["FD" if prev == "--seccomp" else a for prev, a in zip(["", *argv], argv, strict=False)]
    return tuple(normal), tuple(stats)


class SandboxSession:
    """One running sandbox: the bubblewrap process, its supervisor's socket, how many commands run in it."""

    def __init__(self, key: tuple[Any, ...], wrapped: Wrapped, dummy: int) -> None:
        self.key = key
        self._wrapped = wrapped
        self._lock = threading.Lock()
        self._running = 0
        self._wake = threading.Event()
        self._last = time.monotonic()
        self.alive = False
        self.retired = False  # replaced by a newer sandbox: stops once its commands have ended
        self._stopped = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        source = SOURCE_PATH.read_text(encoding="utf-8")
        # The wrapped command line ends with the `dummy` placeholder argv: replaced by the supervisor's.
        argv = [*wrapped.argv[:-dummy], sandbox_python(), "-I", "-S", "-c", source, str(theirs.fileno())]
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, pass_fds=(*wrapped.pass_fds, theirs.fileno()), env={"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            self._proc = None
            ours.close()
            wrapped.release()
            raise SessionUnavailable(str(exc)) from None
        finally:
            theirs.close()
            wrapped.close_fds()
        self.alive = True
        try:
            ours.settimeout(START_TIMEOUT_S)
            ready = ours.recv(256)
        except OSError:
            ready = b""
        if ready != b'{"ready": true}':
            self.stop()
            raise SessionUnavailable("the sandbox's supervisor did not start")
        threading.Thread(target=self._watch, name="sandbox-idle", daemon=True).start()

    def usable(self) -> bool:
        return self.alive and not self.retired and self._proc is not None and self._proc.poll() is None

    # -- requests --
    def submit(self, argv: list[str], cwd: Path, env: dict[str, str], out_fd: int, status_fd: int) -> str:
        """Start a command: its stdout+stderr go to `out_fd`; the supervisor writes its exit code to
        `status_fd` (which only the supervisor holds) and closes it. Returns the command's id."""
        rid = secrets.token_hex(16)
        data = json.dumps({"op": "run", "id": rid, "argv": argv, "cwd": str(cwd), "env": env}).encode()
        with self._lock:
            if not self.alive:
                raise SessionUnavailable("the sandbox has ended")
            try:
                socket.send_fds(self._sock, [data], [out_fd, status_fd])
            except OSError as exc:
                if exc.errno != errno.EMSGSIZE:  # too large: this command gets a bubblewrap of its own
                    self.alive = False  # the supervisor is gone: a new sandbox next time
                    self._wake.set()
                raise SessionUnavailable(str(exc)) from None
            self._running += 1
        return rid

    def finished(self) -> None:
        """A command has ended: the idle clock restarts (a retired sandbox stops once nothing runs)."""
        with self._lock:
            self._running -= 1
            self._last = time.monotonic()
        self._wake.set()

    def signal(self, rid: str, sig: int, token: str) -> None:
        with contextlib.suppress(OSError), self._lock:
            if self.alive:
                self._sock.send(json.dumps({"op": "kill", "id": rid, "sig": int(sig), "token": token}).encode())

    def _watch(self) -> None:
        """One thread per sandbox: stop it after IDLE_STOP_S with nothing running, or once retired and idle."""
        while True:
            if not self.alive:
                self.stop()  # the supervisor died: reap bubblewrap, release the placeholders
                return
            with self._lock:
                busy = self._running > 0
                left = IDLE_STOP_S - (time.monotonic() - self._last)
            if not busy and (self.retired or left <= 0):
                self.stop()
                return
            self._wake.wait(max(left, 0.05) if not busy else IDLE_STOP_S)
            self._wake.clear()
            if self._proc is not None and self._proc.poll() is not None:
                self.alive = False

    def retire(self) -> None:
        """Replaced: no new command; stop now when idle, else when the last running one ends."""
        with self._lock:
            self.retired = True
        self._wake.set()

    def stop(self) -> None:
        """End the sandbox (everything in it dies with its PID namespace) and release its placeholders."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self.alive = False
        self._wake.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        proc = getattr(self, "_proc", None)
        if proc is not None:
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(2)
        self._sock.close()
        self._wrapped.release()
        with _lock:
            _live.discard(self)


_lock = threading.Lock()
_sessions: dict[int, SandboxSession] = {}  # id(Sandbox) -> its running session
_failures: dict[int, int] = {}  # id(Sandbox) -> sandboxes that would not start
_live: set[SandboxSession] = set()  # every session not stopped yet, retired ones included (for exit)

DUMMY = ["/bin/true"]


def session_for(sandbox: Sandbox, env: dict[str, str]) -> tuple[SandboxSession, Wrapped]:
    """The sandbox's running session, started or restarted to match the current configuration; `env` gets
    the sandbox's TMPDIR (and proxy variables). Returns the session and this command's own spec (its
    placeholders and forbidden paths: `release()` it when the command has ended).
    Raises SessionUnavailable (use a per-command sandbox) or SandboxRefused."""
    spec = sandbox.wrap(list(DUMMY), sandbox.project_root, env)
    key = _identity(spec.argv)
    spec.close_fds()
    with _lock:
        current = _sessions.get(id(sandbox))
        if current is not None and current.usable() and current.key == key:
            return current, spec
        if current is not None:
            del _sessions[id(sandbox)]
    if current is not None:
        current.retire()  # commands still running in it finish there
    try:
        fresh = SandboxSession(key, sandbox.wrap(list(DUMMY), sandbox.project_root, {}), len(DUMMY))
    except SessionUnavailable:
        spec.release()
        _failures[id(sandbox)] = _failures.get(id(sandbox), 0) + 1
        if _failures[id(sandbox)] >= MAX_START_FAILURES:
            sandbox.reuse = False  # one bubblewrap per command from now on: as contained, only slower
        raise
    except BaseException:
        spec.release()
        raise
    with _lock:
        _sessions[id(sandbox)] = fresh
        _live.add(fresh)
    return fresh, spec


def stop_all() -> None:
    with _lock:
        sessions = list(_live)
        _sessions.clear()
    for s in sessions:
        s.stop()


atexit.register(stop_all)


class SessionCommand:
    """A command running in the session's sandbox, shaped like the subprocess the Bash tool waits on."""

    def __init__(self, session: SandboxSession, rid: str, exit_code: asyncio.Future[int],
                 stdout: asyncio.StreamReader, token: str) -> None:
        self.session, self.rid, self.exit_code, self.stdout, self.token = session, rid, exit_code, stdout, token

    @property
    def returncode(self) -> int | None:
        done = self.exit_code.done() and not self.exit_code.cancelled() and self.exit_code.exception() is None
        return self.exit_code.result() if done else None

    async def wait(self) -> int:
        return await asyncio.shield(self.exit_code)

    def kill(self, sig: int) -> None:
        """The command's group, session, descendants and every process carrying its token."""
        self.session.signal(self.rid, sig, self.token)
        kill_marked(self.token, sig)

    def abandon(self) -> None:
        """Killed and still no exit code (a command stopped the supervisor, say): the sandbox is replaced."""
        self.session.alive = False
        self.session.retire()


async def _pipe_reader(fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**20)
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                       os.fdopen(fd, "rb", buffering=0))
    return reader


async def _exit_code(status: asyncio.StreamReader, session: SandboxSession) -> int:
    """The exit code the supervisor writes when the command has ended; end of file first: it died."""
    try:
        data = await status.read(64)
    finally:
        session.finished()
    try:
        return int(data)
    except ValueError:
        session.alive = False  # the next command starts a new sandbox, even before bubblewrap has exited
        raise SessionGone(GONE) from None


async def start_command(sandbox: Sandbox, argv: list[str], cwd: Path, env: dict[str, str],
                        token: str) -> tuple[SessionCommand, Wrapped]:
    """`argv` started in the session's sandbox: stdout and stderr interleaved on one pipe, the exit code on
    another that only the supervisor holds (a command cannot forge it)."""
    for attempt in (1, 2):
        session, spec = session_for(sandbox, env)
        out_r, out_w = os.pipe()
        st_r, st_w = os.pipe()
        try:
            rid = session.submit(argv, cwd, env, out_w, st_w)
            break
        except BaseException as exc:
            os.close(out_r)
            os.close(st_r)
            spec.release()
            if attempt == 2 or not isinstance(exc, SessionUnavailable):
                raise  # a sandbox that just died is replaced once
        finally:
            os.close(out_w)
            os.close(st_w)
    stdout = await _pipe_reader(out_r)
    exit_code = asyncio.ensure_future(_exit_code(await _pipe_reader(st_r), session))
    return SessionCommand(session, rid, exit_code, stdout, token), spec
