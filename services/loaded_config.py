"""What an agent loads from a folder as configuration or instructions, at any depth: the one vocabulary.

A session started in a folder (the project or any folder below it) reads these from it: settings, hooks and
allow rules (`.claude/`, `.agents/`), MCP and LSP servers (`.mcp.json`, `.lsp.json`), its variables
(`.env*`), what git runs (`.git/config`, `.git/hooks`, `.gitattributes` naming filters and drivers), what the
shell runs on entering it (`.envrc`) and the instruction files (`CLAUDE.md`, `CLAUDE.local.md`, `AGENTS.md`).
A write there is a write into a later session, so:

- the Bash sandbox keeps every existing one read-only under each writable root (tools/sandbox.py);
- the permission gate asks before Edit/Write/Bash write them (tools/permissions.py `is_protected`: the
  ones that run code or grant trust, always; tools/protected_paths.py: all of them, in acceptEdits too).

Names are compared case-folded, as Claude Code does (a case-insensitive file system opens `Claude.md`).
"""

from __future__ import annotations

from collections.abc import Sequence

# Everything below these directories is configuration.
LOADED_DIRS = (".claude", ".agents")
# Files that run code or grant trust when loaded.
LOADED_FILES = (".mcp.json", ".lsp.json", ".envrc", ".gitattributes")
# Files that steer the next session's model (the user asks for them to be edited: /init writes CLAUDE.md).
INSTRUCTION_FILES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md")
# `.env`, `.env.local`, `.env.production`...: the agent's own variables (ANTHROPIC_BASE_URL among them).
DOTENV_PREFIX = ".env"
# Inside any `.git` directory: what git executes or obeys.
GIT_LOADED = ("config", "config.worktree", "hooks")


def fold(text: str) -> str:
    """Claude Code's case folding: the dotless i and the long s fold to ASCII on case-insensitive filesystems."""
    return text.lower().replace("\u0131", "i").replace("\u017f", "s")


_DIRS = frozenset(fold(n) for n in LOADED_DIRS)
_FILES = frozenset(fold(n) for n in LOADED_FILES)
_INSTRUCTIONS = frozenset(fold(n) for n in INSTRUCTION_FILES)
_GIT = frozenset(GIT_LOADED)


def is_loaded_name(name: str) -> bool:
    """Whether an entry called `name` is loaded as a whole, wherever it lies (a directory: all below it)."""
    low = fold(name)
    return low in _DIRS or low in _FILES or low in _INSTRUCTIONS or low.startswith(DOTENV_PREFIX)


def is_instructions(name: str) -> bool:
    return fold(name) in _INSTRUCTIONS


def runs_code(parts: Sequence[str]) -> bool:
    """Whether the path (its components) is loaded configuration that runs code or grants trust: inside
    `.claude/` or `.agents/`, a `.mcp.json`, `.lsp.json`, `.envrc`, `.gitattributes`, `.env*`, or a
    `.git/config`, `.git/hooks` (at any depth)."""
    folded = [fold(p) for p in parts if p and p != "/"]
    if not folded:
        return False
    name = folded[-1]
    if any(p in _DIRS for p in folded) or name in _FILES or name.startswith(DOTENV_PREFIX):
        return True
    return any(folded[i] == ".git" and folded[i + 1] in _GIT for i in range(len(folded) - 1))


def is_loaded(parts: Sequence[str]) -> bool:
    """Whether the path is anything a later session loads: `runs_code`, or an instruction file."""
    return runs_code(parts) or bool(parts) and is_instructions(parts[-1])
