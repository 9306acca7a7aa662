"""One Bash command line, analysed for the permission gate: every command it runs (behind wrappers and
inside `bash -c` strings), every file it writes or reads (redirections and the command table), the options
that run other code, and the reasons that force a question. Pure functions of the text and a `Scope`.

What the text cannot prove is a question: an unknown word, an unknown place, a pattern whose matches
matter, or a path written through a link made earlier in the same line, all ask.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from services.trace import trace
from tools.bash_parse import NOT_WRITES, ParsedCommand, parse_command
from tools.command_effects import FileUse, effects
from tools.shell_words import UNKNOWN, Word
from tools.shell_wrappers import Run, runs

SECRET = "would read a secret: "  # the start of a reason the gate refuses outright (outside bypass)
_MOVES = frozenset({"cd", "pushd", "popd"})
# Commands whose path arguments are files they read: outside the read scope they ask, like the Read tool.
READERS = frozenset({"cat", "head", "tail", "less", "more", "ls", "find", "wc", "file", "stat", "diff", "cmp",
                     "od", "xxd", "hexdump", "strings", "base64", "md5sum", "sha1sum", "sha256sum", "sha512sum",
                     "cut", "sort", "uniq", "tac", "nl", "jq", "tree", "du", "readlink", "realpath", "bat",
                     "source", ".", "grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "sed", "paste", "comm",
                     "join", "fold", "fmt", "iconv", "zcat", "bzcat", "xzcat", "gzip", "tr", "column", "cp",
                     "rsync", "scp", "tar", "zip", "curl"})
_LISTERS = frozenset({"ls", "find", "rg", "ag", "du", "tree"})
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "sed"})


@dataclass
class Use:
    """A file one command of the line touches, with where that command runs."""

    file: FileUse
    index: int  # which simple command (links made by another one make this path unknown)
    cwd_moved: bool = False


@dataclass
class Analysis:
    parsed: ParsedCommand
    runs: list[list[Run]] = field(default_factory=list)  # per simple command: itself, then what it runs
    problems: list[str] = field(default_factory=list)
    runs_code: list[str] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)

    def all_runs(self) -> list[Run]:
        return [r for chain in self.runs for r in chain]


@lru_cache(maxsize=256)
def analyze(command: str, home: str | None = None) -> Analysis:
    """The whole analysis of a command line (cached: the gate asks several questions of one line). It
    never raises: a failure is a problem, so the line asks."""
    try:
        return _analyze(command, home)
    except Exception as exc:  # fail closed: an analysis that broke proves nothing
        trace("permissions.bash_analysis_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        return Analysis(ParsedCommand(), problems=[f"the command could not be analysed ({type(exc).__name__})"])


def _analyze(command: str, home: str | None) -> Analysis:
    parsed = parse_command(command, home)
    out = Analysis(parsed, problems=list(parsed.problems))
    for index, cmd in enumerate(parsed.commands):
        chain, problems = runs(cmd.args, home)
        out.runs.append(chain)
        out.problems.extend(p for p in problems if p not in out.problems)
        for run in chain:
            e = effects(run.args)
            out.runs_code.extend(e.runs_code)
            out.uses.extend(Use(f, index, run.cwd_moved) for f in e.files)
            access = "read-tree" if _recursive(run) or run.name == "git" else "read"
            out.uses.extend(Use(FileUse(w, access), index, run.cwd_moved) for w in _read_args(run))
    for r in parsed.redirects:
        access = "read" if r.input_only else "write"
        out.uses.append(Use(FileUse(r.target, access), r.command if r.command is not None else -1))
    return out


def _recursive(run: Run) -> bool:
    """A reading command that walks directories (a search below /proc reaches every environ)."""
    if run.name in ("rg", "find", "tree", "du", "ag", "tar", "zip", "rsync"):
        return True
    return any(a.value is not None and (a.value in ("--recursive", "--dereference-recursive")
                                        or re.fullmatch(r"-[a-zA-Z]*[rR][a-zA-Z]*", a.value)) for a in run.args[1:])


def _read_args(run: Run) -> list[Word]:
    """The path arguments of a command that reads files (its options and a search pattern left out); a
    lister or searcher with none reads the directory it runs in."""
    if run.name == "git":
        return _git_dirs(run)
    if run.name not in READERS:
        return []
    words = [a for a in run.args[1:] if a.value is None or not a.value.startswith("-")]
    if run.name in _PATTERN_FIRST and not any(a.value in ("-e", "-f", "--regexp", "--file") for a in run.args):
        words = words[1:]
    if not words and (run.name in _LISTERS or _recursive(run)):
        words = [Word(".")]
    return words


def _git_dirs(run: Run) -> list[Word]:
    """`git -C DIR`: git reads that tree and runs that repository's configuration."""
    out = []
    for i, a in enumerate(run.args[1:-1], start=1):
        if a.value is not None and not a.value.startswith("-") and run.args[i - 1].value not in ("-C", "-c"):
            break
        if a.value == "-C":
            out.append(run.args[i + 1])
    return out


# -- the checks that need the place -------------------------------------------------------------------


@dataclass
class Scope:
    cwd: Path
    write_dirs: list[str]  # real paths: the project root and --add-dirs
    read_dirs: list[str]
    protected: Callable[[str], bool]
    secret: Callable[[str, bool], str | None]


def inside(real: str, dirs: list[str]) -> bool:
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in dirs)


def _cd_target(run: Run) -> str | None:
    """The one literal directory of `cd DIR` (no options, no `-`, no pattern), else None."""
    args = run.args
    if run.name != "cd" or len(args) != 2 or not args[1].known:
        return None
    value = args[1].value or ""
    return None if value.startswith("-") or value == "" else value


def places(analysis: Analysis, scope: Scope) -> tuple[list[str | None], set[int]]:
    """Every directory a relative path of the line may be relative to (None: a place only known when it
    runs), and the ids of the `cd`s that are harmless (from every place it may start, a directory inside
    the project). Subshells, pipelines and `||` make it unsure whether a `cd` took effect, so the places
    only grow: each path is checked against all of them."""
    current: list[str | None] = [str(scope.cwd)]
    harmless: set[int] = set()
    for run in analysis.all_runs():
        if run.name not in _MOVES and not (run.args and run.args[0].value in _MOVES):
            continue
        target = _cd_target(run)
        new = [None if target is None or base is None else os.path.realpath(os.path.join(base, target))
               for base in current]
        if not run.via and all(p is not None and os.path.isdir(p) and inside(p, scope.write_dirs) for p in new):
            harmless.add(id(run))
        current += [p for p in new if p not in current]
        if len(current) > 16:
            current.append(None)
            break
    return current, harmless


def harmless_runs(analysis: Analysis, scope: Scope) -> set[int]:
    try:
        return places(analysis, scope)[1]
    except Exception as exc:  # fail closed: no cd is harmless
        trace("permissions.bash_check_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        return set()


def reasons(analysis: Analysis, scope: Scope) -> list[str]:
    """Why the line must ask whatever the rules say (outside writes, protected paths, secrets, links)."""
    try:
        return _reasons(analysis, scope)
    except Exception as exc:  # fail closed
        trace("permissions.bash_check_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        return [f"the command's paths could not be checked ({type(exc).__name__})"]


def _reasons(analysis: Analysis, scope: Scope) -> list[str]:
    where = places(analysis, scope)[0]
    out: list[str] = []
    links = _links(analysis, scope, where)
    for use in analysis.uses:
        for reason in _use_reasons(use, scope, where, links):
            if reason not in out:
                out.append(reason)
    return out


def _resolve(word: Word, where: list[str | None], moved: bool) -> list[str] | None:
    """The real paths a path word may name, or None when it cannot be known."""
    value = word.value
    if value is None:
        return None
    if value.startswith("/"):
        return [os.path.realpath(value)]
    if moved or None in where:
        return None
    return [os.path.realpath(os.path.join(w, value)) for w in where if w is not None]


def _links(analysis: Analysis, scope: Scope, where: list[str | None]) -> list[tuple[int, str | None]]:
    out: list[tuple[int, str | None]] = []
    for use in analysis.uses:
        if use.file.access == "link":
            reals = _resolve(use.file.word, where, use.cwd_moved)
            out.extend((use.index, r) for r in (reals if reals is not None else [None]))
    return out


def _use_reasons(use: Use, scope: Scope, where: list[str | None],
                 links: list[tuple[int, str | None]]) -> list[str]:
    word, access = use.file.word, use.file.access
    writing = not access.startswith("read")
    if word.value in NOT_WRITES and not word.glob:
        return []
    if word.glob:
        if writing:
            return [f"writes to files matching {word.value}, known only when it runs"]
        return [f"reads files matching {word.value} near secrets"] if _near_secrets(word.value or "", scope) else []
    if writing and (word.value or "").startswith("~"):
        return [f"writes {word.value}, which the program itself may read as a home directory"]
    reals = _resolve(word, where, use.cwd_moved)
    if reals is None:
        what = "writes" if writing else "reads"
        return [f"{what} a path known only when it runs ({word.value if word.value is not None else 'a variable, a substitution or an unknown word'})"]
    out: list[str] = []
    for real in reals:
        out.extend(_real_reasons(real, access, scope))
        if writing:
            out.extend(_through_link(real, use.index, links))
    return out


def _real_reasons(real: str, access: str, scope: Scope) -> list[str]:
    out = []
    if access.startswith("read"):
        secret = scope.secret(real, access == "read-tree")
        if secret:
            out.append(f"{SECRET}{secret} ({real})")
        if not inside(real, scope.read_dirs):
            out.append(f"reads outside the working directory ({real})")
        return out
    if not inside(real, scope.write_dirs):
        out.append(f"writes outside the working directory ({real})")
    elif _protected(real, scope) or (access == "tree" and _holds_protected(real, scope)):
        out.append(f"writes a protected path ({real}): configuration that runs code or grants trust")
    return out


def _holds_protected(real: str, scope: Scope) -> bool:
    """A recursive write below `real` reaches a protected path (checked one level down)."""
    try:
        names = os.listdir(real)
    except OSError:
        return False
    return any(_protected(os.path.join(real, n), scope) for n in names)


def _protected(real: str, scope: Scope) -> bool:
    """Protected names compared without case too: `.GIT/hooks` is `.git/hooks` on a case-insensitive disk."""
    return scope.protected(real) or scope.protected(real.lower())


def _through_link(real: str, index: int, links: list[tuple[int, str | None]]) -> list[str]:
    for link_index, link in links:
        if link_index == index:
            continue
        if link is None or real == link or real.startswith(link.rstrip("/") + "/"):
            return [f"writes {real} through a link or move made earlier in the line"]
    return []


def _near_secrets(pattern: str, scope: Scope) -> bool:
    """A pattern outside the project whose fixed part leads to /proc, the home directory or the root."""
    fixed = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    base = os.path.dirname(fixed) if "/" in fixed else "."
    real = os.path.realpath(scope.cwd / base)
    if inside(real, scope.read_dirs):
        return False
    risky = ["/proc", os.path.realpath(os.path.expanduser("~"))]
    return any(inside(r, [real]) or inside(real, [r]) for r in risky) or real == "/"


def unknown_names(analysis: Analysis) -> bool:
    """Some command of the line is named by a word only known when it runs (`$(echo rm) f`)."""
    return any(run.name is None for run in analysis.all_runs())


__all__ = ["UNKNOWN", "Analysis", "Scope", "analyze", "harmless_runs", "reasons", "unknown_names"]
