"""Claude Code's per-session caps on tools that spend the most: WebSearch calls and sub-agent spawns,
200 each unless `CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION` / `CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION` say
otherwise (Claude Code 2.1.332's names and defaults). A WebSearch past the cap gets the binary's own
result (not an error); a sub-agent past it (2.1.332 lists the variable but does not enforce it) an error
worded after the binary's SendFeedback cap message."""

from __future__ import annotations

from services.config import getenv

CAPS: dict[str, tuple[str, int]] = {
    "WebSearch": ("CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION", 200),
    "Agent": ("CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION", 200),
}


def limit_for(tool: str) -> int | None:
    """The cap on `tool` this session, or None when it has none (a value that is not a whole number of at
    least 1 keeps the default)."""
    entry = CAPS.get(tool)
    if entry is None:
        return None
    name, default = entry
    raw = (getenv(name) or "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) >= 1 else default


def web_search_refusal(query: str, limit: int, scope: str) -> str:
    """Claude Code 2.1.332's result for a WebSearch past the cap (recorded in session_caps.json): not an
    error, worded for a `turn` (a one-shot run) or the `session` (the REPL)."""
    calls = f"{limit} WebSearch {'call' if limit == 1 else 'calls'}"
    if scope == "turn":
        where = f"limit: {calls} per turn, shared by every agent in it"
        asks = ["tell the user they can send a follow-up message after this reply to continue the search",
                f"ask them to raise {CAPS['WebSearch'][0]}"]
    else:
        where = f"limit: {calls}, shared by every agent in this session; it does not refill"
        asks = [f"ask the user to raise {CAPS['WebSearch'][0]}"]
    body = (f"Web search was not performed: this {scope}'s web search budget is used up ({where}). Continue "
            "with the information already gathered instead of searching again, and say so in your answer; do "
            "not work around the limit by querying search engines with curl or wget from Bash, by querying "
            "them in a browser or through a computer-use tool, or by searching or fetching through a "
            "third-party reader, proxy or archive service. If more searches are genuinely needed, "
            f"{', or '.join(asks)}.")
    return (f'Web search results for query: "{query}"\n\n{body}\n\n\nREMINDER: You MUST include the sources '
            "above in your response to the user using markdown hyperlinks.")


def over_cap(tool: str, counts: dict[str, int], input: dict[str, object] | None = None,
             headless: bool = False) -> tuple[str, bool] | None:
    """Counts one call of `tool`; past the session's cap, the result instead of the call and whether it is
    an error (WebSearch's is Claude Code's plain result; Agent's, which 2.1.332 does not enforce, is ours)."""
    limit = limit_for(tool)
    if limit is None:
        return None
    if counts.get(tool, 0) >= limit:
        if tool == "WebSearch":
            query = str((input or {}).get("query") or "")
            return web_search_refusal(query, limit, "turn" if headless else "session"), False
        return (f"{tool} has reached its limit of {limit} calls per session. Do not call it again this "
                f"session."), True
    counts[tool] = counts.get(tool, 0) + 1
    return None
