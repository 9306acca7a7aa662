"""One-shot runs: one conversation, printed as text, json or stream-json, then an exit code."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import traceback
from typing import Any

from agent.app import AppOptions, ResumeError, build_engine, load_resume_target, start_mcp
from agent.errors import EXIT_BROKEN_PIPE, set_transcript, silence_stdout
from services.events import (
    AssistantEvent,
    NoticeEvent,
    Terminal,
    TextDeltaEvent,
    ToolEndEvent,
    ToolResultsEvent,
    ToolStartEvent,
    UserMessageEvent,
)
from services.messages import message_text
from services.session import SessionLocked, privacy_warnings

EXIT_CODES = {"completed": 0, "error": 1, "max_turns": 3, "aborted": 130}
SUBTYPES = {
    "completed": "success",
    "max_turns": "error_max_turns",
    "error": "error_during_execution",
    "aborted": "error_interrupted",
}


class _Stdout:
    """stdout that survives its reader going away: after EPIPE it is closed for good (issue 21), the run
    stops after the reply it is receiving (kept in the transcript) and the process exits quietly."""

    closed = False

    @classmethod
    def write(cls, text: str) -> None:
        if cls.closed:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            cls.closed = True
            silence_stdout()


def _json_line(obj: dict[str, Any]) -> None:
    _Stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


class OneShotPrinter:
    def __init__(self, fmt: str):
        self.fmt = fmt
        self.streamed_any = False
        self.last_text = ""

    def event(self, ev: Any) -> None:
        if isinstance(ev, AssistantEvent):
            text = message_text(ev.message)
            if text:
                self.last_text = text
        if self.fmt == "stream-json":
            self._stream_json(ev)
        elif self.fmt == "text":
            self._text(ev)

    def _text(self, ev: Any) -> None:
        if isinstance(ev, TextDeltaEvent):
            _Stdout.write(ev.text)
            self.streamed_any = True
        elif isinstance(ev, AssistantEvent):
            if self.streamed_any:
                _Stdout.write("\n")
            elif message_text(ev.message):
                _Stdout.write(message_text(ev.message) + "\n")
            self.streamed_any = False
        elif isinstance(ev, ToolStartEvent):
            sys.stderr.write(f"[tool] {_label(ev.name, ev.input)}\n")
        elif isinstance(ev, ToolEndEvent) and not ev.ok:
            sys.stderr.write(f"[tool] {ev.name} error: {ev.error or ev.summary}\n")
        elif isinstance(ev, NoticeEvent):
            if ev.kind == "retry" and self.streamed_any:
                # The failed attempt's text is already out: the retried answer starts on a new line.
                _Stdout.write("\n")
                self.streamed_any = False
            sys.stderr.write(f"[{ev.kind}] {ev.text}\n")
        sys.stderr.flush()

    def _stream_json(self, ev: Any) -> None:
        if isinstance(ev, TextDeltaEvent):
            _json_line({"type": "text_delta", "text": ev.text})
        elif isinstance(ev, AssistantEvent):
            _json_line({"type": "assistant", "message": ev.message})
        elif isinstance(ev, ToolResultsEvent):
            _json_line({"type": "user", "message": ev.message})
            for m in ev.extra_messages:
                _json_line({"type": "user", "message": m})
        elif isinstance(ev, UserMessageEvent):
            _json_line({"type": "user", "message": ev.message})
        elif isinstance(ev, ToolStartEvent):
            _json_line({"type": "tool_start", "id": ev.id, "name": ev.name, "input": ev.input})
        elif isinstance(ev, ToolEndEvent):
            _json_line(
                {"type": "tool_end", "id": ev.id, "name": ev.name, "ok": ev.ok, "summary": ev.summary,
                 "duration_ms": round(ev.duration * 1000), "error": ev.error}
            )
        elif isinstance(ev, NoticeEvent):
            _json_line({"type": "notice", "kind": ev.kind, "text": ev.text})


def _label(name: str, input: dict[str, Any]) -> str:
    for key in ("file_path", "path", "pattern", "command", "url", "query", "skill", "description", "message"):
        value = input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {value if len(value) <= 80 else value[:79] + '…'}"
    return name


def result_object(terminal: Terminal, engine: Any, result: str) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": SUBTYPES[terminal.reason],
        "is_error": terminal.reason != "completed",
        "num_turns": terminal.turns,
        "result": result if terminal.reason == "completed" else (terminal.error or result),
        "session_id": engine.session_id,
        "total_cost_usd": round(engine.usage.cost(engine.config.model), 6),
        "usage": engine.usage.as_dict(),
    }


async def _run(opts: AppOptions, prompt: str, fmt: str, continue_: bool, resume: str | None) -> int:
    try:
        loaded = load_resume_target(opts.cwd, continue_, resume)
    except ResumeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    # MCP (issue 8): servers connect before the engine is built and are closed on every way out.
    mcp = await start_mcp(opts.cwd)
    try:
        return await _run_engine(opts, prompt, fmt, loaded, mcp)
    finally:
        if mcp is not None:
            await mcp.close()


async def _run_engine(opts: AppOptions, prompt: str, fmt: str, loaded: Any, mcp: Any) -> int:
    engine = build_engine(opts, mcp=mcp)
    set_transcript(lambda: engine.paths.transcript)
    for warning in privacy_warnings(opts.cwd):
        sys.stderr.write(f"warning: {warning}\n")
    if loaded is not None:
        for warning in loaded.warnings:
            sys.stderr.write(f"warning: {warning}\n")
        try:
            engine.resume(loaded, fork=opts.fork_session)
        except SessionLocked as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
    printer = OneShotPrinter(fmt)
    if fmt == "stream-json":
        _json_line(
            {"type": "system", "subtype": "init", "session_id": engine.session_id, "model": engine.config.model,
             "cwd": str(opts.cwd), "tools": [t.name for t in engine.tools], "permission_mode": opts.permission_mode}
        )
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_sigint() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1 or not engine.abort():
            raise SystemExit(130)

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):
        pass
    crashed: Terminal | None = None
    inject = None
    if mcp is not None:  # @server:uri mentions are read and injected before the prompt
        inject, mention_warnings = await mcp.expand_mentions(prompt)
        for warning in mention_warnings:
            sys.stderr.write(f"warning: {warning}\n")
    try:
        async for ev in engine.run_turn(prompt, inject_before=inject or None):
            printer.event(ev)
            if _Stdout.closed and isinstance(ev, AssistantEvent):
                engine.abort()  # nobody reads on: the reply is kept, nothing more is run
    except OSError:
        raise  # the entry-point guard says what failed and what was kept (agent/errors.py)
    except Exception as exc:  # a bug in a stage must still end with one line and exit 1, not a traceback
        if os.environ.get("TRACE") == "1":
            traceback.print_exc()
        crashed = Terminal("error", 0, f"internal error: {type(exc).__name__}: {exc}")
    finally:
        engine.close()
    terminal = crashed or engine.last_terminal or Terminal("error", 0, "no result")
    if _Stdout.closed:
        return EXIT_BROKEN_PIPE  # quietly, as Unix tools do
    if fmt in ("json", "stream-json"):
        obj = result_object(terminal, engine, printer.last_text)
        if fmt == "json":
            _Stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        else:
            _json_line(obj)
    if terminal.reason == "error":
        sys.stderr.write(f"error: {terminal.error}\n")
    elif terminal.reason == "max_turns":
        sys.stderr.write(f"Stopped: reached the turn limit ({opts.settings.max_turns}); raise it with --max-turns.\n")
    elif terminal.reason == "aborted":
        sys.stderr.write("Interrupted\n" if not terminal.error else f"Stopped: {terminal.error}\n")
    _Stdout.write("")
    return EXIT_BROKEN_PIPE if _Stdout.closed else EXIT_CODES[terminal.reason]


def run_oneshot(opts: AppOptions, prompt: str, fmt: str, continue_: bool = False, resume: str | None = None) -> int:
    return asyncio.run(_run(opts, prompt, fmt, continue_, resume))
