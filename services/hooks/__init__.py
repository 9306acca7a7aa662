"""Hooks seam: the loop and the orchestrator call these; the default does nothing.

The command-hook implementation (`.agents/hooks.json`) subclasses `Hooks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class HookDecision:
    """`deny` with a reason (PreToolUse, UserPromptSubmit), or `block` with feedback (Stop)."""

    action: str  # "allow" | "deny" | "block" | "stop"
    reason: str = ""
    additional_context: str = ""


class Hooks:
    async def session_start(self, source: str) -> None:
        return None

    async def user_prompt_submit(self, prompt: str) -> HookDecision | None:
        return None

    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        return None

    async def post_tool_use(
        self, name: str, input: dict[str, Any], tool_use_id: str, result: Any, is_error: bool
    ) -> None:
        return None

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        return None


NO_HOOKS = Hooks()
