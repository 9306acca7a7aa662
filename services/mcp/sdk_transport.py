"""An MCP transport to a server that lives inside the SDK host (`{"type": "sdk"}` in `--mcp-config`).

The Claude Agent SDK runs such servers in its own process; the agent reaches them through the control
protocol: each JSON-RPC message goes out as a `mcp_message` control request (`server_name`, `message`) and
the host answers with `{"mcp_response": <JSON-RPC>}`. This module turns that into the pair of streams the
`mcp` package's `ClientSession` reads and writes, so an SDK server is one more transport of the manager.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

# (server name, JSON-RPC message) -> the host's JSON-RPC answer
SdkSend = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@contextlib.asynccontextmanager
async def sdk_transport(server: str, send: SdkSend) -> AsyncIterator[tuple[Any, Any]]:
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCMessage

    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](16)

    async def relay(outgoing: SessionMessage) -> None:
        message = outgoing.message.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            answer = await send(server, message)
        except Exception as exc:  # the host went away: this request fails, the session reports it
            if "id" in message:
                answer = {"jsonrpc": "2.0", "id": message["id"],
                          "error": {"code": -32603, "message": f"SDK MCP server {server}: {exc}"}}
            else:
                return
        # A notification's ack carries no id: nothing for the session to read.
        if not isinstance(answer, dict) or ("id" not in answer and "method" not in answer):
            return
        try:
            parsed = JSONRPCMessage.model_validate(answer)
        except Exception as exc:
            await to_session.send(exc)
            return
        await to_session.send(SessionMessage(parsed))

    async def pump() -> None:
        async with anyio.create_task_group() as tg:
            async for outgoing in from_session:
                tg.start_soon(relay, outgoing)  # requests may overlap, as they do over stdio

    async with anyio.create_task_group() as tg, to_session, from_session:
        tg.start_soon(pump)
        try:
            yield session_reads, session_writes
        finally:
            tg.cancel_scope.cancel()
