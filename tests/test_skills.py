"""Skills: discovery and frontmatter, the Skill tool, the REPL slash form, and the prompt catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.slash.router import CommandRouter, default_router
from agent.slash.skills import register_skill_commands
from services.messages import message_text, tool_use_block
from services.skills import (
    MAX_SKILL_BYTES,
    discover_skills,
    format_skill_injection,
    parse_frontmatter,
    parse_skill_slash,
    skill_catalog,
)
from tests.files import write
from tools.base import SessionState, ToolContext
from tools.orchestration import BatchOutcome, ToolRunner
from tools.permissions import PermissionGate
from tools.skill import SkillTool

REVIEW = "---\nname: review\ndescription: Review a change\n---\n# Review workflow\n"


# -- discovery (reference: discover.test.ts) ------------------------------------------------------
def test_agents_skill_is_discovered_exactly(tmp_path):
    path = write(tmp_path / ".agents/skills/review/SKILL.md", REVIEW)
    [skill] = discover_skills(tmp_path)
    assert (skill.name, skill.display_name, skill.description, skill.body) == (
        "review",
        "review",
        "Review a change",
        "# Review workflow",
    )
    assert skill.path == path.resolve() and skill.path.is_absolute()


def test_claude_skill_is_discovered(tmp_path):
    write(tmp_path / ".claude/skills/teach/SKILL.md", "# Teach")
    assert [s.name for s in discover_skills(tmp_path)] == ["teach"]


def test_frontmatter_name_is_a_display_name(tmp_path):
    write(tmp_path / ".agents/skills/review/SKILL.md", "---\nname: Display Review\n---\nbody")
    [skill] = discover_skills(tmp_path)
    assert skill.name == "review" and skill.display_name == "Display Review"


def test_no_frontmatter_name_uses_the_directory(tmp_path):
    write(tmp_path / ".agents/skills/plain/SKILL.md", "---\ndescription: d\n---\nbody")
    [skill] = discover_skills(tmp_path)
    assert skill.display_name == "plain"


def test_no_skill_roots(tmp_path):
    assert discover_skills(tmp_path, tmp_path / "home") == []


def test_body_over_32kb_is_truncated(tmp_path):
    write(tmp_path / ".agents/skills/big/SKILL.md", "# Big\n" + "y" * (MAX_SKILL_BYTES + 100))
    [skill] = discover_skills(tmp_path)
    assert skill.body.endswith("[skill truncated at 32KB]")
    assert len(skill.body.encode("utf-8")) <= MAX_SKILL_BYTES


def test_user_skills_from_the_agent_home_and_project_wins(tmp_path):
    home = tmp_path / "home"
    write(home / "skills/review/SKILL.md", "---\ndescription: user review\n---\nuser")
    write(home / "skills/notes/SKILL.md", "---\ndescription: take notes\n---\nnotes")
    write(tmp_path / "p/.agents/skills/review/SKILL.md", REVIEW)
    write(tmp_path / "p/.claude/skills/review/SKILL.md", "claude duplicate")
    skills = {s.name: s for s in discover_skills(tmp_path / "p", home)}
    assert skills["review"].description == "Review a change" and skills["review"].source == "project"
    assert skills["notes"].source == "user"


def test_frontmatter_quotes_block_scalars_and_comments():
    text = '---\nname: "Quoted: name"\ndescription: >\n  folded\n  line\nother: plain # comment\n---\nbody\n'
    fields, body = parse_frontmatter(text)
    assert fields == {"name": "Quoted: name", "description": "folded line", "other": "plain"}
    assert body == "body\n"
    assert parse_frontmatter("no header") == ({}, "no header")


# -- injection and slash (reference: slash.test.ts) ----------------------------------------------------
@pytest.fixture
def skills(tmp_path):
    write(tmp_path / ".agents/skills/echo-demo/SKILL.md", "---\ndescription: demo\n---\nSay: Skill says: hello")
    write(tmp_path / ".agents/skills/skill-creator/SKILL.md", "make skills")
    write(tmp_path / ".agents/skills/help/SKILL.md", "a skill called help")
    return discover_skills(tmp_path)


def test_format_injection(skills, tmp_path):
    demo = skills[0]
    text = format_skill_injection(demo)
    assert f"Base directory for this skill: {tmp_path.resolve()}/.agents/skills/echo-demo" in text
    assert "Say: Skill says: hello" in text and "Arguments:" not in text
    assert format_skill_injection(demo, "  make foo  ").endswith("Arguments: make foo")


def test_parse_skill_slash(skills):
    skill, args = parse_skill_slash("/echo-demo", skills)
    assert skill.name == "echo-demo" and args is None
    skill, args = parse_skill_slash("/skill-creator help me write a foo skill", skills)
    assert skill.name == "skill-creator" and args == "help me write a foo skill"
    for line in ("/help", "/clear", "/compact", "/nope", "not-slash", "/myserver:greet"):
        assert parse_skill_slash(line, skills) is None


async def test_slash_commands_on_the_router(skills):
    router = default_router()
    added = register_skill_commands(router, skills)
    assert added == ["echo-demo", "skill-creator"]  # never shadows /help
    assert "echo-demo" in router.names()
    assert any(c.name == "echo-demo" and "demo" in c.help for c in router.commands())
    from rich.console import Console

    from agent.slash.router import CommandContext

    ctx = CommandContext(engine=None, console=Console(file=open("/dev/null", "w")), cwd=Path("."), router=router)
    result = await router.dispatch("/echo-demo", ctx)
    text, injected = result.run_turn
    assert text == "" and "Skill says: hello" in message_text(injected[0])
    result = await router.dispatch("/echo-demo do it", ctx)
    assert result.run_turn[0] == "do it" and "Base directory for this skill:" in message_text(result.run_turn[1][0])
    assert isinstance(CommandRouter(), CommandRouter)


def test_catalog_lines(skills):
    catalog = skill_catalog(skills)
    assert catalog.startswith("## Available Skills")
    assert "- echo-demo — demo" in catalog and "- skill-creator" in catalog
    assert skill_catalog([]) == ""


# -- the Skill tool (reference: SkillTool.test.ts, orchestration.test.ts) -------------------------------
def ctx_for(tmp_path):
    return ToolContext(session=SessionState(cwd=tmp_path), project_root=tmp_path)


async def run_uses(tool, uses, tmp_path):
    runner = ToolRunner({tool.name: tool}, ctx_for(tmp_path), PermissionGate())
    outcome = None
    async for item in runner.run(uses):
        if isinstance(item, BatchOutcome):
            outcome = item
    return outcome


async def test_skill_tool_result_then_injected_body(tmp_path):
    write(tmp_path / ".agents/skills/review/SKILL.md", REVIEW)
    tool = SkillTool(discover_skills(tmp_path))
    outcome = await run_uses(tool, [tool_use_block("toolu_skill_1", "Skill", {"skill": "review"})], tmp_path)
    assert outcome.results == [
        {"type": "tool_result", "tool_use_id": "toolu_skill_1", "content": "Launching skill: review"}
    ]
    [injected] = outcome.new_messages
    assert injected["role"] == "user"
    assert "# Review workflow" in message_text(injected)
    assert "Base directory for this skill:" in message_text(injected)


async def test_unknown_skill_lists_the_known_ones(tmp_path):
    write(tmp_path / ".agents/skills/review/SKILL.md", REVIEW)
    tool = SkillTool(discover_skills(tmp_path))
    outcome = await run_uses(tool, [tool_use_block("t1", "Skill", {"skill": "missing"})], tmp_path)
    [result] = outcome.results
    assert result["is_error"] is True
    assert "Unknown skill: missing" in result["content"] and "review" in result["content"]
    assert outcome.new_messages == []


def test_skill_tool_is_read_only_and_described(tmp_path):
    tool = SkillTool([])
    assert tool.name == "Skill" and tool.is_read_only({"skill": "review"})
    assert tool.describe({"skill": "review"}) == "Skill review"
    assert not tool.is_enabled()
