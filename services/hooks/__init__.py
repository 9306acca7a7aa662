"""Hooks seam: the engine, the loop and the orchestrator call these; the default does nothing.

`services/hooks/command.py` has the real implementation (`CommandHooks`): shell commands configured
in `.agents/hooks.json` or `.claude/settings.json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Claude Code 2.1.332's words for a PreToolUse denial: "PreToolUse:<tool> hook error: <reason>", the
# reason defaulting to this.
DEFAULT_DENY_REASON = "Blocked by hook"


def hook_denial(tool_name: str, reason: str) -> str:
    return f"PreToolUse:{tool_name} hook error: {reason or DEFAULT_DENY_REASON}"


def hook_ask_denial(tool_name: str, reason: str) -> str:
    """A PreToolUse "ask" with nobody to ask (-p): its reason, else Claude Code's line."""
    return reason or f"Hook PreToolUse:{tool_name} asked for confirmation for this tool"


@dataclass
class HookDecision:
    """What a hook decided.

    - `deny` with a reason: PreToolUse refuses the call; UserPromptSubmit refuses the prompt.
    - `block` with feedback (`reason`): Stop sends the feedback back and the loop goes on.
    - `stop` (`{"continue": false}`): the turn ends here, `reason` says why.
    - `allow`, possibly with `additional_context` (UserPromptSubmit, SessionStart).
    """

    action: str  # "allow" | "deny" | "block" | "stop"
    reason: str = ""
    additional_context: str = ""
    # PreToolUse only: Claude Code's permissionDecision "allow" (no question; deny rules still hold) or
    # "ask" (a question even where a rule allows), and `updatedInput` (the gate judges the new input).
    permission: str = ""
    updated_input: dict[str, Any] | None = None


class Hooks:
    def wants(self, event: str) -> bool:
        """Whether any hook is configured for `event` (a front end skips work nobody reads)."""
        return False

    async def message_display(self, fields: dict[str, Any]) -> str | None:
        """Claude Code's MessageDisplay (turn_id, message_id, index, final, delta): the text to show in place
        of `delta`, or None for the original. Display-only: the stored message is untouched."""
        return None

    async def poll_files(self) -> None:
        """Between steps: ConfigChange for a hooks settings file changed since it was read (the change applies
        only if no hook blocks it), then FileChanged for the watched files that changed since the last look."""
        return None

    async def observe(self, event: str, target: str, fields: dict[str, Any]) -> None:
        """An event whose hooks only look (InstructionsLoaded, CwdChanged, DirectoryAdded): `target` is what
        the matcher is tested against ("" for none)."""
        return None

    async def elicitation(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        """An MCP server asks the user (mcp_server_name, message, mode, requested_schema...): the answer
        (`action`, maybe `content`) a hook gives instead of the user, or None to ask."""
        return None

    async def elicitation_result(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        """The user answered (`action`, `content`): a hook's replacement answer, or None to send it as is."""
        return None

    async def pre_skill_shell_command(self, fields: dict[str, Any]) -> HookDecision | None:
        """Before a custom command's `` !`cmd` `` line runs (tool_name, tool_input, tool_use_id, command_name,
        command_source, invoked_by): PreToolUse's contract."""
        return None

    async def pre_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        """Before the model changes (services/model_switch.py's fields): "deny" cancels it; `permission`
        "ask" wants the user to confirm."""
        return None

    async def post_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        """After the model changed: `additional_context` reaches the new model with the next request."""
        return None

    async def setup(self, trigger: str) -> None:
        """`--init`/`--init-only` ("init") or `--maintenance` ("maintenance"), before SessionStart."""
        return None

    async def session_start(self, source: str) -> HookDecision | None:
        """`source` is "startup", "resume", "clear" or "compact"."""
        return None

    async def user_prompt_submit(self, prompt: str) -> HookDecision | None:
        return None

    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        return None

    async def post_tool_use(
        self, name: str, input: dict[str, Any], tool_use_id: str, result: Any, is_error: bool,
        duration_ms: int | None = None,
    ) -> HookDecision | None:
        """After a call that succeeded: `additional_context` (or a `block` reason) goes to the model."""
        return None

    async def post_tool_use_failure(self, name: str, input: dict[str, Any], tool_use_id: str, error: str,
                                    is_interrupt: bool, duration_ms: int) -> HookDecision | None:
        """After a call that failed (an is_error result), instead of post_tool_use."""
        return None

    async def pre_compact(self, trigger: str, custom_instructions: str | None) -> None:
        """Before a compaction: `trigger` is "manual" (/compact) or "auto"."""
        return None

    async def post_compact(self, trigger: str, compact_summary: str) -> None:
        return None

    async def session_end(self, reason: str) -> None:
        """The session ends: "clear", "prompt_input_exit", or "other" (a -p run, an SDK session)."""
        return None

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        return None

    async def post_tool_batch(self, tool_calls: list[dict[str, Any]]) -> HookDecision | None:
        """Once after a batch of tool calls, before the next request (`additional_context` goes to the model)."""
        return None

    async def subagent_start(self, agent_id: str, agent_type: str) -> HookDecision | None:
        """A sub-agent starts (`additional_context` joins its conversation)."""
        return None

    async def permission_request(self, name: str, input: dict[str, Any]) -> HookDecision | None:
        """A permission question is about to be asked: "allow" (maybe with `updated_input`), "deny" (its
        `reason` for the model), or None to ask."""
        return None

    async def user_prompt_expansion(self, fields: dict[str, Any]) -> HookDecision | None:
        """A slash command was expanded (`expansion_type`, `command_name`, `command_args`, `command_source`,
        `prompt`): it may block the prompt or add context."""
        return None

    async def stop_failure(self, error: str, error_details: str, last_assistant_message: str) -> None:
        """The turn ended on an API error instead of an answer (`error`: Claude Code's category)."""
        return None

    async def notification(self, message: str, notification_type: str) -> None:
        """The user is being notified (a question waits, a long turn ended)."""
        return None

    async def subagent_stop(self, last_assistant_text: str, stop_hook_active: bool,
                            agent: dict[str, Any]) -> HookDecision | None:
        """A sub-agent is about to end (`agent`: agent_id, agent_type, agent_transcript_path)."""
        return None


class ForwardingHooks(Hooks):
    """Hooks that pass every event to `inner` unless a subclass handles it (a wrapper that adds to some
    events must not drop the others: a new event is forwarded here once, for every wrapper)."""

    def __init__(self, inner: Hooks | None = None) -> None:
        self.inner: Hooks = inner or Hooks()

    def wants(self, event: str) -> bool:
        return self.inner.wants(event)

    async def message_display(self, fields: dict[str, Any]) -> str | None:
        return await self.inner.message_display(fields)

    async def poll_files(self) -> None:
        await self.inner.poll_files()

    async def observe(self, event: str, target: str, fields: dict[str, Any]) -> None:
        await self.inner.observe(event, target, fields)

    async def elicitation(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return await self.inner.elicitation(fields)

    async def elicitation_result(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        return await self.inner.elicitation_result(fields)

    async def pre_skill_shell_command(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self.inner.pre_skill_shell_command(fields)

    async def pre_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self.inner.pre_model_switch(fields)

    async def post_model_switch(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self.inner.post_model_switch(fields)

    async def setup(self, trigger: str) -> None:
        await self.inner.setup(trigger)

    async def session_start(self, source: str) -> HookDecision | None:
        return await self.inner.session_start(source)

    async def user_prompt_submit(self, prompt: str) -> HookDecision | None:
        return await self.inner.user_prompt_submit(prompt)

    async def pre_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str) -> HookDecision | None:
        return await self.inner.pre_tool_use(name, input, tool_use_id)

    async def post_tool_use(self, name: str, input: dict[str, Any], tool_use_id: str, result: Any, is_error: bool,
                            duration_ms: int | None = None) -> HookDecision | None:
        return await self.inner.post_tool_use(name, input, tool_use_id, result, is_error, duration_ms)

    async def post_tool_use_failure(self, name: str, input: dict[str, Any], tool_use_id: str, error: str,
                                    is_interrupt: bool, duration_ms: int) -> HookDecision | None:
        return await self.inner.post_tool_use_failure(name, input, tool_use_id, error, is_interrupt, duration_ms)

    async def pre_compact(self, trigger: str, custom_instructions: str | None) -> None:
        await self.inner.pre_compact(trigger, custom_instructions)

    async def post_compact(self, trigger: str, compact_summary: str) -> None:
        await self.inner.post_compact(trigger, compact_summary)

    async def session_end(self, reason: str) -> None:
        await self.inner.session_end(reason)

    async def stop(self, last_assistant_text: str, stop_hook_active: bool) -> HookDecision | None:
        return await self.inner.stop(last_assistant_text, stop_hook_active)

    async def post_tool_batch(self, tool_calls: list[dict[str, Any]]) -> HookDecision | None:
        return await self.inner.post_tool_batch(tool_calls)

    async def subagent_start(self, agent_id: str, agent_type: str) -> HookDecision | None:
        return await self.inner.subagent_start(agent_id, agent_type)

    async def permission_request(self, name: str, input: dict[str, Any]) -> HookDecision | None:
        return await self.inner.permission_request(name, input)

    async def user_prompt_expansion(self, fields: dict[str, Any]) -> HookDecision | None:
        return await self.inner.user_prompt_expansion(fields)

    async def stop_failure(self, error: str, error_details: str, last_assistant_message: str) -> None:
        await self.inner.stop_failure(error, error_details, last_assistant_message)

    async def notification(self, message: str, notification_type: str) -> None:
        await self.inner.notification(message, notification_type)

    async def subagent_stop(self, last_assistant_text: str, stop_hook_active: bool,
                            agent: dict[str, Any]) -> HookDecision | None:
        return await self.inner.subagent_stop(last_assistant_text, stop_hook_active, agent)


NO_HOOKS = Hooks()


def error_category(text: str) -> str:
    """Claude Code's StopFailure `error` for an API failure's one line (its category names)."""
    low = text.lower()
    table = (("authentication_failed", ("http 401", "authentication_error", "invalid x-api-key")),
             ("billing_error", ("http 402", "billing")),
             ("rate_limit", ("http 429", "rate_limit")),
             ("overloaded", ("http 529", "overloaded")),
             ("model_not_found", ("http 404", "not_found_error", "model not found")),
             ("invalid_request", ("http 400", "http 413", "invalid_request")),
             ("server_error", ("http 500", "http 502", "http 503", "http 504", "api_error")))
    for category, words in table:
        if any(w in low for w in words):
            return category
    return "unknown"
