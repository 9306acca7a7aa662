"""Skill: loads one of the discovered skills into the conversation.

The result is a short `Launching skill: <id>`; the skill's body follows as a user text message right
after the tool_result (so every tool_use keeps its tool_result first), where the model reads it as
instructions. Read-only: it only reads a file that was already discovered.
"""

from __future__ import annotations

from typing import Any

from services.messages import user_message
from services.skills import Skill, format_skill_injection
from tools.base import Tool, ToolContext, ToolOutput

LAUNCHING_PREFIX = "Launching skill: "


class SkillTool(Tool):
    name = "Skill"
    description = (
        "Load a skill: a set of instructions for a specific kind of task, listed under \"Available Skills\" "
        "in the system prompt. Call it as soon as the task matches a skill's description, before doing the "
        "work, then follow the instructions it returns (they arrive as the next message). `skill` is the "
        "skill id exactly as listed; `args` optionally passes the user's arguments to it. Do not call it for "
        "a skill that is already loaded in this conversation."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "skill": {"type": "string", "description": "The skill id, as listed under Available Skills."},
            "args": {"type": "string", "description": "Optional arguments for the skill."},
        },
        "required": ["skill"],
        "additionalProperties": False,
    }
    max_result_chars = 10_000

    def __init__(self, skills: list[Skill]):
        self.skills = list(skills)

    read_only = True

    def is_enabled(self) -> bool:
        return bool(self.skills)

    def describe(self, input: dict[str, Any]) -> str:
        skill = input.get("skill")
        return f"Skill {skill}" if isinstance(skill, str) and skill else "Skill"

    def find(self, wanted: str) -> Skill | None:
        wanted = wanted.strip().lstrip("/")
        for s in self.skills:
            if s.name == wanted:
                return s
        lowered = wanted.lower()
        for s in self.skills:
            if s.name.lower() == lowered or s.display_name.lower() == lowered:
                return s
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        skill = self.find(input["skill"])
        if skill is None:
            known = ", ".join(s.name for s in self.skills) or "none"
            return ToolOutput(
                f"Unknown skill: {input['skill']}. Available skills: {known}.", is_error=True, summary="unknown"
            )
        body = format_skill_injection(skill, input.get("args"))
        return ToolOutput(
            LAUNCHING_PREFIX + skill.name,
            summary=skill.name,
            new_messages=[user_message(body, meta={"skill": skill.name})],
        )
