"""Project context (AGENTS.md / CLAUDE.md), the system prompt's assembly and stability, and /init."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from agent.loop.context import (
    BASE_PROMPT,
    SystemPromptBuilder,
    build_system_prompt,
    environment_block,
    init_prompt,
    init_target_file,
)
from services.instructions import Places, claude_md_text, load_instructions
from services.memory import MEMORY_RELATIVE_PATH
from services.skills import discover_skills
from tests.files import write


# -- project context: the instruction files (services/instructions; Claude Code 2.1.332's walk) -----
def _text(cwd: Path, trusted: bool = True) -> str:
    places = Places.for_cwd(cwd, cwd / "no-home")
    return claude_md_text(load_instructions(places, trusted).files)


def test_agents_md_alone_is_the_file_in_use(tmp_path):
    write(tmp_path / "AGENTS.md", "# Agent rules\n")
    assert f"Contents of {tmp_path / 'AGENTS.md'} (project instructions, checked into the codebase):\n\n# Agent rules" \
        in _text(tmp_path)


def test_claude_md_wins_over_agents_md_in_one_directory(tmp_path):
    write(tmp_path / "AGENTS.md", "agents")
    write(tmp_path / "CLAUDE.md", "claude")
    text = _text(tmp_path)
    assert "claude" in text and "agents" not in text


def test_none(tmp_path):
    (tmp_path / ".git").mkdir()
    assert "Contents of" not in _text(tmp_path)


def test_parents_are_walked_outermost_first(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "CLAUDE.md", "from parent")
    sub = tmp_path / "pkg" / "src"
    write(sub / "CLAUDE.md", "from cwd")
    text = _text(sub)
    assert text.index("from parent") < text.index("from cwd")


def test_untrusted_folder_gets_no_project_files(tmp_path):
    write(tmp_path / "CLAUDE.md", "project rules")
    assert "project rules" not in _text(tmp_path, trusted=False)


# -- the system prompt (reference: systemPrompt.test.ts) -----------------------------------------
def skills_project(tmp_path: Path) -> Path:
    write(tmp_path / "AGENTS.md", "Project rules: use tabs.")
    write(tmp_path / ".agents/skills/review/SKILL.md", "---\ndescription: Review a change\n---\n# Review workflow")
    write(tmp_path / ".claude/skills/teach/SKILL.md", "# Teach")
    return tmp_path


def test_prompt_has_base_env_project_memory_and_catalog_in_order(tmp_path):
    (tmp_path / ".git").mkdir()
    skills_project(tmp_path)
    prompt = build_system_prompt(tmp_path, skills=discover_skills(tmp_path))
    assert prompt.startswith(BASE_PROMPT)
    assert "<env>" in prompt and f"Working directory: {tmp_path}" in prompt
    assert "Shell:" in prompt
    assert "Project rules" in prompt
    assert "## Available Skills" in prompt
    assert "- review — Review a change" in prompt
    assert "- teach" in prompt
    assert MEMORY_RELATIVE_PATH in prompt and "remember" in prompt
    env, project = prompt.index("<env>"), prompt.index("Project rules")
    memory, skills = prompt.index("## Agent Memory"), prompt.index("## Available Skills")
    assert env < project < memory < skills


def test_prompt_without_project_context_or_skills(tmp_path):
    (tmp_path / ".git").mkdir()
    prompt = build_system_prompt(tmp_path)
    assert "## Agent Memory" in prompt and "currently empty" in prompt
    assert "## Available Skills" not in prompt
    assert "# Project instructions" not in prompt


def test_user_level_agents_md_from_the_agent_home(tmp_path):
    home = tmp_path / "home"
    write(home / "AGENTS.md", "prefer dark mode")
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    write(proj / "AGENTS.md", "Project rules")
    prompt = build_system_prompt(proj, home=home)
    assert "prefer dark mode" in prompt
    assert prompt.index("prefer dark mode") < prompt.index("Project rules")


def test_memory_body_is_in_the_prompt(tmp_path):
    (tmp_path / ".git").mkdir()
    prompt = build_system_prompt(tmp_path, memory="prefer dark mode")
    assert "prefer dark mode" in prompt and "currently empty" not in prompt


def test_builder_is_byte_stable_and_rebuilds_only_on_change(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "AGENTS.md", "Project rules")
    builder = SystemPromptBuilder(tmp_path, tmp_path / "home", [], trusted=True)
    first = builder.build("s1")
    assert builder.build("s1") == first and builder.builds == 1
    mem = write(tmp_path / MEMORY_RELATIVE_PATH, "remember: tabs")
    second = builder.build("s1")
    assert builder.builds == 2 and "remember: tabs" in second
    assert builder.build("s1") == second and builder.builds == 2
    write(mem, "remember: spaces, not tabs")
    os.utime(mem, ns=(1, 1))
    assert "spaces, not tabs" in builder.build("s1")
    write(tmp_path / "AGENTS.md", "Project rules v2")
    assert "Project rules v2" in builder.build("s1")
    builds = builder.builds
    builder.build("s2")  # a new session (/clear) takes a fresh environment block
    assert builder.builds == builds + 1


# -- /init (reference: initSlash.test.ts) -------------------------------------------------------------
def test_init_target_file(tmp_path):
    assert init_target_file(tmp_path) == "AGENTS.md"
    write(tmp_path / "CLAUDE.md", "x")
    assert init_target_file(tmp_path) == "CLAUDE.md"
    write(tmp_path / "AGENTS.md", "x")
    assert init_target_file(tmp_path) == "AGENTS.md"


def test_init_prompt_for_agents_md(tmp_path):
    text = init_prompt("", tmp_path)
    for part in ("create a AGENTS.md file", "What to add:", "Usage notes:", "suggest improvements to it", "# AGENTS.md"):
        assert part in text
    assert "do **not** execute the full test suite" in text
    assert "Additional user notes:" not in text


def test_init_prompt_for_claude_md_and_notes(tmp_path):
    write(tmp_path / "CLAUDE.md", "x")
    text = init_prompt("focus on test commands", tmp_path)
    assert "create a CLAUDE.md file" in text and "# CLAUDE.md" in text and "claude.ai/code" in text
    assert "Additional user notes:\nfocus on test commands" in text


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main",
                    *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_environment_block_has_a_git_snapshot_and_says_bash(tmp_path, monkeypatch):
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    _git(tmp_path, "init", "-q")
    write(tmp_path / "a.txt", "a\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-qm", "first commit")
    _git(tmp_path, "checkout", "-qb", "feature/x")
    write(tmp_path / "b.txt", "b\n")
    env = environment_block(tmp_path, trusted=True)
    assert "Shell: bash" in env and "fish" not in env  # the Bash tool always runs bash
    assert "Git repository: yes" in env
    assert "Current branch: feature/x\n" in env and "Main branch (the usual base for pull requests): main\n" in env
    assert "Status:\n?? b.txt\n" in env
    assert re.search(r"Recent commits:\n[0-9a-f]{7,} first commit\n</env>$", env)
    assert environment_block(tmp_path, trusted=True) == env  # same state, same bytes


def test_environment_block_outside_git_and_with_hostile_repository_text(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    env = environment_block(plain)
    assert "Git repository: no" in env and "Current branch" not in env
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    write(repo / "x.txt", "x\n")
    _git(repo, "add", "x.txt")
    _git(repo, "commit", "-qm", "evil \x1b[31mred\x07 " + "y" * 500)
    for i in range(300):
        write(repo / f"untracked-{i:03d}-{'z' * 20}.txt", "")
    untrusted = environment_block(repo)
    assert "\x1b" not in untrusted and "\x07" not in untrusted
    assert len(untrusted.split("Recent commits:\n", 1)[1].splitlines()[0]) <= 200
    env = environment_block(repo, trusted=True)
    assert "\x1b" not in env and "\x07" not in env
    status = env.split("Status:\n", 1)[1].split("Recent commits:", 1)[0]
    assert len(status) < 2200 and "status truncated" in status
    commit_line = env.split("Recent commits:\n", 1)[1].splitlines()[0]
    assert len(commit_line) <= 200


def test_builder_takes_the_git_snapshot_once_per_session(tmp_path):
    _git(tmp_path, "init", "-q")
    builder = SystemPromptBuilder(tmp_path, tmp_path / "home", [], trusted=True)
    first = builder.build("s1")
    assert "Status:\n(clean)" in first
    write(tmp_path / "new.txt", "n\n")
    assert builder.build("s1") == first  # byte-stable: the snapshot is not retaken mid-session
    assert "?? new.txt" in builder.build("s2")
