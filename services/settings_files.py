"""Where settings live: the user's, the project's and the local files, in the order they merge.

A leaf, so that what only needs the names (trust, hooks) does not import the merge.
"""

from __future__ import annotations

from pathlib import Path

from services.config import getenv

LOCAL_SETTINGS = Path(".agents") / "settings.local.json"


def user_files(home: Path) -> list[Path]:
    claude = Path(getenv("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return [claude / "settings.json", home / "settings.json"]


def project_files(cwd: Path) -> list[Path]:
    return [cwd / ".claude" / "settings.json", cwd / ".agents" / "settings.json"]


def local_files(cwd: Path) -> list[Path]:
    return [cwd / ".claude" / "settings.local.json", cwd / LOCAL_SETTINGS]


def scoped_files(cwd: Path, home: Path) -> list[tuple[str, Path]]:
    return (
        [("user", p) for p in user_files(home)]
        + [("project", p) for p in project_files(cwd)]
        + [("local", p) for p in local_files(cwd)]
    )
