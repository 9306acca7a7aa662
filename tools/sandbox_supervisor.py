"""The supervisor that runs inside a long-lived sandbox (tools/sandbox_session.py) and starts its commands.

Run by bubblewrap as `python -I -S -c <this file>`: standard library only, nothing imported from the
project. It talks to the agent over one inherited AF_UNIX SOCK_SEQPACKET socket (fd given as argv[1]; the
sandbox's seccomp filter refuses creating Unix sockets, not using an inherited one). Messages are JSON:

  agent -> supervisor  {"op": "run", "id", "argv", "cwd", "env"} + two fds: the command's stdout and
                       stderr, and a status pipe the supervisor alone keeps: when the command has ended it
                       writes the exit code there (< 0: killed by that signal) and closes it
                       {"op": "kill", "id", "sig", "token"}
  supervisor -> agent  {"ready": true} once

Each command is started (vfork+exec) in its own session with /dev/null as stdin, the requested cwd and
environment, and none of the supervisor's fds.
The supervisor makes itself non-dumpable, so a command (same uid, no capabilities) can neither open its
fds through /proc nor ptrace it: it cannot inject requests or forge replies on the agent's socket.
"""

from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

PR_SET_DUMPABLE = 4
MAX_MESSAGE = 4 * 1024 * 1024


def _send(sock: socket.socket, message: dict[str, object]) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        os._exit(0)  # the agent is gone: nothing to report to


def _members(root: int, marker: bytes) -> set[int]:
    """The command's processes in this PID namespace: its group or session, its token, its descendants."""
    table: dict[int, tuple[int, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
            table[int(name)] = (int(rest[1]), int(rest[2]), int(rest[3]))
        except (OSError, IndexError, ValueError):
            continue
    found = {pid for pid, (_, pgrp, sid) in table.items() if root in (pgrp, sid)}
    for pid in table:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker and marker in f.read():
                    found.add(pid)
        except OSError:
            pass
    stack = list(found)
    while stack:
        parent = stack.pop()
        for pid, (ppid, _, _) in table.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                stack.append(pid)
    found.discard(os.getpid())
    return found


def _kill(root: int, sig: int, token: str) -> None:
    marker = f"AGENT_TOOL_TOKEN={token}\0".encode() if token else b""
    quiet = 0
    for _ in range(50):
        pids = _members(root, marker)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if sig != signal.SIGKILL:
            return
        quiet = quiet + 1 if not pids else 0
        if quiet >= 2:
            return
        time.sleep(0.005)


class Supervisor:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.running: dict[str, tuple[subprocess.Popen[bytes], int]] = {}  # id -> (command, its status fd)

    def request(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)  # the agent closed its end: the sandbox ends
        try:
            msg = json.loads(data)
            if msg.get("op") == "run":
                self.run(msg, fds)
            elif msg.get("op") == "kill" and msg.get("id") in self.running:
                _kill(self.running[msg["id"]][0].pid, int(msg["sig"]), str(msg.get("token") or ""))
        finally:
            for fd in fds:
                os.close(fd)

    def run(self, msg: dict[str, object], fds: list[int]) -> None:
        """Start the command: vfork+exec (subprocess), its own session, stdin /dev/null, no fd of ours."""
        rid = str(msg["id"])
        argv, cwd, env = msg["argv"], msg["cwd"], msg["env"]
        if len(fds) != 2 or not isinstance(argv, list) or not isinstance(cwd, str) or not isinstance(env, dict):
            if len(fds) == 2:
                os.write(fds[0], b"sandbox: malformed request\n")
                _finish(os.dup(fds[1]), 126)
            return
        status = os.dup(fds[1])  # kept (close-on-exec) until the command has ended
        try:
            self.running[rid] = (subprocess.Popen(
                [str(a) for a in argv], cwd=cwd, env={str(k): str(v) for k, v in env.items()},
                stdin=subprocess.DEVNULL, stdout=fds[0], stderr=fds[0], start_new_session=True), status)
        except OSError as exc:
            os.write(fds[0], f"sandbox: cannot run {argv[0]} in {cwd}: {exc.strerror}\n".encode())
            _finish(status, 127 if isinstance(exc, FileNotFoundError) else 126)

    def reap(self) -> None:
        for rid, (proc, status) in list(self.running.items()):
            if proc.poll() is not None:
                del self.running[rid]
                _finish(status, proc.returncode)


def _finish(status: int, code: int) -> None:
    try:
        os.write(status, str(code).encode())
    except OSError:
        pass  # nobody waits any more
    os.close(status)


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    sock = socket.socket(fileno=int(sys.argv[1]))
    sup = Supervisor(sock)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    _send(sock, {"ready": True})
    while True:
        for key, _ in sel.select():
            if key.fileobj is sock:
                sup.request()
            else:
                os.read(wake_r, 4096)
        sup.reap()


if __name__ == "__main__":
    main()
