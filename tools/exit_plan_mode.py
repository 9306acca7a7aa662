"""ExitPlanMode: the model presents its plan; the user approves it (plan mode ends) or keeps planning.

The description, the question and the approved result are Claude Code 2.1.332's words (recorded from the
binary: the variant for a session without a plan file, which takes the plan as `plan`). Claude Code offers
the tool only where someone can answer (the REPL, an SDK host); a `-p` run does not get it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolOutput

NAME = "ExitPlanMode"
DESCRIPTION = (
    "Use this tool when you are in plan mode and your plan is ready for the user to approve.\n\n"
    "- Pass the whole plan as `plan`, in Markdown. This session has no plan file, so do not write the plan to a "
    "file.\n"
    "- The user sees the plan on an approval card and approves or declines it. Do NOT ask \"Is this plan okay?\" "
    "or \"Should I proceed?\" in any other way: that is what this tool does.\n"
    "- If they approve, plan mode ends and you carry out the plan as approved.\n"
    "- If they decline, you stay in plan mode: find out what they want changed, revise the plan, and call this "
    "tool again.\n"
)
QUESTION = "Exit plan mode?"
APPROVED = "User has approved your plan. You can now start coding. Start with updating your todo list if applicable"
NOT_IN_PLAN_MODE = "You are not in plan mode. This tool is only for leaving plan mode once the user approves a plan."


def approved_result(plan: str) -> str:
    return f"{APPROVED}\n\n## Approved Plan:\n{plan}"


class ExitPlanModeTool(Tool):
    name = NAME
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {"plan": {"type": "string", "description": "The plan to present to the user, in Markdown"}},
        "required": ["plan"],
        "additionalProperties": False,
    }
    # The gate lets it through in plan mode; the user's answer is asked here, with the plan shown.
    read_only = True

    def __init__(self, get_gate: Callable[[], Any]):
        self.get_gate = get_gate

    def describe(self, input: dict[str, Any]) -> str:
        return "Exit plan mode"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from tools.permissions import REJECT_MESSAGE, PermissionRequest, PermissionResult

        gate = self.get_gate()
        if gate.mode != "plan":
            raise ToolError(NOT_IN_PLAN_MODE)
        if gate.ask is None:  # nobody to approve (not offered then, but a resumed call may come)
            raise ToolError("Nobody can approve a plan in this session; plan mode stays on.")
        plan = str(input.get("plan") or "").strip()
        request = PermissionRequest(self, input, plan or "(empty plan)", "", ctx.tool_use_id,
                                    display=plan, always_rule=None)
        answer = await gate.ask(request)
        mode = "default"
        if isinstance(answer, PermissionResult):
            allowed, message = answer.answer != "deny", answer.message
        else:
            allowed, message = answer in ("once", "always"), ""
            mode = "acceptEdits" if answer == "always" else mode
        if not allowed:
            return ToolOutput(message or REJECT_MESSAGE, is_error=True, summary="kept planning")
        gate.mode = mode
        return ToolOutput(approved_result(plan), summary="plan approved")
