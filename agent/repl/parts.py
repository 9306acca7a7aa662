"""What the REPL's parts share: the open question they all look at, and the attributes `Repl.__init__`
sets and the methods one part calls on another, declared once so each part (screen, input box, questions,
turns, rewind, MCP start-up, terminal) type-checks on its own. `agent/repl/session.py` assembles the parts
into `Repl`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from rich.console import Console

    from agent.loop.factory import AppOptions
    from agent.repl.image_input import PendingImages
    from agent.repl.live_area import AppLiveArea
    from agent.repl.notifications import TerminalNotifier
    from agent.repl.render import Renderer
    from agent.repl.state import ReplState
    from agent.repl.status_line import StatusLine
    from agent.slash.router import CommandContext, CommandRouter
    from tools.checkpoints import CheckpointStore
    from tools.permissions import Answer, PermissionRequest, PermissionResult


@dataclass
class Question:
    """An open question in the input area: the permission menu, or a line of text."""

    kind: str  # "menu" | "text"
    text: str = ""
    request: Any = None
    selected: int = 0
    kept: Any = None  # the input box's text, put back when the question closes
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    def answer(self, value: str | None) -> None:
        if not self.future.done():
            self.future.set_result(value)


class ReplParts:
    """The base of every part: declarations only (set by `Repl.__init__`, defined by the other parts)."""

    opts: AppOptions
    cwd: Path
    console: Console
    clock: Callable[[], float]
    router: CommandRouter
    engine: Any
    mcp: Any
    state: ReplState
    live: AppLiveArea
    renderer: Renderer
    session: PromptSession
    status_line: StatusLine | None
    ctx: CommandContext
    notifier: TerminalNotifier
    checkpoints: CheckpointStore
    pending_images: PendingImages
    next_default: str
    _started: float
    _turn_task: asyncio.Task | None
    _question: Question | None
    _ask_lock: asyncio.Lock
    _permission_lock: asyncio.Lock
    _pending_inject: list[Any]
    _clipboard_task: asyncio.Task | None

    if TYPE_CHECKING:
        def dispatch(self, event: Any) -> None: ...
        def say(self, text: str, style: str = "") -> None: ...
        def _invalidate(self) -> None: ...
        def refresh_status_line(self) -> None: ...
        def answer(self, value: str | None) -> None: ...
        def submit_text(self, text: str) -> None: ...
        def on_ctrl_c(self) -> None: ...
        async def ask_text(self, question: str) -> str | None: ...
        async def ask_yes_no(self, question: str) -> bool: ...
        async def pick(self, title: str, options: list[tuple[str, str]]) -> str | None: ...
        async def ask(self, request: PermissionRequest) -> Answer | PermissionResult: ...
