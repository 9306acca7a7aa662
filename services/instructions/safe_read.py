"""Opening instruction, memory and rule files without letting a name smuggle in a secret.

A file is trusted by its name (`CLAUDE.md`, a rule, an import), so its name must not be a door: the real
path (links followed) has to stay inside the file's scope (the project, or the user's home for the user's
own files), must not be a device or process file (`/proc`, `/sys`, `/dev`), nor a credential (`~/.ssh`,
`~/.aws`, ...). A refused file is skipped with a one-line notice; a missing one is skipped silently.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

# Claude Code's limit for one instruction file (bigger ones are skipped).
MAX_INSTRUCTION_FILE_BYTES = 4 * 1024 * 1024
SYSTEM_TREES = ("/proc", "/sys", "/dev")
SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".config/gcloud", ".password-store")
SECRET_NAMES = frozenset({
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", ".netrc", ".pgpass", ".git-credentials",
    ".npmrc", ".pypirc", "credentials.json", ".env",
})


@dataclass(frozen=True)
class ReadResult:
    text: str | None  # None: nothing to load
    notice: str | None = None  # one line, when the file was refused rather than absent


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def secret_reason(real: str, home: Path | None) -> str | None:
    """Why `real` (a resolved path) must never be read as instructions, or None."""
    if any(_inside(real, tree) for tree in SYSTEM_TREES):
        return "a device or process file"
    if Path(real).name in SECRET_NAMES or Path(real).name.startswith("id_") and Path(real).parent.name == ".ssh":
        return "a credential file"
    if home is not None:
        home_real = os.path.realpath(home)
        if any(_inside(real, os.path.join(home_real, d)) for d in SECRET_DIRS):
            return "a credential file"
    return None


def refusal(path: Path, scope: list[Path], home: Path | None) -> str | None:
    """Why the file at `path` is refused (a link out of its scope or to a secret), or None."""
    real = os.path.realpath(path)
    why = secret_reason(real, home)
    if why is None and real != os.path.abspath(path):  # a link somewhere on the way: it must stay in scope
        if not any(_inside(real, os.path.realpath(root)) for root in scope):
            why = "a link out of " + ("the project" if scope else "its folder")
    return None if why is None else f"ignored {path}: it is {why} ({real})"


def read_instruction_file(path: Path, scope: list[Path], home: Path | None) -> ReadResult:
    """The file's text, or None with a notice when it is refused. Never blocks on a FIFO or a device."""
    if not os.path.lexists(path):
        return ReadResult(None)
    notice = refusal(path, scope, home)
    if notice is not None:
        return ReadResult(None, notice)
    real = os.path.realpath(path)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return ReadResult(None)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return ReadResult(None)
        if st.st_size > MAX_INSTRUCTION_FILE_BYTES:
            return ReadResult(None, f"ignored {path}: larger than {MAX_INSTRUCTION_FILE_BYTES} bytes")
        data = fh.read(MAX_INSTRUCTION_FILE_BYTES + 1)
    return ReadResult(data.decode("utf-8", errors="replace"))
