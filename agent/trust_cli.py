"""`agent trust [DIR] [--list] [--revoke]`: record, list or revoke folder trust (services/trust.py)."""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = "usage: agent trust [DIR] [--list] [--revoke]"


def main(argv: list[str]) -> int:
    from services.config import agent_home
    from services.trust import revoke, trust, trusted_folders

    flags = {a for a in argv if a.startswith("-")}
    dirs = [a for a in argv if not a.startswith("-")]
    unknown = flags - {"--list", "--revoke", "-h", "--help"}
    if unknown or len(dirs) > 1 or {"--list", "--revoke"} <= flags:
        sys.stderr.write(f"error: {USAGE}\n")
        return 2
    if flags & {"-h", "--help"}:
        sys.stdout.write(USAGE + "\n\nA trusted folder's own settings, hooks, MCP servers and .env count; an untrusted "
                         "folder's may only restrict.\n")
        return 0
    home = agent_home()
    if "--list" in flags:
        for folder in trusted_folders(home):
            sys.stdout.write(folder + "\n")
        return 0
    folder_path = Path(dirs[0] if dirs else ".").expanduser().resolve()
    if not folder_path.is_dir():
        sys.stderr.write(f"error: {folder_path}: not a directory\n")
        return 2
    if "--revoke" in flags:
        if revoke(folder_path, home):
            sys.stdout.write(f"Revoked trust for {folder_path}\n")
            return 0
        sys.stderr.write(f"error: {folder_path} was not trusted (a parent folder may be: agent trust --list)\n")
        return 1
    sys.stdout.write(f"Trusted {trust(folder_path, home)}\n")
    return 0
