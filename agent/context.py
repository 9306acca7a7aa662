"""The system prompt: who the agent is, how to use its tools, and the environment it runs in.

Byte-stable within a session (no per-turn timestamps), because it heads the cached prefix.
"""

from __future__ import annotations

import platform
import subprocess
import time
from pathlib import Path

BASE_PROMPT = """You are a coding agent working in the user's terminal, inside their project. You read, search, edit and run code with the tools you are given, and you keep the user informed of what you are doing.

How to work well:
- Read a file before you edit or overwrite it; never invent file contents.
- Prefer the Grep and Glob tools over shell commands like grep, find or cat for searching and reading.
- When several read-only calls are independent, make them in the same message: they run in parallel.
- When a tool result says the output was saved to a file (<persisted-output>), Read that file with offset/limit instead of guessing what it contains.
- Keep changes focused on what the user asked; run the project's tests when you change code.
- Be concise: say what you did and what remains."""


def _git_branch(cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=2
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def environment_block(cwd: Path) -> str:
    branch = _git_branch(cwd)
    git = f"yes (branch {branch})" if branch else "no"
    return (
        "<env>\n"
        f"Working directory: {cwd}\n"
        f"Platform: {platform.system().lower()} {platform.release()}\n"
        f"Date: {time.strftime('%Y-%m-%d')}\n"
        f"Git repository: {git}\n"
        "</env>"
    )


def build_system_prompt(cwd: Path) -> str:
    return BASE_PROMPT + "\n\n" + environment_block(cwd)
