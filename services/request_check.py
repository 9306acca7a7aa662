"""The outbound request's invariants, checked on every model call, and the last-line repair.

The Messages API answers 400 to a request that breaks one of these, so none may leave the agent:

- roles: the first message is a user message, the last one too (no prefill here), and no two
  assistant messages follow each other. Consecutive user messages are one wire turn (the API merges
  them), so the checks below run on wire turns;
- pairing, both ways: every tool_use of an assistant turn is answered by exactly one tool_result in
  the next wire turn, and every tool_result answers a tool_use of the assistant turn just before it;
  a turn's tool_results come before its other blocks;
- no empty content: no message without blocks, no text block that is empty or only whitespace, no
  tool_result without content (the API takes it, but an empty result at the prompt's tail can end
  the model's turn; it gets the `(<Tool> completed with no output)` marker);
- at most four `cache_control` breakpoints across tools, system and messages.

`check_request` lists violations; `repair_request` returns a request that satisfies them (a synthetic
error result for an unanswered tool_use, an orphan tool_result dropped, an empty block filled) plus
what it changed. `ensure_valid` is what the loop calls: it repairs and traces in production, and
raises `RequestInvalid` when `AGENT_STRICT_REQUESTS=1` (the test suite sets it, so a pipeline bug
fails the test that caused it instead of being silently repaired).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.config import getenv
from services.trace import trace

MAX_CACHE_BREAKPOINTS = 4
STRICT_ENV = "AGENT_STRICT_REQUESTS"
MISSING_RESULT_TEXT = "[tool result missing from the request; the agent repaired it before sending]"
EMPTY_TEXT = "(empty message)"


class RequestInvalid(Exception):
    pass


@dataclass(frozen=True)
class Violation:
    kind: str  # roles | unanswered | orphan | duplicate | order | empty | breakpoints
    index: int  # message index (-1 for the request as a whole)
    detail: str

    def __str__(self) -> str:
        where = f"message {self.index}" if self.index >= 0 else "request"
        return f"{self.kind} at {where}: {self.detail}"


def empty_result_marker(tool_name: str) -> str:
    """Claude Code's marker for a tool_result that carried nothing (or only whitespace)."""
    return f"({tool_name} completed with no output)"


def is_blank_content(content: Any) -> bool:
    """A tool_result content with nothing the model can read: "", whitespace, or only blank text blocks."""
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        return all(
            isinstance(b, dict) and b.get("type") == "text" and not str(b.get("text", "")).strip()
            for b in content
        )
    return False


def _blank_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[int]]]:
    """Wire turns: (role, indices of the messages merged into it)."""
    turns: list[tuple[str, list[int]]] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if turns and turns[-1][0] == role == "user":
            turns[-1][1].append(i)
        else:
            turns.append((str(role), [i]))
    return turns


def count_breakpoints(system: Any, tools: Any, messages: list[dict[str, Any]]) -> int:
    n = 0
    for part in (system if isinstance(system, list) else [], tools or []):
        n += sum(1 for b in part if isinstance(b, dict) and "cache_control" in b)
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return n


def _check_ends(messages: list[dict[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    if messages[0].get("role") != "user":
        out.append(Violation("roles", 0, "the first message is not a user message"))
    if messages[-1].get("role") != "user":
        out.append(Violation("roles", len(messages) - 1, "the last message is not a user message"))
    return out


def _check_message(i: int, m: dict[str, Any]) -> list[Violation]:
    """One message's role and blocks: a known role, no empty content, no blank text or tool_result."""
    out: list[Violation] = []
    content = m.get("content")
    if m.get("role") not in ("user", "assistant"):
        out.append(Violation("roles", i, f"unknown role {m.get('role')!r}"))
    if not content:
        return [*out, Violation("empty", i, "no content")]
    if isinstance(content, str):
        return [*out, Violation("empty", i, "blank text")] if not content.strip() else out
    for b in content:
        if _blank_text(b):
            out.append(Violation("empty", i, "blank text block"))
        elif b.get("type") == "tool_result" and is_blank_content(b.get("content")):
            out.append(Violation("empty", i, f"blank tool_result {b.get('tool_use_id')}"))
    return out


def _unanswered(pending: dict[str, int]) -> list[Violation]:
    return [Violation("unanswered", mi, f"tool_use {tid} has no tool_result") for tid, mi in pending.items()]


def _tool_uses(messages: list[dict[str, Any]], idx: list[int]) -> dict[str, int]:
    """tool_use id -> message index, for an assistant turn."""
    return {str(b.get("id")): i for i in idx for b in messages[i].get("content") or []
            if isinstance(b, dict) and b.get("type") == "tool_use"}


def _check_results(
    messages: list[dict[str, Any]], idx: list[int], pending: dict[str, int]
) -> list[Violation]:
    """A user turn's tool_results against the assistant turn before it; answered ids leave `pending`."""
    out: list[Violation] = []
    answered: set[str] = set()
    seen_other = False
    for i in idx:
        content = messages[i].get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") != "tool_result":
                seen_other = True
                continue
            tid = b.get("tool_use_id")
            if seen_other:
                out.append(Violation("order", i, f"tool_result {tid} after other content"))
            if tid in answered:
                out.append(Violation("duplicate", i, f"second tool_result for {tid}"))
            elif tid not in pending:
                out.append(Violation("orphan", i, f"tool_result {tid} answers no tool_use just before it"))
            else:
                answered.add(tid)
                del pending[tid]
    return out


def _check_pairing(messages: list[dict[str, Any]], turns: list[tuple[str, list[int]]]) -> list[Violation]:
    out: list[Violation] = []
    pending: dict[str, int] = {}  # tool_use id -> message index, from the assistant turn just before
    for role, idx in turns:
        if role == "assistant":
            out += _unanswered(pending)
            pending = _tool_uses(messages, idx)
            continue
        out += _check_results(messages, idx, pending)
        out += _unanswered(pending)
        pending = {}
    return out + _unanswered(pending)


def check_request(
    messages: list[dict[str, Any]], system: Any = None, tools: Any = None
) -> list[Violation]:
    if not messages:
        return [Violation("empty", -1, "no messages")]
    out = _check_ends(messages)
    for i, m in enumerate(messages):
        out += _check_message(i, m)
    turns = _turns(messages)
    out += _check_pairing(messages, turns)
    out += [Violation("roles", b[1][0], "two assistant messages in a row")
            for a, b in zip(turns, turns[1:], strict=False) if a[0] == b[0] == "assistant"]
    n = count_breakpoints(system, tools, messages)
    if n > MAX_CACHE_BREAKPOINTS:
        out.append(Violation("breakpoints", -1, f"{n} cache breakpoints (at most {MAX_CACHE_BREAKPOINTS})"))
    return out


def _tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    names = {}
    for m in messages:
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    names[b.get("id")] = b.get("name", "Tool")
    return names


def _fill_blocks(m: dict[str, Any], names: dict[str, str]) -> dict[str, Any] | None:
    """`m` with blank texts dropped and blank results given the marker; None when nothing is left."""
    content = m.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content.strip() else []
    new_blocks = []
    changed = False
    for b in content or []:
        if _blank_text(b):
            changed = True
            continue
        if b.get("type") == "tool_result" and is_blank_content(b.get("content")):
            b = {**b, "content": empty_result_marker(names.get(b.get("tool_use_id"), "Tool"))}
            changed = True
        new_blocks.append(b)
    if not new_blocks:
        return None
    return {**m, "content": new_blocks} if changed or content is not m.get("content") else m


def _merge_assistants(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for m in msgs:
        if merged and merged[-1].get("role") == m.get("role") == "assistant":
            merged[-1] = {**merged[-1], "content": [*merged[-1]["content"], *m["content"]]}
        else:
            merged.append(m)
    return merged


def _use_ids(m: dict[str, Any]) -> set[str]:
    return {b.get("id") for b in m["content"] if b.get("type") == "tool_use"}


def _missing_results(
    merged: list[dict[str, Any]], turns: list[tuple[str, list[int]]], t: int
) -> list[dict[str, Any]]:
    """The synthetic results message for assistant turn `t`'s unanswered tool_uses (empty list: none)."""
    idx = turns[t][1]
    uses = [b for b in merged[idx[0]]["content"] if b.get("type") == "tool_use"]
    answered = set()
    if t + 1 < len(turns) and turns[t + 1][0] == "user":
        answered = {b.get("tool_use_id") for i in turns[t + 1][1] for b in merged[i]["content"]
                    if b.get("type") == "tool_result"}
    missing = [u for u in uses if u.get("id") not in answered]
    if not missing:
        return []
    return [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": u.get("id"), "content": MISSING_RESULT_TEXT, "is_error": True}
        for u in missing
    ]}]


def _user_turn(merged: list[dict[str, Any]], idx: list[int], prev_uses: set[str]) -> list[dict[str, Any]]:
    """A user turn with only the results that answer `prev_uses` (once each, first), then its other blocks."""
    results: list[dict[str, Any]] = []
    others: list[tuple[int, list[dict[str, Any]]]] = []
    for i in idx:
        keep = []
        for b in merged[i]["content"]:
            if b.get("type") != "tool_result":
                keep.append(b)
            elif b.get("tool_use_id") in prev_uses:
                prev_uses.discard(b.get("tool_use_id"))
                results.append(b)
            # else an orphan or a duplicate: dropped
        others.append((i, keep))
    out = [{"role": "user", "content": results}] if results else []
    for i, keep in others:
        m = merged[i]
        if keep == m["content"]:
            out.append(m)
        elif keep:
            out.append({**m, "content": keep})
    return out


def _pair_turns(merged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    turns = _turns(merged)
    for t, (role, idx) in enumerate(turns):
        if role == "assistant":
            out.extend(merged[i] for i in idx)
            out.extend(_missing_results(merged, turns, t))
            continue
        prev = turns[t - 1] if t > 0 else None
        prev_uses = _use_ids(merged[prev[1][0]]) if prev is not None and prev[0] == "assistant" else set()
        out.extend(_user_turn(merged, idx, prev_uses))
    return out


def repair_request(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of `messages` that passes `check_request` (cache breakpoints aside). Unchanged messages
    stay the same objects; the repair is deterministic, so a repaired history repairs the same way
    on every call and the prompt cache still hits."""
    names = _tool_names(messages)
    # 1. Blocks: fill blank texts and results; drop messages left empty.
    msgs = [f for f in (_fill_blocks(m, names) for m in messages) if f is not None]
    # 2. Roles: merge assistant messages in a row; pair results with the assistant turn before them.
    out = _pair_turns(_merge_assistants(msgs))
    # The synthetic results message and a following user turn are one wire turn: keep results first.
    out = _results_first(out)
    if not out or out[0].get("role") != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": EMPTY_TEXT}]})
    if out[-1].get("role") != "user":
        out.append({"role": "user", "content": [{"type": "text", "text": "Continue."}]})
    return out


def _results_first(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, idx in _turns(messages):
        group = [messages[i] for i in idx]
        if role == "user" and len(group) > 1:
            res = [g for g in group if any(b.get("type") == "tool_result" for b in g["content"])]
            rest = [g for g in group if g not in res]
            group = res + rest
        out.extend(group)
    return out


def strict() -> bool:
    return getenv(STRICT_ENV) == "1"


def ensure_valid(
    messages: list[dict[str, Any]], system: Any = None, tools: Any = None, where: str = "request"
) -> list[dict[str, Any]]:
    """The request's messages, valid: unchanged when they are, else repaired (and traced).

    Under AGENT_STRICT_REQUESTS=1 a violation raises instead: tests must never need the repair."""
    violations = check_request(messages, system, tools)
    if not violations:
        return messages
    text = "; ".join(str(v) for v in violations[:5])
    if strict():
        raise RequestInvalid(f"invalid {where}: {text}")
    repaired = repair_request(messages)
    trace("request.repaired", where=where, violations=len(violations), first=text)
    return repaired
