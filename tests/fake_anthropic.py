"""A fake Anthropic Messages API on loopback, for tests of the real SDK path and the real CLI.

`FakeAnthropic` runs a `ThreadingHTTPServer` on 127.0.0.1 (port 0) in a daemon thread. Tests queue
scripted steps; each POST /v1/messages consumes one step and is logged (path, headers, parsed body).
Streams are real server-sent events, in the order the API sends them, over chunked transfer encoding:
`message_start`, `ping`, per block `content_block_start` / `content_block_delta` (text_delta or
input_json_delta, split into fragments) / `content_block_stop`, then `message_delta` (stop_reason,
usage) and `message_stop`.

Steps: `text(...)`, `reply(...)` (text and tool_use blocks), `http_error(status, ...)`,
`stream_error(...)` (an `error` event after HTTP 200), `stall(...)`, `drop(...)` (the connection is
cut mid-stream), `json_reply(...)` (a JSON body, not SSE, answering the stream request). Besides text
and tool_use, a reply can hold the rest of the protocol's blocks: `thinking_block` (thinking_delta then
signature_delta), `redacted_thinking_block`, `server_tool_block` (server_tool_use, input streamed as
input_json_delta), `whole_block` (e.g. web_search_tool_result, sent complete in content_block_start),
and text with `citations` (each a citations_delta after the text). `stop_reason=` sets any stop reason. POST /v1/messages/count_tokens answers without consuming a step.
`serve_models({...})` turns on the Models API (GET /v1/models, GET /v1/models/{id}: the listed ids, 404
`not_found_error` for any other); without it every GET is a bare 404, as from a gateway without one.
GETs are kept in `get_requests`. A request that finds
no step left is answered 500 and recorded as unexpected; `check()` (run by the fixture at teardown)
fails on unexpected requests and on unconsumed steps.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)

DEFAULT_USAGE = {
    "input_tokens": 12,
    "output_tokens": 1,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def _fragments(text: str, size: int) -> list[str]:
    if not text:
        return []
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class Block:
    kind: str  # "text" | "tool_use" | "server_tool_use" | "thinking" | "redacted_thinking" | "whole"
    text: str = ""
    id: str = ""
    name: str = ""
    raw_json: str = ""
    signature: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)  # "whole" blocks and redacted_thinking


def text_block(text: str, citations: list[dict[str, Any]] | None = None) -> Block:
    return Block("text", text=text, citations=list(citations or []))


def thinking_block(thinking: str, signature: str = "sig-fake-0001") -> Block:
    return Block("thinking", text=thinking, signature=signature)


def redacted_thinking_block(data: str) -> Block:
    return Block("redacted_thinking", payload={"type": "redacted_thinking", "data": data})


def server_tool_block(name: str, input: dict[str, Any], id: str | None = None) -> Block:
    return Block("server_tool_use", id=id or f"srvtoolu_fake_{next(_ids):04d}", name=name,
                 raw_json=json.dumps(input))


def whole_block(payload: dict[str, Any]) -> Block:
    """A block the API sends complete in content_block_start (web_search_tool_result, ...)."""
    return Block("whole", payload=payload)


def tool_block(name: str, input: dict[str, Any] | None = None, id: str | None = None, raw_json: str | None = None) -> Block:
    """A tool_use block; `raw_json` sends those exact bytes as the input (e.g. malformed JSON)."""
    return Block(
        "tool_use",
        id=id or f"toolu_fake_{next(_ids):04d}",
        name=name,
        raw_json=raw_json if raw_json is not None else json.dumps(input or {}),
    )


@dataclass
class Step:
    kind: str  # "stream" | "http_error"
    blocks: list[Block] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    output_tokens: int = 7
    stop_reason: str | None = None
    stop_details: dict[str, Any] | None = None  # sent in message_delta beside stop_reason
    fragment: int = 4
    # Faults inside a stream.
    error_type: str | None = None  # an `error` event instead of the blocks (after message_start)
    error_after_blocks: int = 0  # how many blocks to send before the error event
    stall: float = 0.0  # seconds to sleep...
    stall_after_start: bool = True  # ...after message_start (else before the response headers)
    drop_in_block: int | None = None  # cut the connection in this block, half-way through it
    clean_eof: bool = False  # at the drop point, end the body properly instead (no message_stop)
    gate: threading.Event | None = None  # wait for the test after the first text delta
    gate_timeout: float = 10.0  # then go on anyway (and set `gate_timed_out`)
    pace: float = 0.0  # seconds between events
    # HTTP errors.
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body as sent, for tests that check its encoding byte for byte

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []



class _SseOut:
    """One streamed reply written as chunked server-sent events, and the ways a step makes it end badly."""

    def __init__(self, h: BaseHTTPRequestHandler, step: Step) -> None:
        self.h = h
        self.step = step
        self.gated = False  # the step's gate is waited at once, after the first text delta

    def send(self, event: str, data: dict[str, Any]) -> None:
        payload = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
        self.h.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.h.wfile.flush()
        if self.step.pace:
            time.sleep(self.step.pace)

    def end(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()

    def cut(self, partial: bytes = b"") -> None:
        h = self.h
        if self.step.clean_eof:
            self.end()
            return
        # A chunk announced longer than what arrives, then the socket closes: a real mid-stream drop.
        if partial:
            h.wfile.write(f"{len(partial) + 64:x}\r\n".encode() + partial)
        h.wfile.flush()
        h.close_connection = True
        try:
            h.connection.shutdown(2)
        except OSError:
            pass


def _send_end(out: _SseOut, step: Step) -> None:
    """The end of the reply: an error event (overloaded), or the stop reason and message_stop."""
    if step.error_type is not None:
        out.send("error", {"type": "error", "error": {"type": step.error_type, "message": "Overloaded"}})
        out.end()
        return
    stop = step.stop_reason or ("tool_use" if any(b.kind == "tool_use" for b in step.blocks) else "end_turn")
    delta: dict[str, Any] = {"stop_reason": stop, "stop_sequence": None}
    if step.stop_details is not None:
        delta["stop_details"] = step.stop_details
    out.send("message_delta", {"type": "message_delta",
                               "delta": delta,
                               "usage": {"output_tokens": step.output_tokens}})
    out.send("message_stop", {"type": "message_stop"})
    out.end()

class FakeAnthropic:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[Recorded] = []
        self.count_tokens_requests: list[Recorded] = []
        self.get_requests: list[Recorded] = []
        self.models: dict[str, dict[str, Any]] | None = None  # id -> extra fields (max_input_tokens, ...)
        self.unexpected: list[Recorded] = []
        self.gate_timed_out = False
        # Called with each /v1/messages request before a step is taken: a Step it returns answers that
        # request instead (a reply that depends on what was sent); it may also adjust the queued steps.
        self.before: Callable[[Recorded], Step | None] | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                fake._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                fake._get(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    # -- fixture interface ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()

    def check(self) -> None:
        problems = []
        if self.unexpected:
            problems.append(f"{len(self.unexpected)} unexpected request(s) after the script ran out")
        if self.steps:
            problems.append(f"{len(self.steps)} scripted step(s) never requested: {[s.kind for s in self.steps]}")
        if problems:
            raise AssertionError("fake Anthropic server: " + "; ".join(problems))

    # -- scripting ------------------------------------------------------------------------------
    def add(self, step: Step) -> Step:
        with self._lock:
            self.steps.append(step)
        return step

    def text(self, text: str, **kw: Any) -> Step:
        return self.reply(text, **kw)

    def reply(self, *parts: str | Block, **kw: Any) -> Step:
        blocks = [text_block(p) if isinstance(p, str) else p for p in parts]
        return self.add(Step("stream", blocks=blocks, **kw))

    def http_error(self, status: int, error_type: str = "api_error", message: str = "fake error",
                   headers: dict[str, str] | None = None, body: Any = None) -> Step:
        payload = body if body is not None else {"type": "error", "error": {"type": error_type, "message": message}}
        return self.add(Step("http_error", status=status, headers=dict(headers or {}), body=payload))

    def stream_error(self, error_type: str = "overloaded_error", *parts: str | Block, **kw: Any) -> Step:
        """HTTP 200, message_start, the given blocks, then an `error` event."""
        blocks = [text_block(p) if isinstance(p, str) else p for p in parts]
        return self.add(Step("stream", blocks=blocks, error_type=error_type, error_after_blocks=len(blocks), **kw))

    def stall(self, seconds: float, after_start: bool = True, *parts: str | Block) -> Step:
        blocks = [text_block(p) if isinstance(p, str) else p for p in parts] or [text_block("late")]
        return self.add(Step("stream", blocks=blocks, stall=seconds, stall_after_start=after_start))

    def json_reply(self, message: dict[str, Any] | None = None, raw: bytes | None = None,
                   status: int = 200) -> Step:
        """Answer the streaming request with a JSON body (a gateway that ignores `stream`)."""
        return self.add(Step("json", status=status, body=raw if raw is not None else message))

    def drop(self, *parts: str | Block, in_block: int | None = None, clean_eof: bool = False) -> Step:
        """Stream the blocks and cut the connection half-way through block `in_block` (default: last).

        With `clean_eof` the HTTP body ends properly at that point (a proxy that gave up), so only the
        missing `message_stop` tells that the reply is incomplete."""
        blocks = [text_block(p) if isinstance(p, str) else p for p in parts]
        index = len(blocks) - 1 if in_block is None else in_block
        return self.add(Step("stream", blocks=blocks, drop_in_block=index, clean_eof=clean_eof))

    def serve_models(self, models: dict[str, dict[str, Any]]) -> None:
        """Answer the Models API for these ids (each with extra fields such as max_input_tokens)."""
        self.models = dict(models)

    def _model_object(self, model_id: str) -> dict[str, Any]:
        extra = (self.models or {}).get(model_id, {})
        return {"type": "model", "id": model_id, "display_name": model_id,
                "created_at": "2026-01-01T00:00:00Z", **extra}

    # -- serving --------------------------------------------------------------------------------
    def _get(self, h: BaseHTTPRequestHandler) -> None:
        rec = Recorded(h.path.split("?")[0], {k.lower(): v for k, v in h.headers.items()}, None)
        with self._lock:
            self.get_requests.append(rec)
        if self.models is None or not rec.path.startswith("/v1/models"):
            h.send_response(404)
            h.send_header("content-length", "0")
            h.end_headers()
            return
        if not self._authorized(rec.headers):
            self._json(h, 401, {"type": "error", "error": {"type": "authentication_error", "message": "missing credentials"}})
            return
        wanted = urllib.parse.unquote(rec.path[len("/v1/models"):].strip("/"))
        if not wanted:
            data = [self._model_object(m) for m in self.models]
            self._json(h, 200, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                "last_id": data[-1]["id"] if data else None})
        elif wanted in self.models:
            self._json(h, 200, self._model_object(wanted))
        else:
            self._json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {wanted}"}})

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rec = Recorded(h.path.split("?")[0], {k.lower(): v for k, v in h.headers.items()}, body, raw)
        if not self._authorized(rec.headers):
            self.requests.append(rec)
            self._json(h, 401, {"type": "error", "error": {"type": "authentication_error",
                                                           "message": "missing credentials"}})
            return
        if rec.path == "/v1/messages/count_tokens":
            self.count_tokens_requests.append(rec)
            size = len(json.dumps(body)) if body is not None else 0
            self._json(h, 200, {"input_tokens": max(1, size // 4)})
            return
        if rec.path != "/v1/messages":
            self._json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": rec.path}})
            return
        with self._lock:
            self.requests.append(rec)
            chosen = self.before(rec) if self.before is not None else None
            step = chosen if chosen is not None else (self.steps.pop(0) if self.steps else None)
        if step is None:
            self.unexpected.append(rec)
            self._json(h, 500, {"type": "error", "error": {"type": "api_error", "message": "script exhausted"}},
                       {"x-should-retry": "false"})
            return
        if step.kind == "http_error":
            self._json(h, step.status, step.body, step.headers)
            return
        if step.kind == "json":
            if isinstance(step.body, bytes):
                h.send_response(step.status)
                h.send_header("content-type", "application/json")
                h.send_header("content-length", str(len(step.body)))
                h.end_headers()
                h.wfile.write(step.body)
                h.wfile.flush()
            else:
                self._json(h, step.status, step.body)
            return
        self._stream(h, step, rec)

    @staticmethod
    def _authorized(headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        return bool(headers.get("x-api-key")) or (auth.startswith("Bearer ") and len(auth) > 7)

    @staticmethod
    def _json(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.send_header("request-id", f"req_fake_{next(_ids)}")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _sleep(self, seconds: float) -> None:
        self._closing.wait(seconds)

    def _stream(self, h: BaseHTTPRequestHandler, step: Step, rec: Recorded) -> None:
        if step.stall and not step.stall_after_start:
            self._sleep(step.stall)
            if self._closing.is_set():
                return
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("transfer-encoding", "chunked")
        h.send_header("request-id", f"req_fake_{next(_ids)}")
        h.end_headers()
        out = _SseOut(h, step)
        try:
            model = rec.body.get("model", "fake-model") if isinstance(rec.body, dict) else "fake-model"
            usage = {**DEFAULT_USAGE, **step.usage}
            start_usage = {**usage, "output_tokens": 1}
            out.send("message_start", {"type": "message_start", "message": {
                "id": f"msg_fake_{next(_ids)}", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
            out.send("ping", {"type": "ping"})
            if step.stall and step.stall_after_start:
                self._sleep(step.stall)
                if self._closing.is_set():
                    return
            for index, block in enumerate(step.blocks):
                if step.error_type is not None and index >= step.error_after_blocks:
                    break
                if not self._send_block(out, index, block):
                    return  # the stream was cut
                out.send("content_block_stop", {"type": "content_block_stop", "index": index})
                if index == 0:
                    out.send("ping", {"type": "ping"})
            _send_end(out, step)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_block(self, out: _SseOut, index: int, block: Block) -> bool:
        """One content block's events; False when the step cuts the stream inside it."""
        step = out.step
        if block.kind in ("whole", "redacted_thinking"):
            out.send("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": block.payload})
        elif block.kind == "thinking":
            out.send("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": "thinking", "thinking": "",
                                                               "signature": ""}})
            for piece in _fragments(block.text, step.fragment):
                out.send("content_block_delta", {"type": "content_block_delta", "index": index,
                                                 "delta": {"type": "thinking_delta", "thinking": piece}})
            out.send("content_block_delta", {"type": "content_block_delta", "index": index,
                                             "delta": {"type": "signature_delta", "signature": block.signature}})
        elif block.kind == "text":
            out.send("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": "text", "text": ""}})
            if not self._send_pieces(out, index, _fragments(block.text, step.fragment), "text_delta", "text"):
                return False
            for citation in block.citations:
                out.send("content_block_delta", {"type": "content_block_delta", "index": index,
                                                 "delta": {"type": "citations_delta", "citation": citation}})
        else:
            out.send("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": block.kind, "id": block.id,
                                                               "name": block.name, "input": {}}})
            pieces = _fragments(block.raw_json, step.fragment)
            if not self._send_pieces(out, index, pieces, "input_json_delta", "partial_json"):
                return False
            if step.drop_in_block == index:
                out.cut()
                return False
        return True

    def _send_pieces(self, out: _SseOut, index: int, pieces: list[str], delta_type: str, field: str) -> bool:
        """A block's deltas; the step may cut the stream halfway through, or wait at a gate after the first."""
        step = out.step
        for n, piece in enumerate(pieces):
            if step.drop_in_block == index and n >= max(1, len(pieces) // 2):
                out.cut()
                return False
            out.send("content_block_delta", {"type": "content_block_delta", "index": index,
                                             "delta": {"type": delta_type, field: piece}})
            if delta_type == "text_delta" and step.gate is not None and not out.gated:
                out.gated = True
                if not step.gate.wait(step.gate_timeout):
                    self.gate_timed_out = True
        return True
