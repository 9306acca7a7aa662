"""Failure at the edges is one line: the guard every entry point runs under.

`guard(fn)` runs a front end (the REPL, a one-shot run in any output format, a subcommand) and turns
what the machine throws at it into one line on stderr and a documented exit code, never a traceback
(unless `--debug` or AGENT_DEBUG=1):

- an OSError (ENOSPC, EACCES, EROFS, EIO...) names the path and what was kept -> EXIT_OS_ERROR (74);
- a closed stdout pipe (EPIPE) exits quietly, as Unix tools do -> EXIT_BROKEN_PIPE (141 = 128 + SIGPIPE);
- Ctrl-C outside a turn -> "Interrupted", EXIT_INTERRUPTED (130).
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from agent.exit_codes import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OS_ERROR

_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EIO: "input/output error",
}

# The transcript of the session that is running, set by the front end once it has one, so the line can
# say what was kept.
_transcript: Callable[[], Path | None] | None = None


def set_transcript(source: Callable[[], Path | None] | None) -> None:
    global _transcript
    _transcript = source


def debug_enabled(argv: list[str] | None = None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    if "--" in args:
        args = args[: args.index("--")]
    return any(a in ("-d", "--debug") or a.startswith("--debug=") for a in args) or (
        os.environ.get("AGENT_DEBUG") == "1")


def os_error_line(exc: OSError) -> str:
    """`error: cannot write <path>: <reason> (ENOSPC); <what was kept>`: one line."""
    code = errno.errorcode.get(exc.errno or 0, "")
    reason = _REASONS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    where = f" {exc.filename}" if exc.filename else ""
    transcript = None
    if _transcript is not None:
        try:
            transcript = _transcript()
        except Exception:
            transcript = None
    from services.session import TranscriptWriteError

    if isinstance(exc, TranscriptWriteError):
        try:
            written = Path(exc.filename).stat().st_size > 0
        except (OSError, TypeError):
            written = False
        kept = ("the transcript keeps every record before the failed one; resume with `agent -c` once it "
                "can be written" if written else "nothing of this session could be saved")
    elif transcript is not None and transcript.is_file():
        kept = f"the session so far is kept in {transcript}; resume with `agent -c`"
    else:
        kept = "no session was written"
    verb = "write" if isinstance(exc, TranscriptWriteError) else "access"
    return f"error: cannot {verb}{where}: {reason}{f' ({code})' if code else ''}; {kept}"


def silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so no later write or the exit-time flush complains."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def guard(fn: Callable[[], int | None], debug: bool | None = None) -> int:
    """Run an entry point; its exit code, or the documented one for a machine fault (see the module)."""
    debug = debug_enabled() if debug is None else debug
    try:
        code = fn()
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()
            return EXIT_BROKEN_PIPE
        return code or 0
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if debug:
            traceback.print_exc()
        _stderr(os_error_line(exc))
        return EXIT_OS_ERROR
    except KeyboardInterrupt:
        _stderr("Interrupted")
        return EXIT_INTERRUPTED
    except RecursionError as exc:  # hostile nesting that slipped past the limits: still one line
        if debug:
            traceback.print_exc()
        _stderr(f"error: input nested too deeply ({exc})")
        return EXIT_ERROR


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except OSError:
        pass
