"""Claude Code's instruction files, walked as Claude Code 2.1.332 walks them (recorded with the real binary).

Order (each file followed by its imports, depth first):
1. the user's: `~/.claude/CLAUDE.md`, `~/.claude/rules/**/*.md` (unconditional ones), then this agent's own
   `<agent home>/AGENTS.md`;
2. in a trusted folder only, each directory from the outermost ancestor of the working directory (the
   filesystem root itself excluded) down to it: `CLAUDE.md`, `.claude/CLAUDE.md` (or `AGENTS.md` when the
   directory has neither: the file in use there), `.claude/rules/**/*.md` (unconditional), `CLAUDE.local.md`.

A rule with `paths:` front matter waits until the model touches a matching file (`tracker.py`). Every file
is loaded once (by real path: a cycle of imports is cut), imports nest at most 4 levels below the file that
starts them (Claude Code stops at depth 5 counting that file as 0), and an import must stay in its scope:
the project for project files, the user's home for the user's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from services.instructions.globs import matches_path
from services.instructions.markdown import TEXT_EXTENSIONS, parse
from services.instructions.safe_read import read_instruction_file

MAX_IMPORT_DEPTH = 5  # a file at depth 5 is not loaded: the root file is 0, so imports go 4 levels deep
PROJECT_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
AGENTS_FILE = "AGENTS.md"
LOCAL_FILE = "CLAUDE.local.md"
RULES_DIR = ".claude/rules"


@dataclass(frozen=True)
class InstructionFile:
    path: Path  # as found, not resolved (Claude Code shows that path)
    kind: str  # "User" | "Project" | "Local"
    content: str  # front matter and block comments removed
    parent: Path | None = None  # the importing file
    globs: tuple[str, ...] | None = None  # a conditional rule's `paths:`
    base: Path | None = None  # a rule's globs are relative to this folder (the one holding `.claude`)

    def hook_input(self, trigger: Path | None = None) -> tuple[str, dict[str, object]]:
        """Claude Code's InstructionsLoaded (load_reason, input): at start (`trigger` None) a file is in the
        prompt or an import of one; later it joined because the model touched `trigger`."""
        if trigger is None:
            reason = "include" if self.parent is not None else "session_start"
        else:
            reason = "nested_traversal" if self.globs is None else "path_glob_match"
        fields: dict[str, object] = {"file_path": str(self.path), "memory_type": self.kind, "load_reason": reason}
        if self.globs is not None and trigger is not None:
            fields["globs"] = list(self.globs)
        if trigger is not None:
            fields["trigger_file_path"] = str(trigger)
        elif self.parent is not None:
            fields["parent_file_path"] = str(self.parent)
        return reason, fields


@dataclass(frozen=True)
class Places:
    """Where the files are: the user's home and Claude config folder, the agent home, the project."""

    cwd: Path
    user_home: Path
    claude_dir: Path
    agent_home: Path | None
    project_root: Path

    @classmethod
    def for_cwd(cls, cwd: Path, user_home: Path, claude_dir: Path | None = None,
                agent_home: Path | None = None) -> Places:
        cwd = Path(os.path.abspath(cwd))
        return cls(cwd, user_home, claude_dir or user_home / ".claude", agent_home, project_root(cwd))


def project_root(cwd: Path) -> Path:
    """The repository root holding cwd (a folder with `.git`), else cwd."""
    for d in (cwd, *cwd.parents):
        if os.path.lexists(d / ".git"):
            return d
    return cwd


@dataclass
class Walk:
    places: Places
    excludes: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    notices: list[str] = field(default_factory=list)
    watched: list[Path] = field(default_factory=list)  # every path looked at: a change rebuilds the prompt

    def scope(self, kind: str, where: Path) -> list[Path]:
        if kind == "User":
            roots = [self.places.user_home, self.places.claude_dir]
            return roots + ([self.places.agent_home] if self.places.agent_home else [])
        return [self.places.project_root, where]

    def excluded(self, path: Path) -> bool:
        text = Path(os.path.abspath(path)).as_posix()
        return any(matches_path(p, text) for p in self.excludes)

    def load(self, path: Path, kind: str, where: Path, depth: int = 0, parent: Path | None = None,
             base: Path | None = None) -> list[InstructionFile]:
        """The file and its imports (depth first), or nothing (absent, excluded, seen, refused, empty)."""
        self.watched.append(path)
        key = os.path.realpath(path)
        if depth >= MAX_IMPORT_DEPTH or key in self.seen or self.excluded(path):
            return []
        if depth > 0 and path.suffix and path.suffix not in TEXT_EXTENSIONS:
            return []
        result = read_instruction_file(path, self.scope(kind, where), self.places.user_home)
        if result.notice:
            self.notices.append(result.notice)
        if result.text is None:
            return []
        self.seen.add(key)
        parsed = parse(result.text)
        if not parsed.content.strip():
            return []
        out = [InstructionFile(path, kind, parsed.content, parent, parsed.globs, base)]
        for raw in parsed.imports:
            target = self.import_target(raw, path, kind, where)
            if target is not None:
                out += self.load(target, kind, where, depth + 1, path)
        return out

    def import_target(self, raw: str, importer: Path, kind: str, where: Path) -> Path | None:
        """The imported path, or None with a notice when it leaves the importer's scope."""
        if raw.startswith("~/"):
            target = self.places.user_home / raw[2:]
        else:
            target = importer.parent / raw
        target = Path(os.path.normpath(target))
        roots = [Path(os.path.normpath(r)) for r in self.scope(kind, where)]
        if any(target == r or r in target.parents for r in roots):
            return target
        if os.path.lexists(target):
            place = "the user's home" if kind == "User" else "the project"
            self.notices.append(f"ignored import @{raw} in {importer}: it leaves {place} ({target})")
        return None

    def rules(self, rules_dir: Path, kind: str, where: Path, base: Path) -> list[InstructionFile]:
        """Every `.md` below the rules folder (sorted; links must stay in scope), each with its imports."""
        self.watched.append(rules_dir)
        out: list[InstructionFile] = []
        for path in self._rule_paths(rules_dir, kind, where, set()):
            out += self.load(path, kind, where, base=base)
        return out

    def _rule_paths(self, folder: Path, kind: str, where: Path, visited: set[str]) -> list[Path]:
        real = os.path.realpath(folder)
        if real in visited or not os.path.isdir(folder):
            return []
        visited.add(real)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        found: list[Path] = []
        for name in names:
            entry = folder / name
            if os.path.isdir(entry):
                if self._dir_in_scope(entry, kind, where):
                    found += self._rule_paths(entry, kind, where, visited)
            elif name.endswith(".md"):
                found.append(entry)
        return found

    def _dir_in_scope(self, folder: Path, kind: str, where: Path) -> bool:
        real = os.path.realpath(folder)
        if any(real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + "/")
               for r in self.scope(kind, where)):
            return True
        self.notices.append(f"ignored {folder}: it is a link out of the project ({real})")
        return False


def user_files(walk: Walk) -> list[InstructionFile]:
    p = walk.places
    out = walk.load(p.claude_dir / "CLAUDE.md", "User", p.user_home)
    out += walk.rules(p.claude_dir / "rules", "User", p.user_home, p.cwd)
    if p.agent_home is not None:
        out += walk.load(p.agent_home / AGENTS_FILE, "User", p.agent_home)
    return out


def directory_files(walk: Walk, d: Path) -> list[InstructionFile]:
    """One directory's project and local files, in Claude Code's order."""
    names = list(PROJECT_FILES)
    if not any(os.path.lexists(d / n) for n in PROJECT_FILES):
        names.append(AGENTS_FILE)
    out: list[InstructionFile] = []
    for name in names:
        out += walk.load(d / name, "Project", d)
    out += walk.rules(d / RULES_DIR, "Project", d, d)
    out += walk.load(d / LOCAL_FILE, "Local", d)
    return out


def walked_dirs(cwd: Path) -> list[Path]:
    """cwd and its ancestors, outermost first, without the filesystem root."""
    return [d for d in reversed((cwd, *cwd.parents)) if d != d.parent]


@dataclass
class Loaded:
    files: list[InstructionFile]  # in the prompt from the start
    conditional: list[InstructionFile]  # rules waiting for a matching file
    notices: list[str]
    watched: list[Path]
    seen: set[str]


def load_instructions(places: Places, trusted: bool, excludes: list[str] | None = None) -> Loaded:
    walk = Walk(places, list(excludes or []))
    every = user_files(walk)
    if trusted:
        for d in walked_dirs(places.cwd):
            every += directory_files(walk, d)
    files = [f for f in every if f.globs is None]
    conditional = [f for f in every if f.globs is not None]
    # A conditional rule is not "seen" until it is announced: its real path leaves the seen set.
    seen = walk.seen - {os.path.realpath(f.path) for f in conditional}
    return Loaded(files, conditional, walk.notices, walk.watched, seen)
