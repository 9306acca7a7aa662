"""Sessions on disk: an append-only JSONL transcript per session, flushed record by record.

Layout under the agent home: `projects/<slug>/<session-id>.jsonl`, and the session's own directory
`projects/<slug>/<session-id>/` (spill files live in its `tool-results/`). Records:
`session` (header with the format version), `message`, `decision` (stage 1/2 replacement decisions),
`history_replaced` (an autocompact write-back) and others that later features add. A line that
cannot be parsed is reported with its number and skipped; a newer format version is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import project_dir
from services.messages import Message, repair_pairing

FORMAT_VERSION = 1

# `-r`/`--resume` with no id opens the session picker (in the REPL); the command line puts this sentinel
# where the id would be, and the REPL reads it.
PICK_SESSION = "@pick"


class TranscriptError(Exception):
    pass


def new_session_id() -> str:
    """A UUID, as Claude Code's session ids are (scripts and SDK clients pass them back)."""
    return str(uuid.uuid4())


@dataclass
class SessionPaths:
    transcript: Path
    directory: Path

    @classmethod
    def for_session(cls, cwd: Path, session_id: str) -> SessionPaths:
        base = project_dir(cwd)
        return cls(base / f"{session_id}.jsonl", base / session_id)


class Transcript:
    """Appends records; each is written and flushed at once, so a kill -9 loses at most one line.
    With `persist=False` (`--no-session-persistence`) nothing is written."""

    def __init__(self, path: Path, persist: bool = True):
        self.path = path
        self.persist = persist
        self._fh = None

    def append(self, record: dict[str, Any]) -> None:
        if not self.persist:
            return
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._fh = os.fdopen(fd, "a", encoding="utf-8")
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


@dataclass
class LoadedSession:
    session_id: str
    messages: list[Message] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def load_transcript(path: Path) -> LoadedSession:
    if not path.is_file():
        raise TranscriptError(f"no transcript at {path}")
    session = LoadedSession(path.stem)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                session.warnings.append(f"{path}:{lineno}: unreadable transcript line skipped ({exc})")
                continue
            kind = rec.get("type")
            if kind == "session":
                version = rec.get("version", 1)
                if isinstance(version, int) and version > FORMAT_VERSION:
                    raise TranscriptError(
                        f"{path}: written by a newer version (format {version}, this agent reads "
                        f"{FORMAT_VERSION}); upgrade the agent to resume it"
                    )
                session.header = rec
                session.session_id = rec.get("session_id", session.session_id)
            elif kind == "message":
                msg = rec.get("message")
                if isinstance(msg, dict) and msg.get("role") in ("user", "assistant") and isinstance(
                    msg.get("content"), list
                ):
                    session.messages.append(msg)  # type: ignore[arg-type]
                else:
                    session.warnings.append(f"{path}:{lineno}: malformed message record skipped")
            elif kind == "history_replaced":
                msgs = rec.get("messages")
                if isinstance(msgs, list):
                    session.messages = list(msgs)
                session.records.append(rec)
            else:
                session.records.append(rec)
    # A transcript cut mid-turn: answer the dangling tool_use so the next request is valid.
    fix = repair_pairing(session.messages, "Interrupted: the session ended before this tool finished.")
    if fix is not None:
        session.messages.append(fix)
        session.records.append({"type": "repaired", "message": fix})
    return session


def list_sessions(cwd: Path) -> list[Path]:
    """This project's transcripts, newest first."""
    base = project_dir(cwd)
    if not base.is_dir():
        return []
    return sorted(base.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)


def delete_session(cwd: Path, session_id: str) -> None:
    paths = SessionPaths.for_session(cwd, session_id)
    paths.transcript.unlink(missing_ok=True)
    shutil.rmtree(paths.directory, ignore_errors=True)
