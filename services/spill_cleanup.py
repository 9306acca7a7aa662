"""Spill files belong to their session: remove the spill directories of sessions older than N days.

A session's age is the last modification of its transcript (`<project dir>/<id>.jsonl`), or of the
session directory when the transcript is gone. Default 30 days, `SPILL_MAX_AGE_DAYS` overrides
(0 disables the cleanup).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from services.config import agent_home, getenv
from services.trace import trace

DEFAULT_SPILL_MAX_AGE_DAYS = 30
SPILL_DIRNAME = "tool-results"


def max_age_days_from_env() -> float:
    raw = (getenv("SPILL_MAX_AGE_DAYS") or "").strip()
    if not raw:
        return DEFAULT_SPILL_MAX_AGE_DAYS
    try:
        return max(0.0, float(raw))
    except ValueError:
        return DEFAULT_SPILL_MAX_AGE_DAYS


def cleanup_spill_dirs(
    max_age_days: float | None = None, home: Path | None = None, now: float | None = None
) -> list[Path]:
    """Delete `<home>/projects/*/<session>/tool-results` of sessions older than the age; returns them."""
    days = max_age_days_from_env() if max_age_days is None else max_age_days
    if days <= 0:
        return []
    projects = (home or agent_home()) / "projects"
    if not projects.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - days * 86400
    removed: list[Path] = []
    for spill in projects.glob(f"*/*/{SPILL_DIRNAME}"):
        session_dir = spill.parent
        transcript = session_dir.parent / f"{session_dir.name}.jsonl"
        try:
            mtime = transcript.stat().st_mtime if transcript.exists() else session_dir.stat().st_mtime
        except OSError:
            continue
        if mtime < cutoff:
            shutil.rmtree(spill, ignore_errors=True)
            if not spill.exists():
                removed.append(spill)
    if removed:
        trace("spill.cleanup", removed=len(removed), max_age_days=days)
    return removed
