"""Deferred MCP tools: which tools go to the model by name only, and how the request carries them.

A **deferred** tool is offered by name in an **announcement** (a meta user message in the history, so the
cached prefix never changes when one is added) and its schema reaches the model only when the ToolSearch
tool returns a `tool_reference` to it. The request then lists it in `tools` with `defer_loading: true`,
which the API renders where the reference sits, not in the tools prefix: loading a tool, or a late server's
tools being announced, leaves every earlier request's prefix as it was (Claude Code 2.1.332's protocol,
recorded in tests/fixtures/claude_code/tool_search.json).

The decision (`ENABLE_TOOL_SEARCH`, Claude Code's values). Unset, Claude Code 2.1.332 defers every MCP tool,
even a server of three; a search round trip costs more than a few schemas, so the default here defers when
there are more than `DIRECT_LIMIT` deferrable tools or their schemas exceed 10% of the window, and only when
deferring saves more than it costs. `auto` (Claude Code's share rule) defers when the schemas exceed a share
of the context window (10%, or N with `auto:N`) and deferring saves more than it costs; `true`/`force`
always defers; `false` never. A server's `alwaysLoad: true` or a tool's
`_meta["anthropic/alwaysLoad"]` keeps tools whole. Once deferral is on in a session (an announcement is in
the history), it stays on and later servers' tools are deferred too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from services.messages import Message, user_message
from services.tokens import text_units

SEARCH_TOOL = "ToolSearch"
BETA = "advanced-tool-use-2025-11-20"
META_KEY = "deferred_tools"
LOADED_META = "tool_loaded"
LOADED_NOTE = "Tool loaded."
NO_MATCH = "No matching deferred tools found"
DEFAULT_PERCENT = 10
UNITS_PER_TOKEN = 4
# Claude Code's words (2.1.332).
ANNOUNCE_HEADER = (
    "The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded \u2014 "
    "calling them directly will fail with InputValidationError. Use ToolSearch with query "
    '"select:<name>[,<name>...]" to load tool schemas before calling them:'
)
PLACEHOLDER: dict[str, Any] = {
    "name": "DeferredToolPlaceholder",
    "description": "Reserved placeholder that keeps deferred tool loading active; never call this tool.",
    "input_schema": {"type": "object", "properties": {}},
    "defer_loading": True,
}
# What deferring costs besides the announcement: the ToolSearch tool and the placeholder (about 1,700
# characters as sent) and a search round trip's request and reply. Savings below this are not worth it.
OVERHEAD_UNITS = 4000
# The default sends this many deferrable tools whole whatever their size (the window rule still applies).
DIRECT_LIMIT = 10


@dataclass(frozen=True)
class SearchMode:
    kind: Literal["default", "auto", "on", "off"] = "default"
    percent: int = DEFAULT_PERCENT


@dataclass(frozen=True)
class Candidate:
    """A tool as the decision sees it: its API spec and whether it may be deferred at all."""

    spec: dict[str, Any]
    deferrable: bool

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))


_ON = {"true", "1", "yes", "on", "force"}
_OFF = {"false", "0", "no", "off"}


def parse_mode(value: str | None) -> tuple[SearchMode, str | None]:
    """`ENABLE_TOOL_SEARCH` read as Claude Code reads it; a bad value is a warning and the default."""
    raw = (value or "").strip()
    low = raw.lower()
    if not raw:
        return SearchMode(), None
    if low == "auto":
        return SearchMode("auto"), None
    if low.startswith("auto:"):
        try:
            percent = float(raw[5:])
        except ValueError:
            return SearchMode("auto"), f'ENABLE_TOOL_SEARCH value "{raw}": expected auto:N where N is a number.'
        if percent != percent:  # NaN
            return SearchMode("auto"), f'ENABLE_TOOL_SEARCH value "{raw}": expected auto:N where N is a number.'
        n = round(max(0.0, min(100.0, percent)))
        # Claude Code: auto:0 always defers, auto:100 never does.
        return SearchMode("on" if n == 0 else "off" if n == 100 else "auto", n), None
    if low in _ON:
        return SearchMode("on"), None
    if low in _OFF:
        return SearchMode("off"), None
    return SearchMode(), (f'ENABLE_TOOL_SEARCH value "{raw}": expected true, false, auto or auto:N; '
                          "using the default")


def spec_units(spec: dict[str, Any]) -> int:
    return text_units(json.dumps(spec, ensure_ascii=False))


def worth_deferring(candidates: Sequence[Candidate], window_tokens: int, mode: SearchMode) -> bool:
    """Whether a session that has not deferred yet starts now."""
    movable = [c for c in candidates if c.deferrable]
    if mode.kind == "off" or not movable:
        return False
    if mode.kind == "on":
        return True
    units = sum(spec_units(c.spec) for c in movable)
    names = sum(len(c.name) + 1 for c in movable)
    if units - names <= OVERHEAD_UNITS:  # a few small tools: cheaper to send whole (Claude Code defers them)
        return False
    over_share = units > window_tokens * UNITS_PER_TOKEN * mode.percent / 100
    return over_share or (mode.kind == "default" and len(movable) > DIRECT_LIMIT)


def deferred_names(candidates: Sequence[Candidate], announced: Iterable[str], window_tokens: int,
                   mode: SearchMode) -> list[str]:
    """The tools to send by name only, in the tools' order: none, or every deferrable one. A session that
    already announced some keeps deferring (its earlier requests' prefix holds ToolSearch)."""
    if mode.kind == "off":
        return []
    if not any(True for _ in announced) and not worth_deferring(candidates, window_tokens, mode):
        return []
    return [c.name for c in candidates if c.deferrable]


def announced_names(messages: Sequence[Message]) -> list[str]:
    """The names the history's announcements gave, in order."""
    out: list[str] = []
    for m in messages:
        names = (m.get("meta") or {}).get(META_KEY)
        if isinstance(names, list):
            out.extend(n for n in names if isinstance(n, str))
    return out


def announcement(names: Sequence[str]) -> Message:
    text = "<system-reminder>\n" + ANNOUNCE_HEADER + "\n" + "\n".join(names) + "\n</system-reminder>"
    return user_message(text, meta={META_KEY: list(names)})


def loaded_names(messages: Sequence[Message] | Sequence[dict[str, Any]]) -> list[str]:
    """Tools the model loaded: every `tool_reference` in a tool_result, first appearance first."""
    seen: dict[str, None] = {}
    for m in messages:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            for ref in inner if isinstance(inner, list) else []:
                if isinstance(ref, dict) and ref.get("type") == "tool_reference":
                    name = ref.get("tool_name")
                    if isinstance(name, str):
                        seen.setdefault(name, None)
    return list(seen)


def request_tools(specs: Sequence[dict[str, Any]], deferred: Iterable[str], loaded: Iterable[str]) -> list[dict[str, Any]]:
    """The `tools` of a request: the whole ones in their order, then (when any is deferred) the
    placeholder and the loaded deferred ones, in load order, marked `defer_loading`."""
    hidden = set(deferred)
    if not hidden:
        return list(specs)
    by_name = {str(s.get("name")): s for s in specs}
    out = [s for s in specs if s.get("name") not in hidden]
    out.append(dict(PLACEHOLDER))
    out += [{**by_name[n], "defer_loading": True} for n in loaded if n in hidden and n in by_name]
    return out


def rendered_prefix_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools the API renders ahead of the system prompt (deferred ones are rendered where referenced)."""
    return [t for t in tools if not t.get("defer_loading")]
