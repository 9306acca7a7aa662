"""ToolSearch: the tool that loads deferred MCP tools' schemas (services/mcp/deferral.py has the protocol).

The loop asks this module two things before each model call: which announcement (if any) the history
needs (`announce_deferred`: the deferrable tools not yet announced, once deferral is on) and which `tools`
the request carries (`offered_specs`: the whole tools, ToolSearch while anything is deferred, the
placeholder and the loaded tools). The session's `ToolSearchSession` (`SessionState.tool_search`) holds the
mode and the catalog of deferred tools the ToolSearch call searches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.mcp import deferral
from services.mcp.tool_rank import Entry, search
from services.messages import Message, user_message
from tools.base import SessionState, Tool, ToolContext, ToolOutput, tool_use_error

DEFAULT_MAX_RESULTS = 5

# Claude Code 2.1.332's tool, as sent (tests/fixtures/claude_code/tool_search.json).
DESCRIPTION = (
    "Fetches full schema definitions for deferred tools so they can be called.\n\n"
    "Deferred tools appear by name in a message from the system. Until fetched, only the name is known \u2014 "
    "there is no parameter schema, so the tool cannot be invoked. This tool takes a query, matches it against "
    "the deferred tool list, and returns the matched tools' complete JSONSchema definitions inside a "
    "<functions> block. Once a tool's schema appears in that result, it is callable exactly like any tool "
    "defined at the top of the prompt.\n\n"
    "Result format: each matched tool appears as one <function>{\"description\": \"...\", \"name\": \"...\", "
    "\"parameters\": {...}}</function> line inside the <functions> block \u2014 the same encoding as the tool "
    "list at the top of this prompt.\n\n"
    "Query forms:\n"
    "- \"select:Read,Edit,Grep\" \u2014 fetch these exact tools by name\n"
    "- \"notebook jupyter\" \u2014 keyword search, up to max_results best matches\n"
    "- \"+slack send\" \u2014 require \"slack\" in the name, rank by remaining terms"
)
INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "query": {
            "description": "Query to find deferred tools. Use \"select:<tool_name>\" for direct selection, "
                           "or keywords to search.",
            "type": "string",
        },
        "max_results": {"description": "Maximum number of results to return (default: 5)", "default": 5,
                        "type": "number"},
    },
    "required": ["query"],
    "additionalProperties": False,
}


@dataclass
class ToolSearchSession:
    """The session's tool search: its mode and the tools deferred in the last request (what a ToolSearch
    call searches)."""

    mode: deferral.SearchMode = field(default_factory=deferral.SearchMode)
    catalog: list[Entry] = field(default_factory=list)
    # The specs of tools once loaded: a tool whose server went away stays listed (deferred), so the
    # history's references to it stay valid; calling it is an unknown-tool error.
    remembered: dict[str, dict[str, Any]] = field(default_factory=dict)


def _session(ctx: ToolContext) -> ToolSearchSession | None:
    found = ctx.session.tool_search
    return found if isinstance(found, ToolSearchSession) else None


class ToolSearchTool(Tool):
    name = deferral.SEARCH_TOOL
    description = DESCRIPTION
    input_schema = INPUT_SCHEMA
    read_only = True

    def describe(self, input: dict[str, Any]) -> str:
        query = input.get("query")
        return f"{self.name} {query}" if isinstance(query, str) else self.name

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = input.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolOutput(tool_use_error("query must be a non-empty string"), is_error=True)
        limit = input.get("max_results", DEFAULT_MAX_RESULTS)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit != limit or limit < 1:
            return ToolOutput(tool_use_error("max_results must be a number of at least 1"), is_error=True)
        session = _session(ctx)
        names = search(query, session.catalog if session else [], int(min(limit, 1000)))
        if not names:
            return ToolOutput(deferral.NO_MATCH, summary="no match")
        refs = [{"type": "tool_reference", "tool_name": n} for n in names]
        note = user_message(deferral.LOADED_NOTE, meta={deferral.LOADED_META: names})
        return ToolOutput(refs, summary=f"loaded {', '.join(names)}", new_messages=[note])


def _candidates(tools: Sequence[Tool], specs: Sequence[dict[str, Any]]) -> list[deferral.Candidate]:
    movable = {t.name for t in tools if getattr(t, "deferrable", False) and not getattr(t, "always_load", False)}
    return [deferral.Candidate(s, s.get("name") in movable) for s in specs]


def announce_deferred(tools: Sequence[Tool], specs: Sequence[dict[str, Any]], history: Sequence[Message],
                      session: ToolSearchSession, window_tokens: int) -> list[Message]:
    """The announcement the history needs before the next request: the deferred tools it does not name
    yet (none when deferral is off or not worth it, or all are announced)."""
    announced = deferral.announced_names(history)
    names = deferral.deferred_names(_candidates(tools, specs), announced, window_tokens, session.mode)
    known = set(announced)
    fresh = [n for n in names if n not in known]
    return [deferral.announcement(fresh)] if fresh else []


def offered_specs(tools: Sequence[Tool], specs: Sequence[dict[str, Any]], history: Sequence[Message],
                  session: ToolSearchSession) -> list[dict[str, Any]]:
    """The request's `tools`; also refreshes the catalog ToolSearch searches."""
    plain = [s for s in specs if s.get("name") != deferral.SEARCH_TOOL]
    announced = set(deferral.announced_names(history))
    deferred = [c.name for c in _candidates(tools, specs) if c.deferrable and c.name in announced]
    if not deferred:
        session.catalog = []
        return plain
    by_name = {str(s.get("name")): s for s in specs}
    session.catalog = [Entry(n, str(by_name[n].get("description", ""))) for n in deferred]
    loaded = deferral.loaded_names(history)
    session.remembered.update((n, by_name[n]) for n in loaded if n in by_name and n in announced)
    gone = [session.remembered[n] for n in loaded if n not in by_name and n in session.remembered]
    return deferral.request_tools([*specs, *gone], [*deferred, *(str(g["name"]) for g in gone)], loaded)


def plan_request(tools: Sequence[Tool], specs: Sequence[dict[str, Any]], history: Sequence[Message],
                 ctx: ToolContext, window_tokens: int) -> tuple[list[Message], list[dict[str, Any]]]:
    """Before a model call: the announcement to append to the history (if any) and the request's `tools`.
    Without a tool search session (no MCP servers) the specs go as they are, ToolSearch left out."""
    session = _session(ctx)
    if session is None:
        return [], [s for s in specs if s.get("name") != deferral.SEARCH_TOOL]
    news = announce_deferred(tools, specs, history, session, window_tokens)
    return news, offered_specs(tools, specs, [*history, *news], session)


def install_tool_search(tools: list[Tool], session: SessionState, setting: str | None,
                        blocked: set[str] | frozenset[str] = frozenset()) -> str | None:
    """Give a session with MCP servers its tool search: the ToolSearch tool (offered only while tools
    are deferred) and the session state, from `ENABLE_TOOL_SEARCH`'s value. Returns a warning for a bad
    value. Once per session; a disallowed ToolSearch turns deferral off."""
    if isinstance(session.tool_search, ToolSearchSession):
        return None
    mode, warning = deferral.parse_mode(setting)
    if deferral.SEARCH_TOOL in blocked:
        mode = deferral.SearchMode("off")
    session.tool_search = ToolSearchSession(mode)
    if mode.kind != "off" and not any(t.name == deferral.SEARCH_TOOL for t in tools):
        tools.append(ToolSearchTool())
    return warning
