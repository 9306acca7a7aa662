"""The system prompt: who the agent is, how to use its tools, the environment, and what the project says.

Parts, joined by blank lines: the base prompt, the environment block, the user-level instructions
(`<agent home>/AGENTS.md`), the project context (`AGENTS.md` / `CLAUDE.md`), the Agent Memory section and
the skills catalog. Byte-stable within a session (the environment block is taken once per session),
because it heads the cached prefix; `SystemPromptBuilder` rebuilds it only when an input changes.
Also here: the `/init` prompt.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from services.memory import MemoryStore, memory_section
from services.skills import Skill, skill_catalog
from services.skills.discover import cap_bytes
from services.trace import trace

PROJECT_CONTEXT_FILES = ("AGENTS.md", "CLAUDE.md")
USER_CONTEXT_FILE = "AGENTS.md"
MAX_PROJECT_CONTEXT_BYTES = 64 * 1024
PROJECT_CONTEXT_TRUNCATED_NOTE = "\n\n[project context truncated at 64KB]"
USER_CONTEXT_TRUNCATED_NOTE = "\n\n[user instructions truncated at 64KB]"
MAX_PARENT_LEVELS = 5
CONTEXT_SEPARATOR = "\n\n---\n\n"

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
        f"Shell: {os.environ.get('SHELL') or '/bin/sh'}\n"
        "</env>"
    )



# -- project context ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectContext:
    directory: Path
    files: tuple[Path, ...]
    text: str


def context_search_dirs(cwd: Path) -> list[Path]:
    """cwd and at most 5 parents, stopping after the repository root (a directory with `.git`)."""
    dirs: list[Path] = []
    current = cwd.resolve()
    for _ in range(MAX_PARENT_LEVELS + 1):
        dirs.append(current)
        if (current / ".git").exists() or current.parent == current:
            break
        current = current.parent
    return dirs


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def find_project_context(cwd: Path) -> ProjectContext | None:
    """The first directory (walking up) with AGENTS.md and/or CLAUDE.md; both merged, AGENTS first."""
    for d in context_search_dirs(cwd):
        parts: list[tuple[Path, str]] = []
        for name in PROJECT_CONTEXT_FILES:
            path = d / name
            if path.is_file():
                text = _read(path)
                if text is not None:
                    parts.append((path, text))
        if parts:
            merged = CONTEXT_SEPARATOR.join(t for _, t in parts)
            merged = cap_bytes(merged, MAX_PROJECT_CONTEXT_BYTES, PROJECT_CONTEXT_TRUNCATED_NOTE)
            return ProjectContext(d, tuple(p for p, _ in parts), merged)
    return None


def load_project_context(cwd: Path) -> str | None:
    found = find_project_context(cwd)
    return found.text if found else None


def load_user_context(home: Path | None) -> str | None:
    if home is None:
        return None
    text = _read(home / USER_CONTEXT_FILE)
    if text is None or not text.strip():
        return None
    return cap_bytes(text, MAX_PROJECT_CONTEXT_BYTES, USER_CONTEXT_TRUNCATED_NOTE)


def _project_section(found: ProjectContext) -> str:
    names = ", ".join(str(p) for p in found.files)
    return (
        "# Project instructions\n\n"
        f"The project's instruction files ({names}) follow. They describe how to work in this repository; "
        "follow them, they take precedence over the general guidance above.\n\n"
        f"{found.text.strip()}"
    )


def _user_section(home: Path, text: str) -> str:
    return (
        "# User instructions\n\n"
        f"The user's own instructions for every project ({home / USER_CONTEXT_FILE}):\n\n"
        f"{text.strip()}"
    )


def build_system_prompt(
    cwd: Path,
    *,
    home: Path | None = None,
    skills: list[Skill] | None = None,
    memory: str | None = None,
    env: str | None = None,
    project: ProjectContext | None | bool = True,
) -> str:
    """The whole system prompt. `project=True` searches for the project context; `env` reuses a block."""
    parts = [BASE_PROMPT, env if env is not None else environment_block(cwd)]
    user = load_user_context(home)
    if user is not None and home is not None:
        parts.append(_user_section(home, user))
    found = find_project_context(cwd) if project is True else (project or None)
    if found is not None:
        parts.append(_project_section(found))
    parts.append(memory_section(cwd, memory))
    catalog = skill_catalog(skills or [])
    if catalog:
        parts.append(catalog)
    return "\n\n".join(parts)


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class SystemPromptBuilder:
    """Caches the system prompt; rebuilds it only when an input changed.

    Inputs: the session (a new session takes a new environment block), the memory file, the project
    context files along the search path, and the user-level file. Skills are discovered once.
    """

    def __init__(self, cwd: Path, home: Path | None = None, skills: list[Skill] | None = None):
        self.cwd = cwd
        self.home = home
        self.skills = list(skills or [])
        self.memory = MemoryStore(cwd)
        self.builds = 0
        self._key: tuple | None = None
        self._prompt = ""
        self._env_session: str | None = None
        self._env = ""

    def _inputs_key(self) -> tuple:
        files = [d / n for d in context_search_dirs(self.cwd) for n in PROJECT_CONTEXT_FILES]
        if self.home is not None:
            files.append(self.home / USER_CONTEXT_FILE)
        return tuple(_stat_key(p) for p in files)

    def build(self, session: str = "") -> str:
        snap = self.memory.refresh()
        if self._env_session != session or not self._env:
            self._env_session = session
            self._env = environment_block(self.cwd)
        key = (session, snap.mtime_ns, snap.size, self._inputs_key())
        if key != self._key:
            self._prompt = build_system_prompt(
                self.cwd, home=self.home, skills=self.skills, memory=snap.content, env=self._env
            )
            self._key = key
            self.builds += 1
            trace("context.system_prompt", chars=len(self._prompt), build=self.builds, skills=len(self.skills))
        return self._prompt

    @property
    def memory_path(self) -> Path:
        return self.memory.path


# -- /init ------------------------------------------------------------------------------------------
def init_target_file(cwd: Path) -> str:
    """CLAUDE.md when only that exists in the project, else AGENTS.md."""
    if (cwd / "CLAUDE.md").is_file() and not (cwd / "AGENTS.md").is_file():
        return "CLAUDE.md"
    return "AGENTS.md"


def init_prompt(notes: str = "", cwd: Path | None = None, target: str | None = None) -> str:
    """The user turn `/init [notes]` sends: study the repository, then write or improve the file."""
    target = target or (init_target_file(cwd) if cwd is not None else "AGENTS.md")
    reader = "Claude Code (claude.ai/code)" if target == "CLAUDE.md" else "coding agents"
    text = f"""Please study this repository and create a {target} file at its root, which will be given to {reader} working in it in future sessions.

If {target} already exists, read it first and suggest improvements to it: keep what is right, fix what is stale, and fill what is missing, rather than starting over.

What to add:
1. The commands used most often: how to install, build, lint and run the tests, including how to run a single test.
2. The high-level architecture: the big picture that takes reading several files to understand, not a list of every file.
3. Conventions a newcomer would get wrong: code style, naming, where things go, what must not be touched.

Usage notes:
- Look at the README, the build and CI files, and any existing rules (.cursor/rules, .github/copilot-instructions.md) and include what matters from them.
- Be concise and specific to this project; no generic advice, no made-up sections such as "Tips" unless the repository shows them.
- Keep command checks cheap: do **not** execute the full test suite or long builds just to write this file; at most run one quick command to confirm how tests are invoked.
- Start the file with:

```
# {target}

This file gives guidance to {reader} working with the code in this repository.
```"""
    if notes and notes.strip():
        text += f"\n\nAdditional user notes:\n{notes.strip()}"
    return text
