"""Checkpoints: the files a turn's Edit/Write/NotebookEdit calls change, as they were before the turn.

The orchestrator calls `before_write` when a writing call starts (before the gate and the tool), so the
pre-image is taken from disk before anything is written. The first touch of a path in a turn is what counts.
Pre-images are saved under the session directory (`checkpoints/<turn>/<hash>`, 0600) and each is announced
with a `checkpoint` transcript record, so `/rewind` works after a resume. Bash's changes are not recorded
(a shell can touch anything); `/rewind` says so.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHECKPOINTS_KEY = "checkpoints"
WRITING_TOOLS = ("Edit", "Write", "NotebookEdit")
MAX_PRE_IMAGE_BYTES = 10 * 1024 * 1024  # a larger file is not checkpointed (said at rewind)


@dataclass
class Checkpoint:
    turn: int  # index in the history of the user message that started the turn
    path: str  # absolute
    existed: bool
    blob: str = ""  # the saved pre-image, when the file existed
    too_large: bool = False


@dataclass
class CheckpointStore:
    directory: Path | None = None
    record: Any = None  # callable(record dict): the engine's transcript
    turn: int = -1
    items: list[Checkpoint] = field(default_factory=list)
    _seen: set[tuple[int, str]] = field(default_factory=set)

    def begin_turn(self, turn: int) -> None:
        self.turn = turn

    def before_write(self, name: str, input: dict[str, Any], cwd: Path) -> None:
        if name not in WRITING_TOOLS or self.turn < 0:
            return
        raw = input.get("file_path") or input.get("notebook_path")
        if not isinstance(raw, str) or not raw:
            return
        path = Path(raw).expanduser()
        path = (path if path.is_absolute() else cwd / path).resolve()
        key = (self.turn, str(path))
        if key in self._seen:
            return
        self._seen.add(key)
        cp = Checkpoint(self.turn, str(path), path.is_file())
        if cp.existed:
            try:
                if path.stat().st_size > MAX_PRE_IMAGE_BYTES:
                    cp.too_large = True
                elif self.directory is not None:
                    blob = self.directory / str(self.turn) / hashlib.sha256(str(path).encode()).hexdigest()[:24]
                    blob.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    data = path.read_bytes()
                    fd = os.open(blob, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                    cp.blob = str(blob)
            except OSError:
                cp.too_large = True
        self.items.append(cp)
        if callable(self.record):
            try:
                self.record({"type": "checkpoint", "turn": cp.turn, "path": cp.path, "existed": cp.existed,
                             "blob": cp.blob, "too_large": cp.too_large})
            except Exception:
                pass

    def load(self, records: list[dict[str, Any]]) -> None:
        """Rebuild from a resumed transcript's `checkpoint` records."""
        for rec in records:
            if rec.get("type") == "checkpoint" and isinstance(rec.get("path"), str):
                cp = Checkpoint(int(rec.get("turn", -1)), rec["path"], bool(rec.get("existed")),
                                str(rec.get("blob") or ""), bool(rec.get("too_large")))
                self.items.append(cp)
                self._seen.add((cp.turn, cp.path))

    def files_since(self, turn: int) -> list[Checkpoint]:
        """For each path changed at or after `turn`, its earliest checkpoint: the state before that turn."""
        first: dict[str, Checkpoint] = {}
        for cp in sorted(self.items, key=lambda c: c.turn):
            if cp.turn >= turn and cp.path not in first:
                first[cp.path] = cp
        return list(first.values())

    def restore(self, turn: int) -> tuple[list[str], list[str]]:
        """Put every file changed since `turn` back as it was. Returns (restored paths, problems)."""
        restored, problems = [], []
        for cp in self.files_since(turn):
            path = Path(cp.path)
            try:
                if not cp.existed:
                    if path.exists():
                        path.unlink()
                    restored.append(cp.path)
                elif cp.too_large or not cp.blob:
                    problems.append(f"{cp.path}: not checkpointed (too large or unreadable)")
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(Path(cp.blob).read_bytes())
                    restored.append(cp.path)
            except OSError as exc:
                problems.append(f"{cp.path}: {exc.strerror}")
        self.items = [cp for cp in self.items if cp.turn < turn]
        self._seen = {(cp.turn, cp.path) for cp in self.items}
        return restored, problems


def checkpoint_store(state: Any) -> CheckpointStore | None:
    store = state.extras.get(CHECKPOINTS_KEY)
    return store if isinstance(store, CheckpointStore) else None
