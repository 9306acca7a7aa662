"""One-shot runs (`agent -p`): one prompt, printed as Claude Code prints it, then an exit code.

- text: only the final answer on stdout (with `--verbose`, tool lines on stderr); errors on stderr.
- json: one result object (Claude Code's keys: subtype, is_error, duration_ms, duration_api_ms, num_turns,
  result, session_id, total_cost_usd, usage, modelUsage, permission_denials, uuid, ...).
- stream-json: `system`/`init`, then `assistant` / `user` (/ `stream_event`) events, then the result.
Exit codes: 0 success, 1 any error (turn limit and budget included), 130 interrupted; 141 when stdout was
closed (quietly, after the reply being received, which the transcript keeps; issue 21).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agent.app import ResumeError
from agent.errors import set_transcript, silence_stdout
from agent.exit_codes import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from agent.headless import HeadlessRun, JsonOut, _install_signals, open_engine
from services.session import privacy_warnings


async def _run(inv: Any) -> int:
    try:
        engine, mcp = await open_engine(inv)
    except ResumeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_ERROR
    set_transcript(lambda: engine.paths.transcript)  # the guard's line says what was kept (agent/errors.py)
    for warning in privacy_warnings(inv.app.cwd):
        sys.stderr.write(f"warning: {warning}\n")
    try:
        return await _run_engine(inv, engine, mcp)
    finally:
        if mcp is not None:
            await mcp.close()


async def _run_engine(inv: Any, engine: Any, mcp: Any) -> int:
    fmt = inv.output_format
    out = JsonOut()
    run = HeadlessRun(inv, engine, mcp, out if fmt == "stream-json" else None)
    if fmt == "stream-json":
        out(run.init_event())
    _install_signals(engine)
    inject = None
    if mcp is not None:  # @server:uri mentions are read and injected before the prompt
        inject, mention_warnings = await mcp.expand_mentions(inv.prompt)
        for warning in mention_warnings:
            sys.stderr.write(f"warning: {warning}\n")
    try:
        terminal, result = await run.run(inv.prompt, inject)
    finally:
        engine.close()
    if fmt == "json":
        out(result)
    elif fmt == "stream-json":
        out(result)
    elif result["subtype"] in ("success", "error_max_tokens"):  # a cut reply's text is still the answer
        out.closed = not _print_text(result.get("result") or "")
    if out.closed:
        return EXIT_BROKEN_PIPE  # the reader went away: quietly, as Unix tools do
    for line in result.get("errors") or []:
        if terminal.reason == "max_turns":
            line = f"{line}; raise it with --max-turns."
        elif terminal.reason == "aborted" and line.startswith("[Request interrupted"):
            line = "Interrupted"
        sys.stderr.write(("" if line == "Interrupted" else "error: ") + line + "\n")
    if terminal.reason == "aborted" and result["subtype"] != "error_max_budget_usd":
        return EXIT_INTERRUPTED
    return EXIT_OK if not result["is_error"] else EXIT_ERROR


def _print_text(text: str) -> bool:
    """False when stdout is closed."""
    try:
        sys.stdout.write(text + ("\n" if text and not text.endswith("\n") else ""))
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return False
    return True


def run_oneshot(inv: Any) -> int:
    return asyncio.run(_run(inv))

