"""The input box's completion (`/commands`, `@paths`, `@server:uri` once MCP servers run) and where the
prompt history is kept."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit.application.current import get_app
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition

from agent.slash.router import CommandRouter
from services.config import project_dir

MAX_PATH_COMPLETIONS = 200


def history_path(cwd: Path) -> Path:
    return project_dir(cwd) / "prompt_history"


@Condition
def slash_name_typed() -> bool:
    """The menu opens as a command name is typed (`/`, `/co`...), as Claude Code's does; paths (`@`) and
    arguments complete on Tab only, so typing prose never pops a menu."""
    text = get_app().current_buffer.text
    return text.startswith("/") and " " not in text and "\n" not in text


class ReplCompleter(Completer):
    """`/name` at the start of the line completes commands; a word starting with `@` completes paths."""

    def __init__(self, router: CommandRouter, cwd: Path):
        self.router = router
        self.cwd = cwd
        self.mcp: Any = None  # set once MCP servers start: `@server:uri` completion

    async def get_completions_async(self, document: Document, complete_event: Any):  # noqa: ANN201
        for c in self.get_completions(document, complete_event):
            yield c
        word = document.get_word_before_cursor(WORD=True)
        if self.mcp is not None and word.startswith("@") and not document.text_before_cursor.startswith("/"):
            from agent.slash.mcp import mention_completions

            for text, meta in await mention_completions(self.mcp, word[1:]):
                yield Completion("@" + text, start_position=-len(word), display_meta=meta)

    def get_completions(self, document: Document, complete_event: Any) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            typed = before[1:].lower()
            for name in self.router.names():
                if name.lower().startswith(typed):
                    cmd = self.router.get(name)
                    yield Completion("/" + name, start_position=-len(before), display_meta=cmd.help if cmd else "")
            return
        if before.startswith("/output-style ") and "\n" not in before:
            yield from self._styles(before[len("/output-style "):])
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word[1:])

    def _styles(self, typed: str) -> Iterable[Completion]:
        """`/output-style ` completes the style names (any case), with their descriptions."""
        from agent.output_style import style_names

        for name in style_names(self.cwd):
            if name.lower().startswith(typed.strip().lower()):
                yield Completion(name, start_position=-len(typed))

    def _paths(self, fragment: str) -> Iterable[Completion]:
        head, _, prefix = fragment.rpartition("/")
        base = Path(head).expanduser() if head else Path(".")
        directory = base if base.is_absolute() else self.cwd / base
        try:
            entries = sorted(directory.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        count = 0
        for entry in entries:
            name = entry.name
            if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
                continue
            suffix = "/" if entry.is_dir() else ""
            yield Completion(name + suffix, start_position=-len(prefix), display=name + suffix)
            count += 1
            if count >= MAX_PATH_COMPLETIONS:
                return
