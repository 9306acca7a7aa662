"""ToolSearch's query forms over the deferred tools (Claude Code's, as its tool description states them).

- `select:A,B`: these tools by name (case-insensitive; unknown names are skipped, as Claude Code does);
- `word word`: keyword search, the best `max_results` matches;
- `+word rest`: `word` must be in the name; the rest ranks.

Ranking: a word that is a whole part of the name (split at `__`, `_`, `-`, `.`, and camelCase) counts most,
a part of the name less, a word of the description least; ties keep the name order, so results are
stable across sessions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SELECT = "select:"
MAX_RESULTS_CAP = 50
_SPLIT = re.compile(r"[_\-.\s/:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Entry:
    name: str
    description: str


def name_parts(name: str) -> set[str]:
    parts = _SPLIT.split(_CAMEL.sub("_", name))
    return {p.lower() for p in parts if p}


def select(query: str, entries: Sequence[Entry]) -> list[str]:
    """`select:A,B`: the entries named, in the query's order, each once."""
    by_lower = {e.name.lower(): e.name for e in entries}
    out: list[str] = []
    for raw in query[len(SELECT):].split(","):
        name = by_lower.get(raw.strip().lower())
        if name is not None and name not in out:
            out.append(name)
    return out


def _score(entry: Entry, terms: Sequence[str]) -> int:
    parts = name_parts(entry.name)
    lname = entry.name.lower()
    words = set(_WORD.findall(entry.description.lower()))
    score = 0
    for t in terms:
        if t in parts:
            score += 10
        elif t in lname:
            score += 5
        if t in words:
            score += 2
        elif t in entry.description.lower():
            score += 1
    return score


def keyword_search(query: str, entries: Sequence[Entry], max_results: int) -> list[str]:
    """The best matches for the query's words; `+word` filters on the name."""
    words = [w.lower() for w in query.split() if w.strip("+")]
    required = [w[1:] for w in words if w.startswith("+")]
    terms = [w for w in words if not w.startswith("+")]
    pool = [e for e in entries if all(r in e.name.lower() for r in required)]
    if terms:
        scored = [(_score(e, terms), e.name) for e in pool]
        # With a required word every name that has it is a match; the other words only rank.
        ranked = [name for score, name in sorted(scored, key=lambda p: (-p[0], p[1])) if score > 0 or required]
    elif required:
        ranked = sorted(e.name for e in pool)
    else:
        ranked = []
    return ranked[:max(1, min(max_results, MAX_RESULTS_CAP))]


def search(query: str, entries: Sequence[Entry], max_results: int) -> list[str]:
    q = query.strip()
    if q.lower().startswith(SELECT):
        return select(q, entries)
    return keyword_search(q, entries, max_results)
