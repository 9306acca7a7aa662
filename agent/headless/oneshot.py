"""One-shot runs (`agent -p`): one prompt, printed as Claude Code prints it, then an exit code.

- text: only the final answer on stdout (with `--verbose`, tool lines on stderr); errors on stderr.
- json: one result object (Claude Code's keys: subtype, is_error, duration_ms, duration_api_ms, num_turns,
  result, session_id, total_cost_usd, usage, modelUsage, permission_denials, uuid, ...).
- stream-json: `system`/`init`, then `assistant` / `user` (/ `stream_event`) events, then the result.
Exit codes: 0 success, 1 any error (turn limit and budget included), 130 interrupted; 141 when stdout was
closed (quietly, after the reply being received, which the transcript keeps).
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from agent.errors import set_transcript, silence_stdout
from agent.exit_codes import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from agent.headless.run import HeadlessRun, JsonOut, _install_signals, open_engine
from agent.loop.factory import ResumeError
from agent.slash.custom import CommandError, command_model, custom_command_input
from agent.slash.output_style import output_style_answer, output_style_args
from services.session import privacy_warnings

if TYPE_CHECKING:
    from services.mcp.content import Expanded


async def _run(inv: Any, body: Any = None) -> int:
    """Open the session and run `body(inv, engine, mcp)` (the one-shot run by default) in it."""
    try:
        engine, mcp = await open_engine(inv)
    except ResumeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_ERROR
    set_transcript(lambda: engine.paths.transcript)  # the guard's line says what was kept (agent/errors.py)
    for warning in privacy_warnings(inv.app.cwd):
        sys.stderr.write(f"warning: {warning}\n")
    try:
        return await (body or _run_engine)(inv, engine, mcp)
    finally:
        if mcp is not None:
            # MCP servers start in the background: what they reported after the task ended.
            for kind, text in mcp.take_notices():
                if kind == "warning":
                    sys.stderr.write(f"warning: {text}\n")
            await mcp.close()


def run_init_only(inv: Any) -> int:
    """`--init-only`: the project's Setup and SessionStart hooks run, then the process exits (no prompt, no
    request), as in Claude Code."""
    return asyncio.run(_run(inv, _init_only))


async def _init_only(inv: Any, engine: Any, mcp: Any) -> int:
    try:
        await engine.init_only()
    finally:
        engine.close()
    return EXIT_OK


async def _run_engine(inv: Any, engine: Any, mcp: Any) -> int:
    fmt = inv.output_format
    out = JsonOut()
    run = HeadlessRun(inv, engine, mcp, out if fmt == "stream-json" else None)
    inject = None
    text = inv.prompt
    if mcp is not None:  # before the init event, so that it shows servers a wait has connected
        try:
            text, inject = await _mcp_input(mcp, engine, inv.prompt)
        except Exception as exc:  # noqa: BLE001 - a bad prompt command is one line, exit 1
            engine.close()
            sys.stderr.write(f"error: {exc}\n")
            return EXIT_ERROR
    for notice in engine.notices_at_start:
        sys.stderr.write(f"notice: {notice}\n")
    style_args = output_style_args(text)
    if style_args is not None:  # a local command: answered without the model
        return _output_style(inv, engine, run, out, style_args)
    try:
        text, inject, blocks, model = await custom_command_input(engine, inv, text, inject)
    except CommandError as exc:
        engine.close()
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_ERROR
    if fmt == "stream-json":
        out(run.init_event())
    _install_signals(engine)
    try:
        with command_model(engine, model):
            terminal, result = await run.run(text, inject, blocks)
    finally:
        await engine.end_session("other")  # Claude Code's reason for a -p run
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


def _output_style(inv: Any, engine: Any, run: HeadlessRun, out: JsonOut, args: str) -> int:
    if inv.output_format == "stream-json":
        out(run.init_event())
    result = run.local_command("output-style", args, output_style_answer(engine, inv, args))
    engine.close()
    if inv.output_format == "text":
        _print_text(result["result"])
    else:
        out(result)
    return EXIT_OK


async def _mcp_input(mcp: Any, engine: Any, prompt: str) -> tuple[str, list[Any]]:
    """MCP's part of the input: client hooks; `/server:prompt args` expanded into the prompt's
    messages (no extra user text); `@server:uri` mentions read and injected before the prompt. An optional
    `MCP_STARTUP_WAIT_MS` lets the first request wait that long for servers still starting."""
    from agent.loop.mcp_hooks import make_sampling_handler
    from agent.slash.mcp import expand_prompt, parse_prompt_command
    from services.config import env_int
    from services.mcp.content import expand_mentions
    from tools.wait_mcp import NAME as WAIT_TOOL
    from tools.wait_mcp import start_bound

    def notify(text: str) -> None:
        sys.stderr.write(f"[mcp] {text}\n")
        sys.stderr.flush()

    mcp.handlers.sample = make_sampling_handler(engine, None, notify)
    # As Claude Code 2.1.332 (recorded): the first request waits for the servers to settle, at most their
    # start bound (MCP_TIMEOUT); MCP_STARTUP_WAIT_MS sets another bound (0: never wait).
    wait_ms = env_int("MCP_STARTUP_WAIT_MS", -1, minimum=0)
    await mcp.wait_ready(timeout=start_bound(mcp) if wait_ms < 0 else wait_ms / 1000)
    sync = getattr(engine.refresh_tools, "sync", None)
    if sync is not None:  # the servers' tools in the tool list now (the init event lists them)
        sync()
    if not mcp.pending():  # nothing left to wait for: WaitForMcpServers is not offered
        engine.tools[:] = [t for t in engine.tools if t.name != WAIT_TOOL]
    spill = engine.session_dir / "tool-results"
    command = parse_prompt_command(mcp, prompt)
    out: Expanded | None
    if command is not None:
        out = await expand_prompt(mcp, *command, spill_dir=spill, ask=None)
        text = ""
    else:
        out = await expand_mentions(mcp, prompt, spill) if "@" in prompt else None
        text = prompt
    for warning in out.warnings if out else []:
        sys.stderr.write(f"warning: {warning}\n")
    for notice in out.notices if out else []:
        notify(notice)
    return text, (out.messages if out else [])


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

