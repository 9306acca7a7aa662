"""Sessions on disk: an append-only JSONL transcript per session, with a contract.

Layout under the agent home: `projects/<slug>/<session-id>.jsonl`, the session's own directory
`projects/<slug>/<session-id>/` (spill files live in its `tool-results/`), its lock file
`<session-id>.lock` and the project's `sessions.index`. Records: `session` (header with the format
version), `message`, `decision` (stage 1/2 replacement decisions), `history_replaced` (an autocompact
write-back), `repair` (what a load had to fix) and others that later features add.

The contract:
- each record is one `write` of a complete line on an O_APPEND descriptor; a failed or short write is
  truncated away at once, so a full disk never leaves half a line; message records are fsynced (the
  turn boundaries);
- a torn last line (a crash mid-write) is reported on load and cut off before the next append, so it is
  never merged with it; a line damaged by an older version (torn + merged) gives back its record;
- a load repairs the history in both directions (`services.messages.normalize_history`) and the resumed
  session records each repair once (a `repair` record), so later loads are quiet;
- one process at a time writes a session: an advisory `flock` on the lock file, which names its pid;
- directories are 0700 and files 0600 whatever the umask; a transcript owned by another user is refused;
- `sessions.index` (append-only, one small line per session start and task) lists sessions without
  reading or stat-ing every transcript.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import agent_home, project_dir
from services.messages import Message, normalize_history
from services.private_fs import ensure_private_dir  # noqa: F401 - re-exported
from services.transcript_check import check_message

FORMAT_VERSION = 1
INDEX_NAME = "sessions.index"
# The index is rewritten (compacted) when it holds this many more lines than sessions.
INDEX_SLACK = 2000

# `-r`/`--resume` with no id opens the session picker (in the REPL); the command line puts this sentinel
# where the id would be, and the REPL reads it.
PICK_SESSION = "@pick"


class TranscriptError(Exception):
    pass


class SessionLocked(TranscriptError):
    """Another live process holds the session's lock."""

    def __init__(self, session_id: str, pid: str):
        self.session_id, self.pid = session_id, pid
        super().__init__(
            f"session {session_id} is in use by another agent process (pid {pid or 'unknown'}); "
            "wait for it to finish, or pass --fork-session to continue it as a new session"
        )


class TranscriptWriteError(OSError):
    """Writing the transcript failed (disk full, read-only...). Everything before this record is on disk."""


def new_session_id() -> str:
    """A UUID, as Claude Code's session ids are (scripts and SDK clients pass them back)."""
    return str(uuid.uuid4())


# -- private by default --------------------------------------------------------------------------


def privacy_warnings(cwd: Path) -> list[str]:
    """One line per agent directory that someone else owns, or that other users can open (projects/ and
    this project's, which hold transcripts and spilled output) or write (the home, which may be a directory
    the user chose): a transcript planted there would be resumed by `agent -c`."""
    out: list[str] = []
    home = agent_home()
    for d, mask in ((home, 0o022), (home / "projects", 0o077), (project_dir(cwd), 0o077)):
        try:
            st = d.stat()
        except OSError:
            continue
        if st.st_uid != os.getuid():
            out.append(f"{d} is owned by uid {st.st_uid}, not you (uid {os.getuid()}); do not trust its sessions")
        elif st.st_mode & mask:
            out.append(f"{d} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}); run: chmod 700 {d}")
    return out


# -- paths, lock, index ---------------------------------------------------------------------------


@dataclass
class SessionPaths:
    transcript: Path
    directory: Path

    @property
    def lock(self) -> Path:
        return self.transcript.with_suffix(".lock")

    @classmethod
    def for_session(cls, cwd: Path, session_id: str) -> SessionPaths:
        base = project_dir(cwd)
        return cls(base / f"{session_id}.jsonl", base / session_id)


class SessionLock:
    """An advisory exclusive `flock` held while this process writes the session; the kernel drops it
    when the process dies (kill -9 included), so a stale lock file never blocks anyone."""

    def __init__(self, path: Path, session_id: str):
        self.path, self.session_id = path, session_id
        self.fd: int | None = None

    def acquire(self) -> None:
        if self.fd is not None:
            return
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                pid = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
            raise SessionLocked(self.session_id, pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def index_path(base: Path) -> Path:
    return base / INDEX_NAME


def _index_append(base: Path, entry: dict[str, Any]) -> None:
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(index_path(base), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)  # one small O_APPEND write: whole or not at all between our processes
    finally:
        os.close(fd)


def touch_index(transcript: Path, title: str | None = None) -> None:
    """Record that the session was used now (best effort: the index is a cache of the directory)."""
    entry: dict[str, Any] = {"id": transcript.stem, "t": time.time()}
    if title:
        entry["title"] = title.strip().splitlines()[0][:80] if title.strip() else ""
    try:
        _index_append(transcript.parent, entry)
    except OSError:
        pass


def read_index(base: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """id -> {"t", "title"} folded over the index, and its number of lines."""
    entries: dict[str, dict[str, Any]] = {}
    lines = 0
    try:
        data = index_path(base).read_bytes()
    except OSError:
        return entries, 0
    for raw in data.split(b"\n"):
        if not raw:
            continue
        lines += 1
        try:
            e = json.loads(raw)
            sid, t = e["id"], float(e["t"])
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
        if not isinstance(sid, str):
            continue
        cur = entries.setdefault(sid, {"t": t})
        cur["t"] = max(cur["t"], t)
        if isinstance(e.get("title"), str):
            cur.setdefault("title", e["title"])
    return entries, lines


def _compact_index(base: Path, entries: dict[str, dict[str, Any]]) -> None:
    tmp = base / f".{INDEX_NAME}.{os.getpid()}.tmp"
    body = "".join(
        json.dumps({"id": sid, **e}, ensure_ascii=False, separators=(",", ":")) + "\n" for sid, e in entries.items()
    )
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, index_path(base))
    except OSError:
        tmp.unlink(missing_ok=True)


def session_entries(cwd: Path) -> list[tuple[str, dict[str, Any]]]:
    """This project's sessions, newest first, from the index; transcripts it does not know yet (written by
    an older version, or the index was lost) are added from one `stat` each, once."""
    base = project_dir(cwd)
    try:
        names = {e.name[:-6] for e in os.scandir(base) if e.name.endswith(".jsonl")}
    except OSError:
        return []
    entries, lines = read_index(base)
    missing = names - entries.keys()
    for sid in missing:
        try:
            st = (base / f"{sid}.jsonl").stat()
        except OSError:
            continue
        entries[sid] = {"t": st.st_mtime}
        try:
            _index_append(base, {"id": sid, "t": st.st_mtime})
        except OSError:
            pass
    gone = entries.keys() - names
    live = {sid: e for sid, e in entries.items() if sid not in gone}
    if lines > len(live) + INDEX_SLACK or len(gone) > INDEX_SLACK // 4:
        _compact_index(base, live)
    return sorted(live.items(), key=lambda kv: (kv[1]["t"], kv[0]), reverse=True)


def list_sessions(cwd: Path) -> list[Path]:
    """This project's transcripts, newest first."""
    base = project_dir(cwd)
    return [base / f"{sid}.jsonl" for sid, _ in session_entries(cwd)]


def latest_session(cwd: Path) -> Path | None:
    """The session `--continue` resumes. The index is written at the start of each task, so the newest
    entry is the last session used even when its process was killed before it could say so."""
    entries = session_entries(cwd)
    if not entries:
        return None
    return project_dir(cwd) / f"{entries[0][0]}.jsonl"


def delete_session(cwd: Path, session_id: str) -> None:
    paths = SessionPaths.for_session(cwd, session_id)
    paths.transcript.unlink(missing_ok=True)
    paths.lock.unlink(missing_ok=True)
    shutil.rmtree(paths.directory, ignore_errors=True)


# -- writing --------------------------------------------------------------------------------------


def _dumps(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _last_newline(fd: int, size: int) -> int:
    """Offset just past the last b"\\n" in the file's first `size` bytes (0 when there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def _parses(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False


class Transcript:
    """Appends records, each with one `write` of a whole line; see the module's contract.

    `lock=True` (the engine's sessions) takes the session lock when the file is first opened; a
    sub-agent's transcript is private to its parent and takes none. With `persist=False`
    (`--no-session-persistence`) nothing is written and nothing is locked.
    """

    def __init__(self, path: Path, lock: bool = False, persist: bool = True):
        self.path = path
        self.persist = persist
        self._fd: int | None = None
        self._lock = SessionLock(path.with_suffix(".lock"), path.stem) if lock else None

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self) -> None:
        if self._fd is not None or not self.persist:
            return
        try:
            ensure_private_dir(self.path.parent)
            if self._lock is not None:
                self._lock.acquire()
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            if self._lock is not None:
                self._lock.release()
            raise TranscriptWriteError(exc.errno, exc.strerror, str(self.path)) from exc
        self._fd = fd
        try:
            self._fix_tail()
        except OSError:
            pass  # a read-only file fails on the first append, with the path named

    def _fix_tail(self) -> None:
        """A last line without its newline is a record cut by a crash: drop it (the load reported it), or
        end it when it is whole, so the next record never lands on the same line."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size == 0 or os.pread(self._fd, 1, size - 1) == b"\n":
            return
        keep = _last_newline(self._fd, size)
        if _parses(os.pread(self._fd, size - keep, keep)):
            os.write(self._fd, b"\n")
        else:
            os.ftruncate(self._fd, keep)

    def append(self, record: dict[str, Any], sync: bool = False) -> None:
        if not self.persist:
            return
        data = _dumps(record)
        self.open()
        assert self._fd is not None
        before = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            if sync:
                os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, before)  # never leave half a line behind
            except OSError:
                pass
            raise TranscriptWriteError(exc.errno, exc.strerror, str(self.path)) from exc

    def sync(self) -> None:
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise TranscriptWriteError(exc.errno, exc.strerror, str(self.path)) from exc

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            except OSError:
                pass
            os.close(fd)
        if self._lock is not None:
            self._lock.release()


# -- loading --------------------------------------------------------------------------------------


@dataclass
class LoadedSession:
    session_id: str
    messages: list[Message] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # What this load had to fix (kept by the engine as a `repair` record when it resumes the session).
    repairs: list[str] = field(default_factory=list)
    damaged_lines: list[int] = field(default_factory=list)
    # True when `messages` differs from what the transcript's records say (the engine writes it back).
    repaired_history: bool = False
    size: int = 0  # bytes read (a fork copies exactly these)


def _recover(raw: bytes) -> dict[str, Any] | None:
    """The record at the end of a damaged line: an older version appended after a torn line, merging both."""
    start = raw.find(b'{"type"', 1)
    while start > 0:
        try:
            rec = json.loads(raw[start:])
            if isinstance(rec, dict):
                return rec
        except (ValueError, RecursionError):
            pass
        start = raw.find(b'{"type"', start + 1)
    return None


def _checked(path: Path, lineno: int, msg: Any, session: LoadedSession) -> Message | None:
    """`msg` as check_message repairs it; each repair is one warning naming the file and line."""
    fixed, notes = check_message(msg)
    if notes:
        session.damaged_lines.append(lineno)
        what = "message skipped" if fixed is None else "message repaired"
        session.warnings.append(f"{path}:{lineno}: {what} ({'; '.join(dict.fromkeys(notes))[:300]})")
        if fixed is not None:
            session.repaired_history = True
    return fixed


def _read_own_file(path: Path) -> bytes:
    """The transcript's bytes; only a regular file the user owns is read."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise TranscriptError(f"{path} is not a regular file")
            if st.st_uid != os.getuid():
                raise TranscriptError(f"{path} is owned by uid {st.st_uid}, not you; refusing to resume it")
            return fh.read()
    except FileNotFoundError:
        raise TranscriptError(f"no transcript at {path}") from None
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc.strerror or exc}") from None


def _complete_lines(path: Path, data: bytes, session: LoadedSession) -> list[bytes]:
    """The file's lines; a last line cut mid-write is dropped (and noted)."""
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail:
        if _parses(tail):
            lines.append(tail)
        else:
            note = (f"{path}: the last record was cut mid-write ({len(tail)} bytes, a crash or a full disk); "
                    "it was dropped")
            session.warnings.append(note)
            session.repairs.append(note)
    return lines


def _parse_line(path: Path, lineno: int, raw: bytes, session: LoadedSession) -> dict[str, Any] | None:
    """One line's record; a damaged line yields what can be recovered from it (noted), or None."""
    try:
        rec = json.loads(raw)
        if not isinstance(rec, dict):
            raise ValueError("not an object")
        return rec
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    recovered = _recover(raw)
    session.damaged_lines.append(lineno)
    if recovered is None:
        session.warnings.append(f"{path}:{lineno}: unreadable transcript line skipped ({reason})")
    else:
        session.warnings.append(f"{path}:{lineno}: damaged line: its torn start was dropped, its record kept")
    return recovered


def _check_header(path: Path, rec: dict[str, Any]) -> None:
    version = rec.get("version", 1)
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise TranscriptError(
            f"{path}: written by a newer version (format {version}, this agent reads "
            f"{FORMAT_VERSION}); upgrade the agent to resume it"
        )


def _apply_record(
    path: Path, lineno: int, rec: dict[str, Any], session: LoadedSession, reported: set[int]
) -> None:
    """One record's effect on the loaded session; `reported` gathers lines an earlier repair recorded."""
    kind = rec.get("type")
    if kind == "session":
        _check_header(path, rec)
        session.header = rec  # the file's name is the session's identity, whatever the header says
    elif kind == "message":
        fixed = _checked(path, lineno, rec.get("message"), session)
        if fixed is not None:
            session.messages.append(fixed)
    else:
        if kind in ("history_replaced", "repair") and isinstance(rec.get("messages"), list):
            kept = [_checked(path, lineno, m, session) for m in rec["messages"]]
            session.messages = [m for m in kept if m is not None]
        if kind == "repair" and isinstance(rec.get("lines"), list):
            reported.update(n for n in rec["lines"] if isinstance(n, int))
        session.records.append(rec)


def load_transcript(path: Path) -> LoadedSession:
    """Read a transcript (never writing it) and repair its history; see the module's contract."""
    data = _read_own_file(path)
    session = LoadedSession(path.stem, size=len(data))
    reported: set[int] = set()
    for lineno, raw in enumerate(_complete_lines(path, data, session), 1):
        if not raw.strip():
            continue
        rec = _parse_line(path, lineno, raw, session)
        if rec is not None:
            _apply_record(path, lineno, rec, session, reported)
    # Damage an earlier resume already reported and recorded is not news.
    session.warnings = [w for w in session.warnings if not any(f"{path}:{n}:" in w for n in reported)]
    session.damaged_lines = [n for n in session.damaged_lines if n not in reported]
    session.messages, actions = normalize_history(session.messages)
    if actions:
        session.repaired_history = True
        session.repairs.extend(actions)
    return session


def repair_record(loaded: LoadedSession) -> dict[str, Any] | None:
    """The record a resumed session appends so that its repairs are made once and reported once."""
    if not loaded.repairs and not loaded.damaged_lines:
        return None
    rec: dict[str, Any] = {"type": "repair", "actions": loaded.repairs, "lines": loaded.damaged_lines,
                           "at": time.time()}
    if loaded.repaired_history:
        rec["messages"] = loaded.messages
    return rec
