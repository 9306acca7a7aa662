"""Connections to the configured MCP servers, through the official `mcp` SDK.

Each server lives in one long-lived asyncio task that enters the transport and the `ClientSession` and
later exits them (anyio's task groups must be entered and exited by the same task). Requests are sent
from the caller's task on the live session, raced against the server task ending and a per-request
timeout, so a dead or hung server turns into an error rather than a hang (over HTTP a liveness ping every
few seconds makes a dead server's transport fail, which the SDK alone does not notice). All servers connect
concurrently; one that fails or is slow is reported once and skipped. `close()` stops every server task,
which closes the sessions and terminates stdio server processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import agent_environ
from services.credentials import is_secret
from services.mcp.config import ServerConfig, load_config
from services.messages import Message, user_message

CLIENT_NAME = "react-agent"
CLIENT_VERSION = "0.1.0"
DEFAULT_CONNECT_TIMEOUT = 15.0
DEFAULT_CALL_TIMEOUT = 30.0
HTTP_PROBE_INTERVAL = 2.0  # seconds between liveness pings while an HTTP request is pending
MAX_MENTION_CHARS = 100_000
_CLOSE_GRACE = 5.0

_MENTION = re.compile(r"(?:^|(?<=\s))@([^\s:]+:[^\s]+)\b")
_NORM = re.compile(r"[.\s]")


def normalize(name: str) -> str:
    """`.` and whitespace become `_` (public tool names must match ^[a-zA-Z0-9_-]+$)."""
    return _NORM.sub("_", name)


def public_tool_name(server: str, tool: str) -> str:
    return f"mcp__{normalize(server)}__{normalize(tool)}"


def _timeout_from_env(var: str, default: float, environ: Mapping[str, str]) -> float:
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


def _describe(exc: BaseException) -> str:
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
    server: str
    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None


class McpServer:
    """One configured server: its background task, its session and what it offers."""

    def __init__(self, config: ServerConfig, cwd: Path, connect_timeout: float, call_timeout: float):
        self.config = config
        self.name = config.name
        self.cwd = cwd
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.state = "pending"  # pending | connected | failed | closed
        self.error = ""
        self.tools: list[Any] = []
        self.prompts: list[PromptInfo] = []
        self.resources: list[ResourceInfo] = []
        self.has_resources = False
        self.warnings: list[str] = []
        self.session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._errlog: Any = None

    # --- lifecycle -----------------------------------------------------------------------------

    def _transport(self) -> Any:
        if self.config.transport == "http":
            from mcp.client.streamable_http import streamablehttp_client

            return streamablehttp_client(self.config.url, headers=self.config.headers or None,
                                         timeout=self.connect_timeout)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.config.command, args=self.config.args, env=self._env(), cwd=str(self.cwd)
        )
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        return stdio_client(params, errlog=self._errlog)

    def _env(self) -> dict[str, str] | None:
        """The server's configured env, secrets removed (the SDK adds a small safe base: PATH, HOME...)."""
        env = {k: v for k, v in self.config.env.items() if not is_secret(k)}
        return env or None

    def stderr_tail(self, lines: int = 3) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()[-4000:]
        except (OSError, ValueError):
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())

    async def _run(self) -> None:
        try:
            from mcp import ClientSession
            from mcp.types import Implementation

            async with contextlib.AsyncExitStack() as stack:
                read, write, *_ = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=Implementation(name=CLIENT_NAME, version=CLIENT_VERSION))
                )
                init = await session.initialize()
                caps = init.capabilities
                self.tools = await self._list_all(session.list_tools, "tools") if caps.tools is not None else []
                if caps.prompts is not None:
                    try:
                        prompts = await self._list_all(session.list_prompts, "prompts")
                        self.prompts = [
                            PromptInfo(self.name, p.name, [a.name for a in p.arguments or []], p.description or "",
                                       [a.name for a in p.arguments or [] if a.required])
                            for p in prompts
                        ]
                    except Exception as exc:  # noqa: BLE001 - a listing failure only warns
                        self.warnings.append(f'MCP server "{self.name}": listing prompts failed: {_describe(exc)}')
                if caps.resources is not None:
                    self.has_resources = True
                    try:
                        resources = await self._list_all(session.list_resources, "resources")
                        self.resources = [
                            ResourceInfo(self.name, str(r.uri), r.name, r.mimeType, r.description) for r in resources
                        ]
                    except Exception as exc:  # noqa: BLE001
                        self.warnings.append(f'MCP server "{self.name}": listing resources failed: {_describe(exc)}')
                self.session = session
                self.state = "connected"
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(McpError(_describe(exc)))
            if self.state == "connected":
                self.state, self.error = "failed", f"disconnected: {_describe(exc)}"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.session = None
            if self.state in ("connected", "pending"):
                self.state = "closed"
            self._ended.set()
            if self._errlog is not None and self.state == "closed":
                with contextlib.suppress(OSError):
                    self._errlog.close()

    @staticmethod
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

    async def start(self) -> None:
        """Connect and list within the connect timeout; on failure state is "failed" and error says why."""
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.connect_timeout)
        except TimeoutError:
            self.state, self.error = "failed", f"timed out after {self.connect_timeout:g} s connecting and listing tools"
            await self._cancel()
        except McpError as exc:
            self.state, self.error = "failed", str(exc)
            await self._cancel()
        except asyncio.CancelledError:
            await self._cancel()
            raise
        if self._ready.done() and not self._ready.cancelled():
            self._ready.exception()  # retrieved: the failure is reported through state and error
        if self.state == "failed":
            tail = self.stderr_tail()
            if tail and tail not in self.error:
                self.error += f" (server stderr: {tail})"
            if self._errlog is not None:
                with contextlib.suppress(OSError):
                    self._errlog.close()

    async def _cancel(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, _CLOSE_GRACE)

    async def close(self) -> None:
        task = self._task
        if task is None or task.done():
            if self.state == "connected":
                self.state = "closed"
            return
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_GRACE)
        except BaseException:  # noqa: BLE001 - a stuck close falls back to cancelling
            await self._cancel()
        if self.state == "connected":
            self.state = "closed"

    # --- requests ------------------------------------------------------------------------------

    async def request(self, what: str, fn: Callable[[Any], Awaitable[Any]], timeout: float | None = None) -> Any:
        """Run `fn(session)` bounded by the timeout and by the server task ending."""
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
                message = _describe(exc)
                if "connection closed" in message.lower():
                    self.state, self.error = "failed", "disconnected: connection closed"
                    tail = self.stderr_tail()
                    if tail:
                        message += f" (server stderr: {tail})"
                raise McpError(f'MCP {what} failed ({self.name}): {message}') from None
        call.cancel()
        if ended in done:
            raise McpError(f'MCP {what} failed ({self.name}): server disconnected ({self.error or "closed"})')
        raise McpError(f"MCP {what} timed out after {timeout:g} s ({self.name})")


async def _quiet_ping(session: Any, timeout: float) -> None:
    """A liveness probe: its outcome does not matter, only that a dead server's transport fails on it."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(session.send_ping(), timeout)


class McpManager:
    """All configured servers of one session."""

    def __init__(self, configs: dict[str, ServerConfig], cwd: Path, environ: Mapping[str, str] | None = None):
        environ = agent_environ() if environ is None else environ
        connect = _timeout_from_env("MCP_CONNECT_TIMEOUT_MS", DEFAULT_CONNECT_TIMEOUT, environ)
        call = _timeout_from_env("MCP_CALL_TIMEOUT_MS", DEFAULT_CALL_TIMEOUT, environ)
        self.servers: dict[str, McpServer] = {
            name: McpServer(cfg, cwd, connect, call) for name, cfg in configs.items()
        }
        self.warnings: list[str] = []

    @classmethod
    async def from_project(cls, cwd: Path, environ: Mapping[str, str] | None = None) -> McpManager:
        configs, warnings = load_config(cwd, environ)
        manager = cls(configs, cwd, environ)
        manager.warnings.extend(warnings)
        await manager.start()
        return manager

    async def start(self) -> list[str]:
        """Connect every server concurrently; returns (and keeps) the warnings, each reported once."""
        try:
            await asyncio.gather(*(s.start() for s in self.servers.values()))
        except BaseException:
            await self.close()
            raise
        for s in self.servers.values():
            if s.state == "failed":
                self.warnings.append(f'MCP server "{s.name}" failed to connect, skipped: {s.error}')
            self.warnings.extend(s.warnings)
        return self.warnings

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.servers.values()), return_exceptions=True)

    async def __aenter__(self) -> McpManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- what the servers offer ----------------------------------------------------------------

    def connected(self) -> list[McpServer]:
        return [s for s in self.servers.values() if s.state == "connected"]

    def status(self) -> list[tuple[str, str, int]]:
        """(server, state, tool count) for `/mcp`; a failed state carries its reason."""
        rows = []
        for s in self.servers.values():
            state = s.state if s.state != "failed" else f"failed: {s.error}"
            rows.append((s.name, state, len(s.tools) if s.state == "connected" else 0))
        return rows

    def has_resources(self) -> bool:
        return any(s.has_resources for s in self.connected())

    def prompts(self) -> list[PromptInfo]:
        return [p for s in self.connected() for p in s.prompts]

    def _server(self, name: str) -> McpServer:
        s = self.servers.get(name)
        if s is None:
            raise McpError(f'MCP server "{name}" not found (configured: {", ".join(self.servers) or "none"})')
        return s

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        return await self._server(server).request(
            f"tools/call {tool}", lambda session: session.call_tool(tool, arguments)
        )

    async def list_resources(self, server: str | None = None) -> list[ResourceInfo]:
        targets = [self._server(server)] if server else [s for s in self.connected() if s.has_resources]
        out: list[ResourceInfo] = []
        for s in targets:
            if s.state == "connected" and not s.has_resources:
                raise McpError(f'MCP server "{s.name}" does not support resources')
            result = await s.request("resources/list", lambda session: McpServer._list_all(session.list_resources, "resources"))
            s.resources = [ResourceInfo(s.name, str(r.uri), r.name, r.mimeType, r.description) for r in result]
            out.extend(s.resources)
        return out

    async def read_resource(self, server: str, uri: str) -> str:
        """The resource's contents as text (binary parts become a placeholder)."""
        from pydantic import AnyUrl

        s = self._server(server)
        if s.state == "connected" and not s.has_resources:
            raise McpError(f'MCP server "{server}" does not support resources')
        result = await s.request("resources/read", lambda session: session.read_resource(AnyUrl(uri)))
        parts = []
        for c in result.contents:
            text = getattr(c, "text", None)
            if isinstance(text, str):
                parts.append(text)
            else:
                size = len(getattr(c, "blob", "") or "") * 3 // 4
                parts.append(f"[binary resource: {c.uri}, {c.mimeType or 'unknown type'}, about {size} bytes]")
        return "\n".join(parts)

    async def get_prompt(self, server: str, name: str, args: str | list[str] | dict[str, str] | None = None) -> list[Message]:
        """The prompt's messages as user messages. `args` as a line or word list is zipped to the prompt's
        argument names in order (missing ones are "", extra words are dropped)."""
        s = self._server(server)
        info = next((p for p in s.prompts if p.name == name), None)
        if isinstance(args, dict):
            arguments = {k: str(v) for k, v in args.items()}
        else:
            words = args.split() if isinstance(args, str) else list(args or [])
            names = info.arg_names if info else []
            arguments = {n: (words[i] if i < len(words) else "") for i, n in enumerate(names)}
        result = await s.request(f"prompts/get {name}", lambda session: session.get_prompt(name, arguments))
        messages: list[Message] = []
        for m in result.messages:
            text = _prompt_content_text(m.content)
            if text:
                messages.append(user_message(text, meta={"mcp_prompt": f"{server}:{name}"}))
        return messages

    # --- @server:uri mentions -------------------------------------------------------------------

    async def expand_mentions(self, text: str) -> tuple[list[Message], list[str]]:
        """Messages to inject before the user's text, one per `@server:uri` mention, and warnings."""
        messages: list[Message] = []
        warnings: list[str] = []
        for server, uri in extract_mentions(text):
            s = self.servers.get(server)
            if s is None or s.state != "connected" or not s.has_resources:
                warnings.append(f"MCP resource @{server}:{uri} cannot be read: server not connected or has no resources")
                continue
            try:
                body = await self.read_resource(server, uri)
            except McpError as exc:
                warnings.append(f"reading MCP resource {server}:{uri} failed: {exc}")
                continue
            if len(body) > MAX_MENTION_CHARS:
                body = body[:MAX_MENTION_CHARS] + (
                    f"\n\n[truncated: showing {MAX_MENTION_CHARS} of {len(body)} characters; "
                    f"ReadMcpResource reads it in full]"
                )
            messages.append(
                user_message(
                    f"The following material comes from an MCP resource the user referenced:\n"
                    f"server={server} uri={uri}\n\n{body}",
                    meta={"mcp_resource": f"{server}:{uri}"},
                )
            )
        return messages, warnings


def extract_mentions(text: str) -> list[tuple[str, str]]:
    """`@server:uri` mentions (at the start or after whitespace), split at the first `:`, deduplicated."""
    out: list[tuple[str, str]] = []
    for m in _MENTION.finditer(text):
        server, _, uri = m.group(1).partition(":")
        if server and uri and (server, uri) not in out:
            out.append((server, uri))
    return out


def _prompt_content_text(content: Any) -> str:
    kind = getattr(content, "type", "")
    if kind == "text":
        return content.text
    if kind == "image":
        return f"[image: {content.mimeType}]"
    if kind == "audio":
        return f"[audio: {content.mimeType}]"
    if kind == "resource":
        res = content.resource
        return getattr(res, "text", None) or f"[resource: {res.uri}]"
    if kind == "resource_link":
        return f"[resource: {content.uri}]"
    return ""
