"""The permission gate: decides whether a tool call runs, asks the front end, or is denied.

Modes follow Claude Code: `default` (read-only tools run; others ask in the REPL and are denied in
one-shot runs unless allowed), `acceptEdits`, `plan` (read-only only), `bypassPermissions`.
The front end supplies the async `ask` hook; one-shot runs have none, so nothing ever blocks.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tools.base import Tool, ToolContext

REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)

MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
Answer = Literal["once", "always", "deny"]


@dataclass
class PermissionRequest:
    tool: Tool
    input: dict[str, Any]
    label: str
    reason: str = ""


@dataclass
class Verdict:
    allowed: bool
    message: str = ""
    # A denial by the user in the REPL ends the turn; a policy denial in one-shot does not.
    end_turn: bool = False


AskHook = Callable[[PermissionRequest], Awaitable[Answer]]


@dataclass
class PermissionGate:
    mode: Mode = "default"
    ask: AskHook | None = None
    # Session rules added by "always allow": (tool name, exact target or None for the whole tool).
    session_rules: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown permission mode {self.mode!r}; expected one of {', '.join(MODES)}")

    def _allowed_by_env(self) -> bool:
        return os.environ.get("ALLOW_WRITE") == "1"

    async def authorize(self, tool: Tool, input: dict[str, Any], ctx: ToolContext) -> Verdict:
        read_only = tool.is_read_only(input)
        if self.mode == "bypassPermissions" or read_only:
            return Verdict(True)
        if self.mode == "plan":
            return Verdict(False, f"Plan mode: {tool.name} is not read-only and cannot run. " + REJECT_MESSAGE)
        if self._allowed_by_env():
            return Verdict(True)
        target = tool.permission_target(input)
        for name, rule_target in self.session_rules:
            if name == tool.name and (rule_target is None or (target and target[1] == rule_target)):
                return Verdict(True)
        if self.ask is None:
            return Verdict(False, REJECT_MESSAGE)
        answer = await self.ask(PermissionRequest(tool, input, tool.describe(input)))
        if answer == "always":
            self.session_rules.append((tool.name, target[1] if target else None))
            return Verdict(True)
        if answer == "once":
            return Verdict(True)
        return Verdict(False, REJECT_MESSAGE, end_turn=True)
