"""Claude Code's per-session caps on tools that spend the most: WebSearch calls and sub-agent spawns,
200 each unless `CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION` / `CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION` say
otherwise (Claude Code 2.1.332's names and defaults). A call past the cap is refused with a result that
tells the model not to try again, worded after the binary's own cap message (SendFeedback's)."""

from __future__ import annotations

from services.config import getenv

CAPS: dict[str, tuple[str, int]] = {
    "WebSearch": ("CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION", 200),
    "Agent": ("CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION", 200),
}


def limit_for(tool: str) -> int | None:
    """The cap on `tool` this session, or None when it has none (a bad value keeps the default)."""
    entry = CAPS.get(tool)
    if entry is None:
        return None
    name, default = entry
    raw = (getenv(name) or "").strip()
    return int(raw) if raw.isdigit() else default


def over_cap(tool: str, counts: dict[str, int]) -> str | None:
    """Counts one call of `tool`; the refusal when it is past the session's cap."""
    limit = limit_for(tool)
    if limit is None:
        return None
    if counts.get(tool, 0) >= limit:
        return (f"{tool} has reached its limit of {limit} calls per session. Do not call it again this "
                f"session.")
    counts[tool] = counts.get(tool, 0) + 1
    return None
