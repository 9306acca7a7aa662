"""A stable, anonymous id for this installation: the Messages API's `metadata.user_id`.

Claude Code sends one per device so Anthropic can tell abuse from one install apart from others. Ours is 32
random bytes in hex, created once under the agent home (`install-id`, mode 0600) and carrying nothing about
the user (no name, host, path or account). When the home is not writable, a process-wide random id is used
(so a request never fails over it).
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from services.config import agent_home
from services.private_fs import ensure_private_dir

FILE_NAME = "install-id"
_VALID = re.compile(r"^[0-9a-f]{64}$")
_fallback: str | None = None


def install_id(home: Path | None = None) -> str:
    global _fallback
    path = (home or agent_home()) / FILE_NAME
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
        if _VALID.match(text):
            return text
    except OSError:
        pass
    new = secrets.token_hex(32)
    try:
        ensure_private_dir(path.parent)
        tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(new + "\n")
        os.replace(tmp, path)  # a garbled or hostile file is replaced whole
        return new
    except OSError:
        if _fallback is None:
            _fallback = new
        return _fallback
