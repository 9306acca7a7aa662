"""Connections to the configured MCP servers, through the official `mcp` SDK.

Each server lives in one long-lived asyncio task that enters the transport and the `ClientSession` and
later exits them (anyio's task groups must be entered and exited by the same task). Requests are sent
from the caller's task on the live session, raced against the server task ending and a per-request
timeout, so a dead or hung server turns into an error rather than a hang (over HTTP a liveness ping every
few seconds makes a dead server's transport fail, which the SDK alone does not notice).

Servers start concurrently in the background (`start_background`): nothing waits for them, each is
bounded by `MCP_TIMEOUT`, and every change (a server ready or failed, a tools/list_changed, a restart)
bumps `version` and leaves a notice, which the front end turns into tools for the next model call. A
server's stderr and its logging notifications go to a per-server log file whose last lines are shown
when it fails. A crashed stdio server (or an HTTP server whose session expired) is restarted once, on the
next call. `close()` stops every server task, which closes the sessions and terminates stdio processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import agent_environ
from services.credentials import is_secret
from services.hooks import NO_HOOKS, Hooks
from services.mcp.config import ServerConfig, load_config
from services.mcp.names import server_names, tool_names
from services.private_fs import ensure_private_dir
from services.trace import trace

CLIENT_NAME = "react-agent"
CLIENT_VERSION = "0.1.0"
DEFAULT_CONNECT_TIMEOUT = 30.0  # Claude Code's MCP_TIMEOUT default
DEFAULT_CALL_TIMEOUT = 30.0
HTTP_PROBE_INTERVAL = 2.0  # seconds between liveness pings while an HTTP request is pending
MAX_RESTARTS = 1  # automatic restarts per server and session
STDERR_TAIL_LINES = 5
_CLOSE_GRACE = 5.0
_LOG_CAP = 1_000_000  # past this size a server's logging notifications are no longer written

# Errors that mean the connection (not the request) is gone: the server died or its HTTP session expired.
_GONE = re.compile(r"connection closed|session terminated|session not found|broken pipe|end of file", re.I)


def timeout_from_env(var: str, default: float, environ: Mapping[str, str]) -> float:
    """Milliseconds from the environment (a bad or non-positive value keeps the default), in seconds."""
    raw = environ.get(var, "").strip()
    if raw:
        try:
            ms = float(raw)
            if ms > 0:
                return ms / 1000.0
        except ValueError:
            pass
    return default


class McpError(Exception):
    """A failed MCP request, with a one-line message naming the server."""


def describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


@dataclass
class PromptInfo:
    server: str
    name: str
    arg_names: list[str]
    description: str = ""
    required: list[str] = field(default_factory=list)


@dataclass
class ResourceInfo:
    """A resource, or a resource template (then `uri` is the RFC 6570 template, e.g. `notes://{topic}`)."""

    server: str
    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None


def elicitation_fields(server: str, params: Any) -> dict[str, Any]:
    """Claude Code's Elicitation hook input for a server's request (form or URL)."""
    fields: dict[str, Any] = {"mcp_server_name": server, "message": str(getattr(params, "message", "") or ""),
                              "mode": getattr(params, "mode", None) or "form"}
    for key, attr in (("url", "url"), ("elicitation_id", "elicitationId"), ("requested_schema", "requestedSchema")):
        value = getattr(params, attr, None)
        if value is not None:
            fields[key] = value
    return fields


@dataclass
class ClientHandlers:
    """What the front end answers for servers: elicitation, sampling and progress. Each is optional; a
    missing one declines (a one-shot run has nobody to ask). They get the server's name first."""

    elicit: Callable[[str, Any], Awaitable[Any]] | None = None  # (server, ElicitRequestParams) -> ElicitResult
    hooks: Hooks = NO_HOOKS  # Claude Code's Elicitation / ElicitationResult hooks (the session's)
    sample: Callable[[str, Any], Awaitable[Any]] | None = None  # (server, CreateMessageRequestParams) -> result
    progress: Callable[[str, str], None] | None = None  # (tool_use_id, text)


class McpServer:
    """One configured server: its background task, its session and what it offers."""

    def __init__(self, manager: McpManager, config: ServerConfig, connect_timeout: float, call_timeout: float):
        self.manager = manager
        self.config = config
        self.name = config.name
        self.cwd = manager.cwd
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.state = "pending"  # pending | connected | failed | closed
        self.error = ""
        self.tools: list[Any] = []
        self.prompts: list[PromptInfo] = []
        self.resources: list[ResourceInfo] = []
        self.templates: list[ResourceInfo] = []
        self.instructions = ""
        self.has_resources = False
        self.warnings: list[str] = []
        self.session: Any = None
        self.restarts = 0
        self.ever_connected = False
        self.log_path: Path | None = manager.log_dir / f"{manager.server_parts[config.name]}.log" if manager.log_dir else None
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._errlog: Any = None
        self._relisting: set[asyncio.Task[Any]] = set()
        self._cancel_sent: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._closing = False
        self._log_capped = False

    # --- the per-server log --------------------------------------------------------------------

    def _open_log(self) -> Any:
        """The file the server's stderr goes to (appended; a new session starts it afresh)."""
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
        path = self.log_path
        if path is None:
            import tempfile

            self._errlog = tempfile.TemporaryFile(mode="a+", encoding="utf-8", errors="replace")
            return self._errlog
        try:
            ensure_private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._errlog = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
        except OSError:
            import tempfile

            self.log_path = None
            self._errlog = tempfile.TemporaryFile(mode="a+", encoding="utf-8", errors="replace")
        return self._errlog

    def log(self, line: str, capped: bool = False) -> None:
        """One line of our own in the server's log (a start, a failure, a logging notification). `capped`
        lines (a server's own logging) stop once the log passes _LOG_CAP: a chatty server cannot fill the disk."""
        if self._errlog is None:
            self._open_log()
        with contextlib.suppress(OSError, ValueError):
            if capped and os.fstat(self._errlog.fileno()).st_size > _LOG_CAP:
                if not self._log_capped:
                    self._log_capped = True
                    self._errlog.write(f"[agent] log over {_LOG_CAP} bytes: the server's log messages are dropped\n")
                    self._errlog.flush()
                return
            stamp = time.strftime("%H:%M:%S")
            self._errlog.write(f"[{stamp} agent] {line}\n")
            self._errlog.flush()

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        """The last lines the server wrote to stderr (our own `[.. agent]` lines left out)."""
        text = ""
        try:
            if self.log_path is not None and self.log_path.is_file():
                with open(self.log_path, "rb") as f:
                    f.seek(max(0, f.seek(0, os.SEEK_END) - 8000))
                    text = f.read().decode("utf-8", "replace")
            elif self._errlog is not None:
                self._errlog.flush()
                self._errlog.seek(0)
                text = self._errlog.read()[-8000:]
        except (OSError, ValueError):
            return ""
        mine = re.compile(r"^\[\d\d:\d\d:\d\d agent\] ")
        # Only what followed the latest start: an earlier run's lines would mislead.
        chunks = text.split("] starting ")
        text = chunks[-1].split("\n", 1)[1] if len(chunks) > 1 and "\n" in chunks[-1] else text
        kept = [ln.strip() for ln in text.splitlines() if ln.strip() and not mine.match(ln)]
        return " | ".join(kept[-lines:])

    # --- lifecycle -----------------------------------------------------------------------------

    def _transport(self) -> Any:
        if self.config.transport == "sdk":
            from services.mcp.sdk_transport import sdk_transport

            if self.manager.sdk_send is None:
                raise McpError(f'"{self.config.name}" is an SDK server: only an Agent SDK host '
                               "(--input-format stream-json) can run it")
            return sdk_transport(self.config.name, self.manager.sdk_send)
        if self.config.transport == "http":
            from mcp.client.streamable_http import streamablehttp_client

            return streamablehttp_client(self.config.url, headers=self.config.headers or None,
                                         timeout=self.connect_timeout)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.config.command, args=self.config.args, env=self._env(), cwd=str(self.cwd)
        )
        return stdio_client(params, errlog=self._errlog)

    def _env(self) -> dict[str, str] | None:
        """The server's configured env, secrets removed (the SDK adds a small safe base: PATH, HOME...)."""
        env = {k: v for k, v in self.config.env.items() if not is_secret(k)}
        return env or None

    def _session_kwargs(self) -> dict[str, Any]:
        from mcp.types import Implementation

        return {
            "client_info": Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
            "list_roots_callback": self._on_list_roots,
            "elicitation_callback": self._on_elicit,
            "sampling_callback": self._on_sample,
            "logging_callback": self._on_log,
            "message_handler": self._on_message,
        }

    async def _run(self) -> None:
        try:
            from mcp import ClientSession

            async with contextlib.AsyncExitStack() as stack:
                read, write, *_ = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write, **self._session_kwargs()))
                init = await session.initialize()
                self.instructions = (init.instructions or "").strip()
                await self._list_everything(session, init.capabilities)
                self.session = session
                self.state, self.error = "connected", ""
                self.ever_connected = True
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(McpError(describe(exc)))
                self._ready.exception()  # retrieved here: start() may be gone (cancelled at close)
            if self.state == "connected":
                self.state, self.error = "failed", f"disconnected: {describe(exc)}"
                self.log(f"disconnected: {describe(exc)}")
                self.manager.changed(f'MCP server "{self.name}" disconnected: {describe(exc)}', self)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None
            if self.state in ("connected", "pending"):
                self.state = "closed"
            self._ended.set()

    async def _list_everything(self, session: Any, caps: Any) -> None:
        self.tools = await _list_all(session.list_tools, "tools") if caps.tools is not None else []
        if caps.prompts is not None:
            try:
                self.prompts = _prompt_infos(self.name, await _list_all(session.list_prompts, "prompts"))
            except Exception as exc:  # noqa: BLE001 - a listing failure only warns
                self.warnings.append(f'MCP server "{self.name}": listing prompts failed: {describe(exc)}')
        if caps.resources is not None:
            self.has_resources = True
            try:
                resources = await _list_all(session.list_resources, "resources")
                self.resources = [ResourceInfo(self.name, str(r.uri), r.name, r.mimeType, r.description)
                                  for r in resources]
            except Exception as exc:  # noqa: BLE001
                self.warnings.append(f'MCP server "{self.name}": listing resources failed: {describe(exc)}')
            try:
                templates = await _list_all(session.list_resource_templates, "resourceTemplates")
                self.templates = [ResourceInfo(self.name, t.uriTemplate, t.name, t.mimeType, t.description)
                                  for t in templates]
            except Exception:  # noqa: BLE001 - templates are optional; many servers answer "method not found"
                self.templates = []

    def _fresh_attempt(self) -> None:
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self.state, self.error = "pending", ""
        self.session = None

    async def start(self, announce: bool = False) -> None:
        """Connect and list within the connect timeout; on failure state is "failed" and error says why.
        The outcome is settled (and, with `announce`, reported) before a failed transport is torn down,
        which for a stdio server that ignores us takes a few seconds more."""
        self._settled.clear()
        if self._closing:
            self.state = "closed"
            self._settled.set()
            return
        self._open_log()
        self.log(f"starting {self.config.transport} server "
                 f"({self.config.url if self.config.transport == 'http' else self.config.command})")
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.connect_timeout)
        except TimeoutError:
            self._settle(announce, f"timed out after {self.connect_timeout:g} s connecting (MCP_TIMEOUT)")
            await self._cancel()
        except McpError as exc:
            if self._closing:  # closed while starting: not a failure of the server's
                self.state, self.error = "closed", ""
                self._settled.set()
            else:
                await asyncio.sleep(0.05)  # a dying process's last stderr lands in the log
                self._settle(announce, str(exc))
            await self._cancel()
        except asyncio.CancelledError:
            self._settled.set()
            await self._cancel()
            raise
        else:
            self._settle(announce, "")

    def _settle(self, announce: bool, error: str) -> None:
        if error:
            tail = self.stderr_tail()
            self.state, self.error = "failed", error + (f" (stderr: {tail})" if tail and tail not in error else "")
            self.log(f"failed: {self.error}")
        else:
            self.log(f"connected: {len(self.tools)} tools")
        self._settled.set()
        if not announce:
            return
        if self.state == "connected":
            self.manager.changed(f'MCP server "{self.name}" connected: {len(self.tools)} tools', self)
        elif self.state == "failed":
            self.manager.changed(f'MCP server "{self.name}" failed to connect, skipped: {self.error}', self,
                                 kind="warning")
        for w in self.warnings:
            self.manager.changed(w, self, kind="warning")
        self.warnings.clear()

    def start_background(self) -> asyncio.Task[None]:
        """Start without waiting; the manager hears when it is ready or failed."""
        self._settled.clear()
        self._starting = asyncio.create_task(self.start(announce=True), name=f"mcp-start-{self.name}")
        return self._starting

    async def wait_started(self, timeout: float | None = None) -> None:
        """Until the start's outcome is known (connected, failed or closed), at most `timeout` seconds."""
        if self._starting is None or self._starting.done() or self._settled.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._settled.wait(), timeout)

    async def restart(self, why: str) -> bool:
        """One automatic restart after a crash or an expired session; True when it came back."""
        self.restarts += 1
        await self._cancel()
        self._fresh_attempt()
        self.log(f"restarting after: {why}")
        await self.start()
        if self.state == "connected":
            self.manager.changed(f'MCP server "{self.name}" restarted after: {why}', self)
            return True
        self.manager.changed(f'MCP server "{self.name}" could not be restarted: {self.error}', self, kind="warning")
        return False

    async def _cancel(self) -> None:
        """Cancel the server task once and give it time to close its transport. Never a second cancel:
        cancelling anyio's stdio cleanup again (it waits for the process) can leave it waiting forever."""
        task = self._task
        if task is None or task.done():
            return
        if self._cancel_sent is not task:
            self._cancel_sent = task
            task.cancel()
        await asyncio.wait({task}, timeout=_CLOSE_GRACE)

    async def close(self) -> None:
        self._closing = True
        for t in list(self._relisting):
            t.cancel()
        task = self._task
        if task is not None and not task.done():
            if self.state == "connected":
                self._stop.set()
                done, _ = await asyncio.wait({task}, timeout=_CLOSE_GRACE)
                if not done:  # a stuck close falls back to cancelling
                    await self._cancel()
            else:
                await self._cancel()
        starting = self._starting
        if starting is not None and not starting.done():
            # Its start() sees the cancelled task and finishes on its own; cancelling it would cancel twice.
            await asyncio.wait({starting}, timeout=_CLOSE_GRACE)
        if self.state in ("connected", "pending"):
            self.state = "closed"
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None

    # --- what the server asks of us -------------------------------------------------------------

    async def _on_list_roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult, Root

        roots = []
        for path in self.manager.roots():
            with contextlib.suppress(ValueError, OSError):
                roots.append(Root(uri=path.resolve().as_uri(), name=path.name or str(path)))  # type: ignore[arg-type]
        return ListRootsResult(roots=roots)

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """The Elicitation hooks may answer for the user; otherwise the front end asks (nobody in a one-shot
        run: cancelled, as in Claude Code), then the ElicitationResult hooks may change the answer."""
        from mcp.types import ElicitResult

        self.log(f"elicitation: {getattr(params, 'message', '')[:200]}")
        hooks = self.manager.handlers.hooks
        fields = elicitation_fields(self.name, params)
        try:
            early = await hooks.elicitation(fields)
        except Exception as exc:  # noqa: BLE001 - a failing hook leaves the question to the user
            self.log(f"Elicitation hook failed: {describe(exc)}")
            early = None
        if early is not None:
            return ElicitResult(**early)
        result = await self._ask_front_end(params)
        answered = {k: v for k, v in fields.items() if k in ("mcp_server_name", "elicitation_id", "mode")}
        answered["action"] = result.action
        if result.content is not None:
            answered["content"] = result.content
        try:
            changed = await hooks.elicitation_result(answered)
        except Exception as exc:  # noqa: BLE001
            self.log(f"ElicitationResult hook failed: {describe(exc)}")
            changed = None
        return ElicitResult(**changed) if changed is not None else result

    async def _ask_front_end(self, params: Any) -> Any:
        from mcp.types import ElicitResult

        handler = self.manager.handlers.elicit
        if handler is None:
            return ElicitResult(action="cancel")
        try:
            return await handler(self.name, params)
        except Exception as exc:  # noqa: BLE001 - a front-end failure declines, never breaks the session
            self.log(f"elicitation failed: {describe(exc)}")
            return ElicitResult(action="cancel")

    async def _on_sample(self, context: Any, params: Any) -> Any:
        from mcp.types import ErrorData

        handler = self.manager.handlers.sample
        if handler is None:
            return ErrorData(code=-1, message="Sampling is not available in this session (nobody to approve it)")
        try:
            return await handler(self.name, params)
        except Exception as exc:  # noqa: BLE001
            self.log(f"sampling failed: {describe(exc)}")
            return ErrorData(code=-1, message=f"Sampling failed: {describe(exc)}")

    async def _on_log(self, params: Any) -> None:
        data = params.data if isinstance(params.data, str) else repr(params.data)
        source = f" {params.logger}" if params.logger else ""
        self.log(f"log {params.level}{source}: {data[:2000]}", capped=True)

    async def _on_message(self, message: Any) -> None:
        """Notifications: a changed list is fetched again in a task of its own (awaiting a request here
        would block the session's receive loop that must deliver the answer)."""
        root = getattr(message, "root", None)
        kind = type(root).__name__
        what = {"ToolListChangedNotification": "tools", "ResourceListChangedNotification": "resources",
                "PromptListChangedNotification": "prompts"}.get(kind)
        if what is None or self.state != "connected":
            return
        task = asyncio.ensure_future(self._relist(what))
        self._relisting.add(task)
        task.add_done_callback(self._relisting.discard)

    async def _relist(self, what: str) -> None:
        try:
            if what == "tools":
                before = {t.name for t in self.tools}
                self.tools = await self.request("tools/list", lambda s: _list_all(s.list_tools, "tools"),
                                                restart=False)
                after = {t.name for t in self.tools}
                added, removed = sorted(after - before), sorted(before - after)
                change = ", ".join([*(f"+{n}" for n in added), *(f"-{n}" for n in removed)]) or "updated"
                self.manager.changed(f'MCP server "{self.name}" changed its tools: {change}', self)
            elif what == "resources":
                resources = await self.request("resources/list", lambda s: _list_all(s.list_resources, "resources"),
                                               restart=False)
                self.resources = [ResourceInfo(self.name, str(r.uri), r.name, r.mimeType, r.description)
                                  for r in resources]
                self.manager.changed("", self)
            else:
                prompts = await self.request("prompts/list", lambda s: _list_all(s.list_prompts, "prompts"),
                                             restart=False)
                self.prompts = _prompt_infos(self.name, prompts)
                self.manager.changed("", self)
        except McpError as exc:
            self.log(f"re-listing {what} failed: {exc}")

    # --- requests ------------------------------------------------------------------------------

    async def request(self, what: str, fn: Callable[[Any], Awaitable[Any]], timeout: float | None = None,
                      restart: bool = True) -> Any:
        """Run `fn(session)` bounded by the timeout and by the server task ending. A server that crashed
        (or whose HTTP session expired) is restarted once first; an expired session retries the request."""
        if self.state == "pending":
            await self.wait_started()
        if restart and self.state == "failed" and self.ever_connected and self.restarts < MAX_RESTARTS:
            await self.restart(self.error)
        try:
            return await self._request_once(what, fn, timeout)
        except _SessionGone as gone:
            # The server never ran the request (its session is unknown to it): safe to send again.
            if restart and self.restarts < MAX_RESTARTS and await self.restart(str(gone)):
                return await self._request_once(what, fn, timeout)
            raise McpError(f"MCP {what} failed ({self.name}): {gone}") from None

    async def _request_once(self, what: str, fn: Callable[[Any], Awaitable[Any]], timeout: float | None) -> Any:
        session = self.session
        if session is None or self.state != "connected":
            raise McpError(f'MCP server "{self.name}" is not connected ({self.error or self.state})')
        timeout = self.call_timeout if timeout is None else timeout
        call = asyncio.ensure_future(fn(session))
        ended = asyncio.ensure_future(self._ended.wait())
        # Over HTTP a server that dies mid-call leaves the request unanswered (mcp 1.x, python-sdk#3441):
        # a ping every few seconds fails to connect, which ends the transport and so this wait.
        probe = HTTP_PROBE_INTERVAL if self.config.transport == "http" else None
        pings: list[asyncio.Future[Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        done: set[asyncio.Future[Any]] = set()
        try:
            while not done:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, probe) if probe else remaining
                done, _ = await asyncio.wait({call, ended}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                if not done and probe:
                    pings.append(asyncio.ensure_future(_quiet_ping(session, probe)))
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            ended.cancel()
            for ping in pings:
                ping.cancel()
        if call in done:
            try:
                return call.result()
            except Exception as exc:
                message = describe(exc)
                if "session terminated" in message.lower() or "session not found" in message.lower():
                    self.state, self.error = "failed", f"HTTP session expired: {message}"
                    self.log(self.error)
                    raise _SessionGone(message) from None
                if _GONE.search(message):
                    self.state, self.error = "failed", f"disconnected: {message}"
                    self.log(self.error)
                    await asyncio.sleep(0.05)  # the dying process's last words reach the log
                    tail = self.stderr_tail()
                    if tail:
                        message += f" (stderr: {tail})"
                raise McpError(f"MCP {what} failed ({self.name}): {message}") from None
        call.cancel()
        if ended in done:
            tail = self.stderr_tail()
            extra = f" (stderr: {tail})" if tail else ""
            raise McpError(f'MCP {what} failed ({self.name}): server disconnected ({self.error or "closed"}){extra}')
        raise McpError(f"MCP {what} timed out after {timeout:g} s ({self.name})")


class _SessionGone(Exception):
    pass


async def _quiet_ping(session: Any, timeout: float) -> None:
    """A liveness probe: its outcome does not matter, only that a dead server's transport fails on it."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(session.send_ping(), timeout)


async def _list_all(method: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        result = await method(cursor) if cursor else await method()
        items.extend(getattr(result, attr))
        cursor = result.nextCursor
        if not cursor:
            break
    return items


def _prompt_infos(server: str, prompts: list[Any]) -> list[PromptInfo]:
    return [
        PromptInfo(server, p.name, [a.name for a in p.arguments or []], p.description or "",
                   [a.name for a in p.arguments or [] if a.required])
        for p in prompts
    ]


class McpManager:
    """All configured servers of one session."""

    def __init__(self, configs: dict[str, ServerConfig], cwd: Path, environ: Mapping[str, str] | None = None,
                 log_dir: Path | None = None, extra_roots: list[Path] | None = None):
        environ = agent_environ() if environ is None else environ
        # MCP_TIMEOUT is Claude Code's name; MCP_CONNECT_TIMEOUT_MS stays for older configs.
        connect = timeout_from_env("MCP_CONNECT_TIMEOUT_MS", DEFAULT_CONNECT_TIMEOUT, environ)
        connect = timeout_from_env("MCP_TIMEOUT", connect, environ)
        call = timeout_from_env("MCP_CALL_TIMEOUT_MS", DEFAULT_CALL_TIMEOUT, environ)
        call = timeout_from_env("MCP_TOOL_TIMEOUT", call, environ)
        self.cwd = cwd
        # The control protocol's mcp_message, for servers of type "sdk" (set by the headless front end).
        self.sdk_send: Any = None
        self.log_dir = log_dir
        # Kept by reference: a directory added later (the REPL's /add-dir) is a root from then on.
        self.extra_roots = extra_roots if extra_roots is not None else []
        self.server_parts = server_names(configs)
        self.handlers = ClientHandlers()
        self.servers: dict[str, McpServer] = {
            name: McpServer(self, cfg, connect, call) for name, cfg in configs.items()
        }
        self.warnings: list[str] = []
        self.version = 0  # bumped on every change of what the servers offer
        self._notices: list[tuple[str, str]] = []
        self._listeners: list[Callable[[], None]] = []

    @classmethod
    async def from_project(cls, cwd: Path, environ: Mapping[str, str] | None = None,
                           log_dir: Path | None = None) -> McpManager:
        configs, warnings = load_config(cwd, environ)
        manager = cls(configs, cwd, environ, log_dir=log_dir)
        manager.warnings.extend(warnings)
        await manager.start()
        return manager

    async def start(self) -> list[str]:
        """Connect every server concurrently and wait for all; returns (and keeps) the warnings."""
        self.start_background()
        try:
            await self.wait_ready()
        except BaseException:
            await self.close()
            raise
        for kind, text in self.take_notices():
            if kind == "warning":
                self.warnings.append(text)
        return self.warnings

    def start_background(self) -> None:
        """Start every server without waiting for any (the first model request must not wait)."""
        for s in self.servers.values():
            if s._starting is None:
                s.start_background()

    async def wait_ready(self, names: list[str] | None = None, timeout: float | None = None) -> None:
        """Wait until the named servers (default: all) finished starting, at most `timeout` seconds."""
        targets = [self.servers[n] for n in (names or list(self.servers)) if n in self.servers]
        if targets:
            await asyncio.gather(*(s.wait_started(timeout) for s in targets))

    def pending(self) -> list[str]:
        return [s.name for s in self.servers.values() if s.state == "pending"]

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.servers.values()), return_exceptions=True)

    async def __aenter__(self) -> McpManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- changes ----------------------------------------------------------------------------------

    def changed(self, notice: str, server: McpServer | None = None, kind: str = "mcp") -> None:
        self.version += 1
        if notice:
            self._notices.append((kind, notice))
        trace("mcp.changed", server=server.name if server else "", version=self.version, state=server.state if server else "", error=(server.error if server else "")[:300])
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def take_notices(self) -> list[tuple[str, str]]:
        notices, self._notices = self._notices, []
        return notices

    def roots(self) -> list[Path]:
        """What servers may work on: the working directory and any added directories."""
        out: list[Path] = []
        for p in [self.cwd, *self.extra_roots]:
            if p not in out:
                out.append(p)
        return out

    # --- what the servers offer ----------------------------------------------------------------

    def connected(self) -> list[McpServer]:
        return [s for s in self.servers.values() if s.state == "connected"]

    def public_names(self) -> dict[tuple[str, str], str]:
        """(server, real tool name) -> the name the model sees, for every connected server. Servers are
        taken in sorted order so the result depends only on what is connected, not on timing."""
        taken: set[str] = set()
        out: dict[tuple[str, str], str] = {}
        for s in sorted(self.connected(), key=lambda s: s.name):
            for real, public in tool_names(self.server_parts[s.name], [t.name for t in s.tools], taken).items():
                out[(s.name, real)] = public
        return out

    def status(self) -> list[tuple[str, str, int]]:
        """(server, state, tool count) for `/mcp`; a failed state carries its reason."""
        rows = []
        for s in self.servers.values():
            state = s.state if s.state != "failed" else f"failed: {s.error}"
            rows.append((s.name, state, len(s.tools) if s.state == "connected" else 0))
        return rows

    def instructions(self) -> str:
        """The servers' `instructions`, for the system prompt: sorted by server, so the bytes are the same
        whenever the same servers are connected."""
        parts = [f"## {s.name}\n{s.instructions}" for s in sorted(self.connected(), key=lambda s: s.name)
                 if s.instructions]
        if not parts:
            return ""
        return ("# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to "
                "use their tools and resources:\n\n" + "\n\n".join(parts))

    def has_resources(self) -> bool:
        return any(s.has_resources for s in self.connected())

    def prompts(self) -> list[PromptInfo]:
        return [p for s in self.connected() for p in s.prompts]

    def templates(self) -> list[ResourceInfo]:
        return [t for s in self.connected() for t in s.templates]

    def server(self, name: str) -> McpServer:
        s = self.servers.get(name)
        if s is None:
            raise McpError(f'MCP server "{name}" not found (configured: {", ".join(self.servers) or "none"})')
        return s

    _server = server

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any],
                        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None) -> Any:
        return await self.server(server).request(
            f"tools/call {tool}", lambda session: session.call_tool(tool, arguments, progress_callback=progress)
        )

    async def list_resources(self, server: str | None = None) -> list[ResourceInfo]:
        targets = [self.server(server)] if server else [s for s in self.connected() if s.has_resources]
        out: list[ResourceInfo] = []
        for s in targets:
            if s.state == "connected" and not s.has_resources:
                raise McpError(f'MCP server "{s.name}" does not support resources')
            result = await s.request("resources/list", lambda session: _list_all(session.list_resources, "resources"))
            s.resources = [ResourceInfo(s.name, str(r.uri), r.name, r.mimeType, r.description) for r in result]
            out.extend(s.resources)
        return out

    async def read_resource_contents(self, server: str, uri: str) -> list[Any]:
        """The resource's content items (text or blob) as the server sent them."""
        from pydantic import AnyUrl, ValidationError

        s = self.server(server)
        if s.state == "connected" and not s.has_resources:
            raise McpError(f'MCP server "{server}" does not support resources')
        try:
            url = AnyUrl(uri)
        except ValidationError:
            raise McpError(f"MCP resource URI {uri!r} is not a valid URI") from None
        result = await s.request("resources/read", lambda session: session.read_resource(url))
        return list(result.contents)

    async def get_prompt_result(self, server: str, name: str, arguments: dict[str, str]) -> Any:
        s = self.server(server)
        return await s.request(f"prompts/get {name}", lambda session: session.get_prompt(name, arguments))

    async def complete_resource(self, server: str, uri_template: str, argument: str, value: str) -> list[str]:
        """Server-side completion of one template argument (empty when the server has none)."""
        from mcp.types import ResourceTemplateReference

        ref = ResourceTemplateReference(type="ref/resource", uri=uri_template)
        try:
            result = await self.server(server).request(
                "completion/complete", lambda session: session.complete(ref, {"name": argument, "value": value}),
                timeout=5.0, restart=False,
            )
        except McpError:
            return []
        return list(result.completion.values or [])
