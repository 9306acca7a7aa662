"""Network for sandboxed commands when `sandbox.network.allowedDomains` names hosts.

The command still has its own network namespace (no route out, loopback only). A filtering HTTP proxy
runs in the agent (a thread) on a Unix socket; inside the sandbox a small bridge listens on
127.0.0.1:PORT and forwards each connection to that socket, and `HTTP(S)_PROXY` point at it. The proxy
lets through CONNECT (HTTPS) and plain HTTP requests to allowed hosts only (`*.example.com` matches its
subdomains; `deniedDomains` wins) and answers 403 otherwise. The bridge starts before the seccomp filter
that refuses `socket(AF_UNIX)` is applied to the command (`HELPER`), so the command cannot reach any
other Unix socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

BRIDGE_PORT = 3128
HEAD_LIMIT = 64 * 1024
DENIED = ("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
          "Connection to {host} blocked by the sandbox: not in sandbox.network.allowedDomains\n")


def host_allowed(host: str, allowed: Iterable[str], denied: Iterable[str] = ()) -> bool:
    host = host.lower().rstrip(".")

    def match(pattern: str) -> bool:
        p = pattern.lower().strip().rstrip(".")
        if p.startswith("*."):
            return host.endswith(p[1:]) and host != p[2:]
        return host == p

    return not any(match(d) for d in denied) and any(match(a) for a in allowed)


def _split_target(target: str, default_port: int) -> tuple[str, int]:
    if target.startswith("["):  # [v6]:port
        host, _, rest = target[1:].partition("]")
        return host, int(rest.lstrip(":") or default_port)
    host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    return (host, int(port)) if port else (target, default_port)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class DomainProxy:
    """The filtering proxy, on its own event loop in a daemon thread, for the life of the process."""

    def __init__(self, allowed: list[str], denied: list[str]) -> None:
        self.allowed, self.denied = allowed, denied
        self.directory = Path(tempfile.mkdtemp(prefix="agent-sandbox-net-"))
        self.socket_path = str(self.directory / "proxy.sock")
        self._ready = threading.Event()
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name="sandbox-proxy", daemon=True).start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(asyncio.start_unix_server(self._serve, path=self.socket_path))
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that asked
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        if len(head) > HEAD_LIMIT:
            writer.close()
            return
        line, _, rest = head.decode("latin-1").partition("\r\n")
        method, target, version = (line.split(" ") + ["", "", ""])[:3]
        if method.upper() == "CONNECT":
            host, port = _split_target(target, 443)
            first = b""
        elif target.startswith("http://"):
            hostport, _, path = target[7:].partition("/")
            host, port = _split_target(hostport, 80)
            headers = "".join(h + "\r\n" for h in rest.split("\r\n") if h and not h.lower().startswith("proxy-"))
            first = f"{method} /{path} {version}\r\n{headers}\r\n".encode("latin-1")
        else:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            writer.close()
            return
        await self._forward(reader, writer, host, port, first)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int,
                       first: bytes) -> None:
        if not host_allowed(host, self.allowed, self.denied):
            writer.write(DENIED.format(host=host).encode())
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError) as exc:
            writer.write(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n{exc}\n".encode())
            writer.close()
            return
        if first:
            up_writer.write(first)
        else:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


_proxies: dict[tuple[tuple[str, ...], tuple[str, ...]], DomainProxy] = {}
_proxies_lock = threading.Lock()


def proxy_for(allowed: list[str], denied: list[str]) -> DomainProxy:
    key = (tuple(allowed), tuple(denied))
    with _proxies_lock:
        if key not in _proxies:
            _proxies[key] = DomainProxy(list(allowed), list(denied))
        return _proxies[key]


def proxy_env(port: int = BRIDGE_PORT) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1"}


# Run inside the sandbox: start the bridge (127.0.0.1:PORT -> the proxy's Unix socket), then apply the
# seccomp filter (hex, may be empty) to this process and exec the command. argv: sock port filter -- cmd...
HELPER = r"""
import ctypes, os, socket, sys, threading
sock, port, prog = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
cmd = sys.argv[5:]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(64)
if os.fork() == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2): os.dup2(null, fd)  # the command's output pipe must close when the command ends
    def pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d: break
                b.sendall(d)
        except OSError: pass
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
    def serve(c):
        u = socket.socket(socket.AF_UNIX)
        try: u.connect(sock)
        except OSError: c.close(); return
        threading.Thread(target=pump, args=(c, u), daemon=True).start(); pump(u, c)
    while True:
        c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
srv.close()
if prog:
    libc = ctypes.CDLL(None, use_errno=True)
    class F(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    f = F(len(prog) // 8, prog)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(f), 0, 0):
        sys.stderr.write("sandbox: the seccomp filter could not be applied\n"); sys.exit(126)
os.execvp(cmd[0], cmd)
"""


def helper_argv(python: str, socket_path: str, program: bytes | None, argv: list[str]) -> list[str]:
    return [python, "-I", "-S", "-c", HELPER, socket_path, str(BRIDGE_PORT), (program or b"").hex(), "--", *argv]


def cleanup() -> None:
    for proxy in list(_proxies.values()):
        with contextlib.suppress(OSError):
            os.unlink(proxy.socket_path)
