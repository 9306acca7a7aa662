"""The folder-trust question asked once, on a plain terminal, before the REPL starts."""

from __future__ import annotations

import sys
from pathlib import Path

from services.private_fs import append_private


def ask_folder_trust(cwd: Path, home: Path) -> bool:
    """On first open of a folder with its own configuration, ask once whether to trust it.

    The answer is recorded in the agent home either way ("no" is not asked again: `agent trust` changes
    it). A folder without project configuration is not asked about and stays untrusted.
    """
    from services.settings import load_settings
    from services.trust import folder_requests, trust

    requests = folder_requests(cwd, load_settings(cwd, home, trusted=False).ignored)
    if not requests.has_config or _trust_answered(cwd, home):
        return False
    out = sys.stderr
    out.write(f"\nThis folder has its own agent configuration: {cwd}\n")
    out.write(f"Files: {', '.join(requests.files)}\n")
    for want in requests.wants or ["only restrictions (deny/ask rules)"]:
        out.write(f"  - {want}\n")
    out.write("Trusting it lets these run and apply. Only trust folders whose contents you trust.\n")
    out.write("Trust this folder? [y/N] ")
    out.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError, OSError):
        answer = ""
    _record_answer(cwd, home)
    if answer in ("y", "yes"):
        trust(cwd, home)
        out.write("Trusted. (agent trust --revoke undoes it.)\n")
        return True
    out.write("Not trusted: only its deny/ask rules apply. (agent trust trusts it later.)\n")
    return False


def ask_changed_trust(cwd: Path, home: Path, changed: list[str]) -> bool:
    """The folder is trusted, but its configuration changed since (or a sub-folder has its own): show
    what, and ask again. "No" leaves it untrusted for this session and asks again next time."""
    from services.trust import accept_config

    out = sys.stderr
    out.write(f"\nThis folder's agent configuration changed since you trusted it: {cwd}\n")
    for name in changed[:20]:
        out.write(f"  - {name}{'' if (cwd / name).exists() else ' (removed)'}\n")
    if len(changed) > 20:
        out.write(f"  ... and {len(changed) - 20} more\n")
    out.write("A command, a script or a pull may have written them. Trust the folder as it is now? [y/N] ")
    out.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError, OSError):
        answer = ""
    if answer in ("y", "yes"):
        accept_config(cwd, home)
        out.write("Trusted as it is now.\n")
        return True
    out.write("Not trusted for this session: only its deny/ask rules apply.\n")
    return False


def _answered_file(home: Path) -> Path:
    return home / "trust-asked.txt"


def _trust_answered(cwd: Path, home: Path) -> bool:
    try:
        return str(cwd.resolve()) in _answered_file(home).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False


def _record_answer(cwd: Path, home: Path) -> None:
    try:
        append_private(_answered_file(home), str(cwd.resolve()) + "\n")
    except OSError:
        pass
