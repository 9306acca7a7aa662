"""Claude Code's `statusLine` setting: a command whose output is shown under the input box.

The command runs in a shell in the project folder with a JSON description of the session on stdin (Claude
Code's fields: `hook_event_name: "Status"`, `session_id`, `transcript_path`, `cwd`, `model`, `workspace`,
`version`, `output_style`, `cost`, `exceeds_200k_tokens`); its first lines of stdout are the status line. It is
re-run when something changes (a turn ends, a reply or tool result arrives, the mode changes), at most one run
at a time (a request meanwhile is coalesced into one follow-up), in the background: a keystroke never waits.

The output is untrusted terminal text: colour and style (SGR) sequences are kept, every other escape or
control character (screen clears, cursor moves, titles, bells, bidi overrides) is dropped. A command that
fails, hangs (killed with its process group after `TIMEOUT`) or prints nothing shows nothing and is traced.
Project-scope settings only get here once the folder is trusted (services/settings.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit.formatted_text import ANSI, to_formatted_text

from agent.output_style import style_name
from agent.repl.live_area import merge_fragments
from agent.repl.permission_menu import ESCAPE_SEQUENCE
from services.trace import trace

TIMEOUT = 5.0  # seconds a status command may take
MAX_OUTPUT = 4096  # bytes of stdout read; the rest is dropped
MAX_LINES = 3
MIN_INTERVAL = 0.3  # seconds between two runs (Claude Code: at most every 300 ms)

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_BIDI = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"))


def sanitize(raw: str, width: int = 200) -> list[tuple[str, str]]:
    """Terminal text -> prompt-toolkit fragments: SGR styles kept, anything else that could act dropped,
    at most MAX_LINES lines of at most `width` cells."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n")[:MAX_LINES]:
        kept: list[str] = []
        pos = 0
        for m in ESCAPE_SEQUENCE.finditer(line):
            kept.append(line[pos:m.start()])
            if _SGR.fullmatch(m.group(0)):
                kept.append(m.group(0))
            pos = m.end()
        kept.append(line[pos:])
        text = "".join(kept).translate(_BIDI)
        text = "".join(ch for ch in text if ch == "\x1b" or (ord(ch) >= 0x20 and not 0x7F <= ord(ch) < 0xA0))
        lines.append(text)
    while lines and not _SGR.sub("", lines[-1]).strip():
        lines.pop()
    out: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        cells = 0
        for style, text, *_ in to_formatted_text(ANSI(line)):
            room = width - cells
            if room <= 0:
                break
            out.append((style, text[:room]))
            cells += min(len(text), room)
        if i < len(lines) - 1:
            out.append(("", "\n"))
    return merge_fragments(out)


class StatusLine:
    def __init__(self, command: str, cwd: Path, padding: int = 0, on_change: Callable[[], None] | None = None,
                 width: Callable[[], int] | None = None):
        self.command = command
        self.cwd = cwd
        self.padding = padding
        self.on_change = on_change or (lambda: None)
        self.width = width or (lambda: 200)
        self.fragments: list[tuple[str, str]] = []
        self.runs = 0
        self._pending: dict[str, Any] | None = None
        self._task: asyncio.Task | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._last_start = 0.0

    def request(self, payload: dict[str, Any]) -> None:
        """Ask for a refresh with this payload; returns at once (the run happens in the background)."""
        self._pending = payload
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending is not None:
            wait = self._last_start + MIN_INTERVAL - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            payload, self._pending = self._pending, None
            self._last_start = loop.time()
            await self.refresh(payload)

    async def refresh(self, payload: dict[str, Any]) -> None:
        """Run the command once with `payload` on stdin and keep what it printed (nothing if it failed)."""
        self.runs += 1
        raw = await self._run(json.dumps(payload).encode())
        fragments = sanitize(raw, max(10, self.width() - self.padding)) if raw is not None else []
        if self.padding and fragments:
            fragments.insert(0, ("", " " * self.padding))
        if fragments != self.fragments:
            self.fragments = fragments
            self.on_change()

    async def _run(self, data: bytes) -> str | None:
        try:
            from services.credentials import child_env

            proc = await asyncio.create_subprocess_shell(  # the agent's secrets never reach the command
                self.command, cwd=str(self.cwd), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, start_new_session=True, env=child_env())
        except OSError as exc:
            trace("statusline.error", error=str(exc)[:200])
            return None
        self._proc = proc
        try:
            out = await asyncio.wait_for(self._talk(proc, data), TIMEOUT)
        except TimeoutError:
            trace("statusline.timeout", seconds=TIMEOUT)
            self._kill(proc)
            return None
        except BaseException:
            self._kill(proc)
            raise
        finally:
            self._proc = None
        if proc.returncode != 0:
            trace("statusline.failed", code=proc.returncode)
            return None
        return out.decode("utf-8", errors="replace")

    @staticmethod
    async def _talk(proc: asyncio.subprocess.Process, data: bytes) -> bytes:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a command that does not read its stdin
        proc.stdin.close()
        out = b""
        while chunk := await proc.stdout.read(65536):  # to the end: past the cap, read and dropped
            if len(out) < MAX_OUTPUT:
                out += chunk[:MAX_OUTPUT - len(out)]
        await proc.wait()
        return out

    @staticmethod
    def _kill(proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        """At exit: stop a running command and forget the pending refresh."""
        self._pending = None
        if self._proc is not None:
            self._kill(self._proc)
        if self._task is not None and not self._task.done():
            self._task.cancel()


def status_payload(engine: Any, cwd: Path, cost_usd: float, context_tokens: int, version: str,
                   started: float, api_ms: int = 0) -> dict[str, Any]:
    """What Claude Code gives a status line command on stdin."""
    import time

    from services.models import lookup

    model = engine.config.model
    known = lookup(model)
    return {
        "hook_event_name": "Status",
        "session_id": engine.session_id,
        "transcript_path": str(engine.paths.transcript),
        "cwd": str(cwd),
        "model": {"id": model, "display_name": known.display_name if known and known.display_name else model},
        "workspace": {"current_dir": str(cwd), "project_dir": str(cwd)},
        "version": version,
        "output_style": {"name": style_name(engine)},
        "permission_mode": engine.gate.mode,
        "cost": {"total_cost_usd": round(cost_usd, 6), "total_duration_ms": int((time.time() - started) * 1000),
                 "total_api_duration_ms": api_ms, "total_lines_added": 0, "total_lines_removed": 0},
        "exceeds_200k_tokens": context_tokens > 200_000,
    }
