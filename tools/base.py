"""The Tool interface and the context a tool runs in.

A tool is a small object: a name the model knows, a detailed description, a full JSON Schema for its
input, whether it is read-only / concurrency-safe for a given input, the size it may return before
the tool-result budget relocates its output (`max_result_chars`; `math.inf` for self-bounded tools),
and an async `call`. Failures are returned as `ToolOutput(is_error=True)`, or raised as `ToolError`;
any other exception is turned into an error result by the orchestrator, never out of the loop.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from services.messages import Message

if TYPE_CHECKING:
    from services.instructions import InstructionTracker
    from services.usage import Usage


class TodoItem(TypedDict):
    """One step of TodoWrite's plan, as stored, recorded and sent back to the model."""

    content: str
    status: str  # pending | in_progress | completed
    activeForm: NotRequired[str]


# The session's slots for state owned by one tool module (which imports this one, so the slot is typed
# by what others may call; the owner's accessor narrows it: background_tasks.registry, checkpoint_store).
class BackgroundTasks(Protocol):
    def kill_all(self) -> int: ...


class Checkpoints(Protocol):
    def before_write(self, name: str, input: dict[str, Any], cwd: Path) -> None: ...

    async def before_bash(self, cwd: Path) -> None: ...

# Default per-result threshold for tools that do not declare their own (MCP tools and others).
DEFAULT_MAX_RESULT_CHARS = 50_000
UNBOUNDED = math.inf


class ToolError(Exception):
    """A tool failure with a one-line message that says what to do next."""


def tool_use_error(message: str) -> str:
    """Claude Code's wrapper for a call refused before it ran (unknown tool, bad input, a failed precondition)."""
    return f"<tool_use_error>{message}</tool_use_error>"


@dataclass
class ToolOutput:
    content: str | list[dict[str, Any]]
    is_error: bool = False
    # One short phrase for the UI: "120 lines", "exit 1, 2.3 s".
    summary: str = ""
    # Messages to append after the tool_result message (e.g. a skill body); pairing stays intact.
    new_messages: list[Message] = field(default_factory=list)


@dataclass
class SessionState:
    """Mutable state that tools share across calls within one session."""

    cwd: Path
    # path -> read record; owned by the Read/Write/Edit tools (see tools/read_state.py).
    read_state: dict[str, Any] = field(default_factory=dict)
    # The session's token usage; sub-agents add theirs (tools/agent_tool.py). None: nobody counts.
    usage: Usage | None = None
    # Appends a record to the session's transcript (plans, sub-agent usage); None: no transcript.
    record: Callable[[dict[str, Any]], None] | None = None
    # Instruction files that join when a tool first touches their folder; None: none are announced.
    instructions: InstructionTracker | None = None
    # TodoWrite's plan; None until the model writes one (an empty list is a cleared plan).
    todos: list[TodoItem] | None = None
    # Background Bash runs, made on first use (tools/background_tasks.registry).
    background_tasks: BackgroundTasks | None = None
    # Per-turn file checkpoints for /rewind, set by the REPL; None: nothing is checkpointed.
    checkpoints: Checkpoints | None = None
    # Deferred MCP tools and the ToolSearch state (tools/tool_search.ToolSearchSession); None: no deferral.
    tool_search: Any = None
    # Calls of the capped tools so far (services/session_caps.py).
    capped_calls: dict[str, int] = field(default_factory=dict)


def _always_visible(tool_use_id: str) -> bool:
    return True


@dataclass
class ToolContext:
    """What a tool may use while it runs. One per call (`for_call`), sharing the session state."""

    session: SessionState
    project_root: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    session_id: str = ""
    session_dir: Path | None = None
    tool_use_id: str = ""
    # Whether an earlier tool_result is still visible to the model in full (not cleared, spilled,
    # dropped or summarised away). The engine supplies the real answer from the last outbound copy.
    is_visible: Any = _always_visible
    # Depth of nested agents (0 for the main loop).
    depth: int = 0
    # The loop itself, for a tool that runs a sub-loop (the Agent tool): `run_loop(**query params)` returns
    # the loop's event stream. The engine supplies it bound to its QueryDeps, so tools never import the loop.
    run_loop: Any = None

    @property
    def cwd(self) -> Path:
        return self.session.cwd

    def for_call(self, tool_use_id: str) -> ToolContext:
        return replace(self, tool_use_id=tool_use_id)

    def search_dir(self) -> Path:
        """Where a search with no path looks: the working directory while it is inside the project, else the
        project root (a `cd` in Bash must not move Grep and Glob to places nobody allowed them to read)."""
        cwd = Path(self.session.cwd)
        try:
            real, root = os.path.realpath(cwd), os.path.realpath(self.project_root)
        except (OSError, ValueError):
            return Path(self.project_root)
        return cwd if real == root or real.startswith(root.rstrip("/") + "/") else Path(self.project_root)

    def resolve(self, path: str) -> Path:
        """A path from the model, resolved against the session's working directory."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.session.cwd / p)


class Tool:
    """Base class; subclasses set the class attributes and implement `call`."""

    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}
    max_result_chars: float = DEFAULT_MAX_RESULT_CHARS
    # A tool that never changes anything sets this; one that depends on its input overrides is_read_only.
    read_only: bool = False

    def is_read_only(self, input: dict[str, Any]) -> bool:
        return self.read_only

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return self.is_read_only(input)

    def is_enabled(self) -> bool:
        """A tool that is not enabled is not offered to the model at all."""
        return True

    def describe(self, input: dict[str, Any]) -> str:
        """One-line label of a call for the UI and permission questions: `Read src/app.py`."""
        for key in ("file_path", "path", "pattern", "command", "url", "query", "description"):
            value = input.get(key)
            if isinstance(value, str) and value:
                short = value if len(value) <= 80 else value[:79] + "…"
                return f"{self.name} {short}"
        return self.name

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        """What a permission rule matches against: ("path", p) or ("command", c), or None."""
        for key in ("file_path", "path"):
            if isinstance(input.get(key), str):
                return ("path", input[key])
        if isinstance(input.get("command"), str):
            return ("command", input["command"])
        return None

    def normalize_input(self, input: dict[str, Any]) -> dict[str, Any]:
        """Map accepted aliases onto the schema's fields before validation (default: unchanged)."""
        return input

    def spill_preview(self, text: str) -> str | None:
        """A tool may shape its own spill preview (Bash: head and tail). None = the default."""
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError

    def to_api(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
