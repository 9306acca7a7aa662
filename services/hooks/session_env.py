"""Claude Code's CLAUDE_ENV_FILE: SessionStart, CwdChanged and FileChanged hooks may append `export` lines to
the file it names; the Bash tool runs those scripts before each command, so a hook can set up the shell
(direnv, nvm, a virtualenv) for the rest of the session.

The files live in the session's `session-env/` folder, named as Claude Code names them
(`<event>-hook-<n>.sh`); a change of directory clears the CwdChanged and FileChanged ones first, as Claude
Code does. The folder is outside the project, so a command of the model's that writes there is a write
outside the working directory (the gate asks).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

ENV_FILE_EVENTS = frozenset(("SessionStart", "CwdChanged", "FileChanged"))
FOLDER = "session-env"
MAX_SCRIPT_CHARS = 256 * 1024  # what a hook leaves is bounded before every command runs it


def env_folder(session_dir: Path) -> Path:
    return session_dir / FOLDER


def env_file(folder: Path, event: str, index: int) -> Path:
    return folder / f"{event.lower()}-hook-{index}.sh"


def clear_files(folder: Path, event: str) -> None:
    """Before the event's hooks write again: a session (re)starting sets its environment afresh (a resumed
    session does not pile up copies), a file's change replaces what its hooks said before, and a new
    directory drops what the CwdChanged and FileChanged hooks set for the old one."""
    prefixes = {"SessionStart": ("sessionstart-hook-",), "CwdChanged": ("cwdchanged-hook-", "filechanged-hook-"),
                "FileChanged": ("filechanged-hook-",)}[event]
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            if path.name.startswith(prefixes) and path.suffix == ".sh":
                with contextlib.suppress(OSError):
                    path.unlink()


def env_script(session_dir: Path | None) -> str:
    """The scripts the hooks left, in order (session start first), for Bash to run before a command."""
    if session_dir is None:
        return ""
    folder = env_folder(session_dir)
    try:
        paths = [p for p in folder.iterdir() if p.suffix == ".sh" and p.is_file() and not p.is_symlink()]
    except OSError:
        return ""
    order = {"sessionstart": 0, "cwdchanged": 1, "filechanged": 2}
    paths.sort(key=lambda p: (order.get(p.name.split("-hook-")[0], 3), p.name))
    parts = []
    for path in paths:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = path.read_text(encoding="utf-8").strip()
            if text:
                parts.append(text)
    script = "\n".join(parts)
    return script[:MAX_SCRIPT_CHARS]
