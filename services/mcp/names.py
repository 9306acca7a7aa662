"""Public names for MCP tools: `mcp__<server>__<tool>` made safe for the Messages API.

The API takes tool names matching ^[a-zA-Z0-9_-]{1,64}$ and fails the whole request otherwise, so every
other character becomes `_` (as Claude Code's normalisation does), a name over 64 characters keeps its
head and ends with `_` + 8 hex digits of a hash of the real names, and two tools whose public names
collide are told apart the same way. Everything here is a pure function of the real names: the same
servers give the same public names in every session, which the prompt cache and resumed transcripts
rely on, and the order servers happen to connect in changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_NAME = 64
_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_HASH_LEN = 8


def sanitise(part: str) -> str:
    """Every character outside [a-zA-Z0-9_-] becomes `_` (non-ASCII letters included); empty becomes `_`."""
    return _BAD.sub("_", part) or "_"


def is_valid_tool_name(name: str) -> bool:
    return bool(_VALID.match(name))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LEN]


def with_suffix(base: str, *real: str) -> str:
    """`base` cut so that `_` + a hash of the real names fits in 64 characters."""
    return f"{base[: MAX_NAME - _HASH_LEN - 1]}_{_digest(*real)}"


def server_names(servers: Iterable[str]) -> dict[str, str]:
    """Configured server name -> the part used in tool names: sanitised, and de-duplicated (in sorted order
    of the real names, so the result depends only on the set of servers) with a hash suffix."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    ordered = sorted(servers, key=lambda s: (sanitise(s) != s, s))  # a name that needed no change keeps it
    for real in ordered:
        safe = sanitise(real)
        if len(safe) > 40:  # leave room for the tool's own name
            safe = with_suffix(safe[:40], real)
        if safe in taken:
            safe = with_suffix(safe, real)
        taken.add(safe)
        out[real] = safe
    return out


def tool_names(server_part: str, tools: Iterable[str], taken: set[str] | None = None) -> dict[str, str]:
    """One server's real tool names -> public names `mcp__<server_part>__<tool>`, each valid and unique
    (also against `taken`, the names other servers already hold; it is updated).

    Collisions are settled in a fixed order: a tool whose name needed no change keeps the plain name, then
    the smallest real name; every other one gets the hash suffix of its real name."""
    taken = set() if taken is None else taken
    out: dict[str, str] = {}
    prefix = f"mcp__{server_part}__"
    ordered = sorted(set(tools), key=lambda t: (sanitise(t) != t, t))
    for real in ordered:
        name = prefix + sanitise(real)
        if len(name) > MAX_NAME:
            name = with_suffix(name, server_part, real)
        if name in taken:
            name = with_suffix(name, server_part, real, "dup")
            n = 2
            while name in taken:  # a hash collision: astronomically rare, still never a duplicate
                name = with_suffix(name, server_part, real, str(n))
                n += 1
        taken.add(name)
        out[real] = name
    return out


def public_tool_name(server: str, tool: str) -> str:
    """The public name of one tool taken alone (no de-duplication)."""
    return tool_names(server_names([server])[server], [tool])[tool]
