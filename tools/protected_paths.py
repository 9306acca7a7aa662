"""Paths the gate treats specially beyond the project boundary.

- The agent's own processes: `/proc/<pid>/` of the agent and every ancestor (and `/proc/self`,
  `/proc/thread-self`) hold its environment (the API key), memory and open files. Reading or writing
  them is refused outside bypass, for the file tools and for Bash words alike (globs expanded).
- Files that configure agents or editors (Claude Code's list, case-insensitive, plus everything a later
  session loads, at any depth: services/loaded_config.py, the list the Bash sandbox keeps read-only):
  acceptEdits asks before writing them, since they run code or steer the next session.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable

from services.loaded_config import fold, is_loaded

# Claude Code 2.1.332's dangerous names and directories (acceptEdits asks); what a session loads (the
# shared list, services/loaded_config.py) is asked for too.
CONFIG_NAMES = frozenset(fold(n) for n in (
    ".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".zshenv",
    ".zlogin", ".zlogout", ".bash_login", ".bash_aliases", ".bash_logout", ".envrc", ".ripgreprc", ".mcp.json",
    ".claude.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnp.cjs", ".pnp.loader.mjs", ".pnp.js",
    ".pnp.data.json", ".pnpmfile.cjs", "bunfig.toml", ".bunfig.toml", ".bazelrc", ".bazelversion",
    ".bazeliskrc", ".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", "lefthook.yaml",
    ".lefthook.yaml", "gradle-wrapper.properties", "maven-wrapper.properties", ".devcontainer.json",
    "pyrightconfig.json",
))
CONFIG_DIRS = frozenset((".git", ".vscode", ".idea", ".claude", ".husky", ".cargo", ".devcontainer", ".yarn", ".mvn"))
MAX_GLOB_MATCHES = 2000


def config_file_reason(real: str) -> str | None:
    """Why acceptEdits must ask before writing `real`, or None."""
    parts = [fold(p) for p in real.split("/") if p]
    if not parts:
        return None
    if parts[-1] in CONFIG_NAMES or any(p in CONFIG_DIRS for p in parts[:-1]) or is_loaded(parts):
        return f"writes a file that configures agents or editors ({real})"
    if any(parts[i] == ".config" and parts[i + 1] == "git" for i in range(len(parts) - 1)):
        return f"writes git configuration ({real})"
    return None


def agent_pids(start: int | None = None) -> set[int]:
    """The agent's pid and every ancestor's (up to init), read from /proc/<pid>/stat."""
    pids: set[int] = set()
    pid = start if start is not None else os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


_PROC = re.compile(r"/proc/(self|thread-self|\d+)(/|$)")


def proc_reason(path: str, pids: set[int] | None = None) -> str | None:
    """Why `path` (as given, and resolved) is inside one of the agent's own /proc directories, or None."""
    for candidate in {os.path.normpath(path) if path.startswith("/") else path, os.path.realpath(path)}:
        m = _PROC.match(candidate)
        if not m:
            continue
        who = m.group(1)
        if who in ("self", "thread-self") or int(who) in (pids if pids is not None else agent_pids()):
            return f"the agent's own process ({candidate}: its environment holds the API key)"
    return None


def _expand(word: str, cwd: str) -> list[str]:
    path = word if word.startswith("/") else os.path.join(cwd, word)
    if not any(c in word for c in "*?["):
        return [path]
    out = [path]
    for i, match in enumerate(glob.iglob(path)):
        if i >= MAX_GLOB_MATCHES:
            break
        out.append(match)
    return out


_OWN_PROC = re.compile(r"^/proc/(self|thread-self)(/|$)")


def words_proc_reason(words: Iterable[str], cwds: Iterable[str]) -> str | None:
    """The first Bash word that names (or globs to) one of the agent's /proc directories, from any of the
    directories the command may run in."""
    pids = agent_pids()
    for cwd in cwds:
        for word in words:
            for value in (word, *word.split("=", 1)[1:]):  # `--file=/proc/self/environ` too
                in_proc = os.path.realpath(cwd).startswith("/proc")
                if "proc" not in value and not in_proc and not any(c in value for c in "*?["):
                    continue
                for path in _expand(value, cwd):
                    if _OWN_PROC.match(os.path.normpath(os.path.join(cwd, path))):
                        continue  # in a command, /proc/self is that command's own process, not the agent's
                    why = proc_reason(path, pids)
                    if why:
                        return why
    return None
