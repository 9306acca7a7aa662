"""Skills: `SKILL.md` folders the model (or the user, with `/<skill-id>`) can load into the conversation.

Discovered once per session in the project (`.agents/skills/*/SKILL.md`, then `.claude/skills/*/SKILL.md`)
and in the agent home (`skills/*/SKILL.md`). The skill id is the directory name; the YAML frontmatter's
`name` is a display name and its `description` is the catalog line shown in the system prompt.
"""

from __future__ import annotations

from services.skills.discover import (
    MAX_SKILL_BYTES,
    SKILL_TRUNCATED_NOTE,
    Skill,
    discover_skills,
    parse_frontmatter,
    skill_roots,
)
from services.skills.slash import (
    RESERVED_COMMANDS,
    format_skill_injection,
    parse_skill_slash,
    skill_catalog,
)

__all__ = [
    "MAX_SKILL_BYTES",
    "RESERVED_COMMANDS",
    "SKILL_TRUNCATED_NOTE",
    "Skill",
    "discover_skills",
    "format_skill_injection",
    "parse_frontmatter",
    "parse_skill_slash",
    "skill_catalog",
    "skill_roots",
]
