"""`# note`: remember something in an instruction file the user knows, the way Claude Code's `#` did.

Enter saves to the first choice, the project's instruction file (`./CLAUDE.md`, or `./AGENTS.md` when
that is the file in use); the other choices are the user's `~/.claude/CLAUDE.md` and the project's
private `./CLAUDE.local.md`. One line names the file; the prompt builder sees the file change and the
next request's system prompt carries the note. The private files are created 0600; the project file
is meant to be shared (committed), so a new one gets the usual mode.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.private_fs import append_private


@dataclass(frozen=True)
class NoteTarget:
    label: str
    path: Path
    private: bool


def project_instruction_file(cwd: Path) -> Path:
    """CLAUDE.md, unless only AGENTS.md exists (then that is the file this project uses)."""
    if (cwd / "AGENTS.md").is_file() and not (cwd / "CLAUDE.md").is_file():
        return cwd / "AGENTS.md"
    return cwd / "CLAUDE.md"


def note_targets(cwd: Path, claude_dir: Path) -> list[NoteTarget]:
    project = project_instruction_file(cwd)
    return [
        NoteTarget(f"Project memory  ./{project.name}  (checked in, shared with the team)", project, False),
        NoteTarget(f"User memory     {claude_dir / 'CLAUDE.md'}  (all your projects)", claude_dir / "CLAUDE.md", True),
        NoteTarget("Local memory    ./CLAUDE.local.md  (this project, only you)", cwd / "CLAUDE.local.md", True),
    ]


def note_line(path: Path, note: str) -> str:
    """The text to append: `- note` on a line of its own."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    return ("\n" if text and not text.endswith("\n") else "") + f"- {note}\n"


def append_note(target: NoteTarget, note: str) -> None:
    line = note_line(target.path, note)
    if target.private:
        append_private(target.path, line)
        return
    target.path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line)


def choose(answer: str | None, count: int) -> int | None:
    """The menu's answer: Enter = the first choice, a digit = that one, Esc/Ctrl-C (None) = cancel."""
    if answer is None:
        return None
    answer = answer.strip()
    if not answer:
        return 0
    if answer.isdigit() and 1 <= int(answer) <= count:
        return int(answer) - 1
    return None


async def remember_note(note: str, cwd: Path, claude_dir: Path, say: Callable[[str, str], None],
                        ask_text: Callable[[str], Awaitable[str | None]], trusted: bool = True) -> Path | None:
    """Ask where (Enter = the project's file), append the note, say where it went. Returns the file."""
    if not note:
        say("Usage: # note to remember (saved to an instruction file the model reads)", "dim")
        return None
    targets = note_targets(cwd, claude_dir)
    say("Save this memory to:", "bold")
    for i, t in enumerate(targets, 1):
        say(f"{'❯' if i == 1 else ' '} {i}. {t.label}", "")
    picked = choose(await ask_text(f"Enter saves to ./{targets[0].path.name} · 1-{len(targets)} picks · "
                                   "Esc cancels: "), len(targets))
    if picked is None:
        say("Not saved.", "dim")
        return None
    target = targets[picked]
    try:
        append_note(target, note)
    except OSError as exc:
        say(f"Could not save to {target.path}: {exc.strerror or exc}", "red")
        return None
    say(f"Saved to {target.path}", "dim")
    if not trusted and picked != 1:
        say("This folder is not trusted: the model sees the project's files once it is (`agent trust`).", "dim")
    return target.path


def claude_dir_of(engine: Any) -> Path:
    places = getattr(getattr(engine, "prompt_builder", None), "places", None)
    if places is not None:
        return Path(places.claude_dir)
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
