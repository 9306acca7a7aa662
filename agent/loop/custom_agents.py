"""Custom sub-agents for a session: `--agents` (JSON, or a file holding it, as Claude Code takes it), then
`.claude/agents/*.md` and `.agents/agents/*.md` in the project, then `~/.claude/agents/` and
`<AGENT_HOME>/agents/`, then the built-in general-purpose agent (services/subagents.py)."""

from __future__ import annotations

from pathlib import Path

from agent.slash.custom import claude_dir
from services.skills.safe_read import ScopedReader
from services.subagents import AgentDef, discover_agents, parse_agents_flag


def agent_roots(cwd: Path, home: Path) -> list[tuple[Path, str]]:
    return [(cwd / ".claude" / "agents", "project"), (cwd / ".agents" / "agents", "project"),
            (claude_dir() / "agents", "user"), (home / "agents", "user")]


def _flag_agents(raw: str | None) -> tuple[list[AgentDef], list[str]]:
    if raw is None or not raw.strip():
        return [], []
    text = raw
    if not raw.lstrip().startswith("{"):  # a path to a file holding the JSON
        try:
            text = Path(raw).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            return [], [f"--agents: cannot read {raw}: {exc.strerror or exc}"]
    return parse_agents_flag(text)


def load_custom_agents(cwd: Path, home: Path, flag: str | None) -> tuple[list[AgentDef], list[str]]:
    """The agents (sorted as the model sees them) and the notices (skipped files, bad --agents)."""
    extra, errors = _flag_agents(flag)
    reader = ScopedReader([cwd, claude_dir(), home])
    return discover_agents(agent_roots(cwd, home), reader, extra), [*errors, *reader.notices]
