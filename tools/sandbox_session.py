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

The supervisor is inside the boundary: a command can reach it only through its pid (it may kill it: its
own and concurrent commands then fail with a clear error). Its socket is not reachable from a command (the
supervisor is non-dumpable, so /proc/PID/fd and ptrace are closed to a process without capabilities), and
the agent believes nothing it says beyond an exit code for a request id it issued (random, 128 bits).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.base import ToolError
from tools.proctree import kill_marked
from tools.sandbox import Sandbox, Wrapped

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


@dataclass
class _Pending:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[int]


class SandboxSession:
    """One running sandbox: the bubblewrap process, its supervisor's socket, the requests in flight."""

    def __init__(self, key: tuple[Any, ...], wrapped: Wrapped, dummy: int) -> None:
        self.key = key
        self._wrapped = wrapped
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._ready = threading.Event()
        self._wake = threading.Event()
        self._last = time.monotonic()
        self.alive = False
        self.retired = False  # replaced by a newer sandbox: stops once its commands have ended
        self._stopped = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        source = SOURCE_PATH.read_text(encoding="utf-8")
        # The wrapped command line ends with the `dummy` placeholder argv: replaced by the supervisor's.
        argv = [*wrapped.argv[:-dummy], sys.executable, "-I", "-S", "-c", source, str(theirs.fileno())]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True,
                                          pass_fds=(*wrapped.pass_fds, theirs.fileno()), env={"PATH": "/usr/bin:/bin"})
        except OSError as exc:
            ours.close()
            raise SessionUnavailable(str(exc)) from None
        finally:
            theirs.close()
            wrapped.close_fds()
        self.alive = True
        threading.Thread(target=self._read, name="sandbox-session", daemon=True).start()
        if not self._ready.wait(START_TIMEOUT_S) or not self.alive:
            self.stop()
            raise SessionUnavailable("the sandbox's supervisor did not start")
        threading.Thread(target=self._watch, name="sandbox-idle", daemon=True).start()

    # -- the reader thread --
    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            if isinstance(msg, dict):
                self._reply(msg)
        with self._lock:
            self.alive = False
            pending, self._pending = self._pending, {}
        self._ready.set()
        self._wake.set()
        for p in pending.values():
            _settle(p, None)

    def _reply(self, msg: dict[str, Any]) -> None:
        if msg.get("ready") is True:
            self._ready.set()
            return
        with self._lock:
            p = self._pending.pop(str(msg.get("id")), None)
        if p is not None:
            code = msg.get("exit")
            _settle(p, code if isinstance(code, int) and not isinstance(code, bool) else 126)

    # -- requests --
    def submit(self, argv: list[str], cwd: Path, env: dict[str, str], out_fd: int) -> tuple[str, asyncio.Future[int]]:
        """Start a command (its stdout+stderr go to `out_fd`); returns its id and a future for its exit code."""
        rid = secrets.token_hex(16)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        data = json.dumps({"op": "run", "id": rid, "argv": argv, "cwd": str(cwd), "env": env}).encode()
        with self._lock:
            if not self.alive:
                raise SessionUnavailable("the sandbox has ended")
            self._pending[rid] = _Pending(loop, future)
            try:
                socket.send_fds(self._sock, [data], [out_fd])
            except OSError as exc:
                del self._pending[rid]
                raise SessionUnavailable(str(exc)) from None
        return rid, future

    def signal(self, rid: str, sig: int, token: str) -> None:
        with contextlib.suppress(OSError), self._lock:
            if self.alive:
                self._sock.send(json.dumps({"op": "kill", "id": rid, "sig": int(sig), "token": token}).encode())

    def idle_later(self) -> None:
        """A command has ended: the idle clock restarts (a retired sandbox stops once nothing runs)."""
        with self._lock:
            self._last = time.monotonic()
        if self.retired:
            self._wake.set()

    def _watch(self) -> None:
        """One thread per sandbox: stop it after IDLE_STOP_S with nothing running, or once retired and idle."""
        while True:
            if not self.alive:
                self.stop()  # the supervisor died: reap bubblewrap, release the placeholders
                return
            with self._lock:
                busy = bool(self._pending)
                left = IDLE_STOP_S - (time.monotonic() - self._last)
            if not busy and (self.retired or left <= 0):
                self.stop()
                return
            self._wake.wait(max(left, 0.05) if not busy else IDLE_STOP_S)
            self._wake.clear()

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


def _settle(p: _Pending, code: int | None) -> None:
    def done() -> None:
        if p.future.done():
            return
        if code is None:
            p.future.set_exception(SessionGone(GONE))
        else:
            p.future.set_result(code)

    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
        p.loop.call_soon_threadsafe(done)


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
        if current is not None and current.alive and current.key == key:
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

    def __init__(self, session: SandboxSession, rid: str, future: asyncio.Future[int], stdout: asyncio.StreamReader,
                 token: str) -> None:
        self.session, self.rid, self.future, self.stdout, self.token = session, rid, future, stdout, token

    @property
    def returncode(self) -> int | None:
        if self.future.done() and not self.future.cancelled() and self.future.exception() is None:
            return self.future.result()
        return None

    async def wait(self) -> int:
        return await asyncio.shield(self.future)

    def kill(self, sig: int) -> None:
        """The command's group, session, descendants and every process carrying its token."""
        self.session.signal(self.rid, sig, self.token)
        kill_marked(self.token, sig)


async def start_command(sandbox: Sandbox, argv: list[str], cwd: Path, env: dict[str, str],
                        token: str) -> tuple[SessionCommand, Wrapped]:
    """`argv` forked in the session's sandbox; its stdout and stderr interleaved on one pipe."""
    session, spec = session_for(sandbox, env)
    r, w = os.pipe()
    try:
        rid, future = session.submit(argv, cwd, env, w)
    except BaseException:
        os.close(r)
        spec.release()
        raise
    finally:
        os.close(w)
    future.add_done_callback(lambda _: session.idle_later())
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(r, "rb", buffering=0))
    return SessionCommand(session, rid, future, reader, token), spec
