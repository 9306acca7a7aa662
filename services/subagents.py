"""Custom sub-agents: Claude Code's `.claude/agents/*.md` files (project over user over built-in).

Each file's front matter gives `name` (else the file name), `description`, `tools` (a comma list; absent:
every tool the parent has but Agent) and `model` (an alias, an id, or `inherit`); the body is the agent's
system prompt. `agent_listing` is the text the model reads about them, worded as Claude Code 2.1.332
words it (recorded from the real binary: one line per agent type, sorted by name without case).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.skills.commands import split_tools
from services.skills.discover import parse_frontmatter
from services.skills.safe_read import ScopedReader

GENERAL_PURPOSE = "general-purpose"
GENERAL_DESCRIPTION = (
    "General-purpose agent for researching complex questions, searching for code, and executing multi-step "
    "tasks. When you are searching for a keyword or file and are not confident that you will find the right "
    "match in the first few tries use this agent to perform the search for you."
)
LISTING_HEAD = "Available agent types for the Agent tool:"
LISTING_TAIL = ("When you launch multiple agents for independent work, send them in a single message with "
                "multiple tool uses so they run concurrently.")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True)
class AgentDef:
    name: str
    description: str
    tools: tuple[str, ...] | None  # None: all the parent's tools but Agent
    model: str  # "" or "inherit": the parent's model
    system_prompt: str  # "" for the built-in: the Agent tool's own prompt
    source: str  # "project" | "user" | "flag" | "built-in"
    path: Path | None = None


BUILT_IN = AgentDef(GENERAL_PURPOSE, GENERAL_DESCRIPTION, None, "", "", "built-in")


def load_agent(path: Path, source: str, reader: ScopedReader) -> AgentDef | None:
    text = reader.read(path)
    if text is None:
        return None
    fields, body = parse_frontmatter(text)
    name = fields.get("name", "").strip() or path.stem
    description = " ".join(fields.get("description", "").split())
    if not _NAME_RE.match(name) or not description:
        return None  # Claude Code skips an agent file without a description
    tools = split_tools(fields["tools"]) if fields.get("tools", "").strip() else None
    return AgentDef(name, description, tools, fields.get("model", "").strip(), body.strip(), source, path)


def discover_agents(roots: list[tuple[Path, str]], reader: ScopedReader,
                    extra: list[AgentDef] | None = None) -> list[AgentDef]:
    """`extra` (from `--agents`) first, then the roots in order, then the built-in; the first of a name wins."""
    found: dict[str, AgentDef] = {a.name: a for a in extra or []}
    for root, source in roots:
        try:
            files = sorted(p for p in root.iterdir() if p.suffix == ".md")
        except OSError:
            continue
        for path in files:
            agent = load_agent(path, source, reader)
            if agent is not None and agent.name not in found:
                found[agent.name] = agent
    found.setdefault(BUILT_IN.name, BUILT_IN)
    return sorted(found.values(), key=lambda a: a.name.lower())


def agents_from_json(data: Any) -> tuple[list[AgentDef], list[str]]:
    """`--agents '{"name": {"description", "prompt", "tools"?, "model"?}}'` -> the agents and the errors."""
    if not isinstance(data, dict):
        return [], ["--agents: expected a JSON object of named agents"]
    out, errors = [], []
    for name, spec in data.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("description"), str) \
                or not isinstance(spec.get("prompt"), str) or not _NAME_RE.match(str(name)):
            errors.append(f"--agents: {name!r} needs a string description and prompt")
            continue
        tools = spec.get("tools")
        names = tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None
        model = str(spec["model"]) if isinstance(spec.get("model"), str) else ""
        out.append(AgentDef(str(name), " ".join(spec["description"].split()), names, model, spec["prompt"], "flag"))
    return out, errors


def parse_agents_flag(raw: str) -> tuple[list[AgentDef], list[str]]:
    try:
        return agents_from_json(json.loads(raw))
    except ValueError as exc:
        return [], [f"--agents: not valid JSON ({exc})"]


def agent_listing(agents: list[AgentDef]) -> str:
    lines = [LISTING_HEAD]
    for a in agents:
        tools = "*" if a.source == "built-in" else (", ".join(a.tools) if a.tools else "All tools")
        lines.append(f"- {a.name}: {a.description} (Tools: {tools})")
    return "\n".join(lines) + "\n\n" + LISTING_TAIL
