"""TodoWrite: the session's plan, a short list of steps with a status each.

The model sends the whole list every time (it replaces the previous one). At most one item is in
progress. The plan lives in `ctx.session.todos`; every accepted update is also written to
the transcript as a `{"type": "todos"}` record when the engine offers a recorder
(`SessionState.record`), and `latest_todos()` recovers it on resume (from that record, or else from the
last successful TodoWrite call in the history). It touches no file, so it is read-only (never asks),
but not concurrency-safe: two updates in one message apply in order.
"""

from __future__ import annotations

from typing import Any

from services.messages import Message, tool_results, tool_uses
from tools.base import TodoItem, Tool, ToolContext, ToolError, ToolOutput

RECORD_TYPE = "todos"
STATUSES = ("pending", "in_progress", "completed")
MAX_TODOS = 100
_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}

DESCRIPTION = """Create and update the plan for the current task: a short list of steps, each pending, in_progress or completed.

When to use it:
- A task with three or more distinct steps, or one the user gave as a list; several requests in one message.
- Right after new instructions arrive, to capture them as steps; before starting a step (mark it in_progress) and as soon as it is done (mark it completed).
When not to use it: a single, trivial step, or a purely conversational request.

Rules:
- Send the whole list every time; it replaces the previous one.
- Exactly one item in_progress while you work (never more than one); mark it completed immediately when it is finished, not in batches.
- Only mark an item completed when it is fully done: tests pass, nothing is left half-implemented. If you are blocked, keep it in_progress and add a step for what blocks you.
- `content` is the step in the imperative ("Run the tests"); `activeForm` is the same step as shown while it runs ("Running the tests").
- Remove steps that are no longer relevant instead of leaving them pending."""


def _clean(todos: Any) -> list[TodoItem]:
    """The list as stored, or ToolError with what is wrong (beyond the schema: one in progress)."""
    if not isinstance(todos, list):
        raise ToolError("todos must be a list of {content, status, activeForm?} objects.")
    out: list[TodoItem] = []
    for i, item in enumerate(todos):
        if not isinstance(item, dict):
            raise ToolError(f"todos[{i}] must be an object with content and status.")
        content = item.get("content")
        status = item.get("status")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"todos[{i}].content must be a non-empty string.")
        if status not in STATUSES:
            raise ToolError(f"todos[{i}].status must be one of {', '.join(STATUSES)} (got {status!r}).")
        entry: TodoItem = {"content": content.strip(), "status": status}
        active = item.get("activeForm")
        if isinstance(active, str) and active.strip():
            entry["activeForm"] = active.strip()
        out.append(entry)
    running = [t["content"] for t in out if t["status"] == "in_progress"]
    if len(running) > 1:
        raise ToolError(
            f"At most one todo may be in_progress; {len(running)} are ({'; '.join(running)}). "
            "Keep one in_progress and set the others to pending or completed."
        )
    return out


def counts(todos: list[TodoItem]) -> dict[str, int]:
    return {s: sum(1 for t in todos if t.get("status") == s) for s in STATUSES}


def format_todos(todos: list[TodoItem]) -> str:
    """The plan as compact lines: `[x] done`, `[>] running (activeForm)`, `[ ] pending`."""
    lines = []
    for t in todos:
        status = t.get("status", "pending")
        text = t.get("content", "")
        if status == "in_progress" and t.get("activeForm"):
            text = t["activeForm"]
        lines.append(f"{_MARKS.get(status, '[ ]')} {text}")
    return "\n".join(lines)


def summary_line(todos: list[TodoItem]) -> str:
    """One phrase for the UI: `2/5 done · Running the tests`."""
    if not todos:
        return "plan cleared"
    c = counts(todos)
    line = f"{c['completed']}/{len(todos)} done"
    running = next((t for t in todos if t.get("status") == "in_progress"), None)
    if running is not None:
        line += f" · {running.get('activeForm') or running.get('content')}"
    return line


def latest_todos(messages: list[Message], records: list[dict[str, Any]] | None = None) -> list[TodoItem] | None:
    """The plan to restore on resume: the last `todos` record, else the input of the last TodoWrite
    call in the history whose result was not an error. None when the session never had a plan."""
    for rec in reversed(records or []):
        if rec.get("type") == RECORD_TYPE and isinstance(rec.get("todos"), list):
            try:
                return _clean(rec["todos"])
            except ToolError:
                break
    failed: set[str] = set()
    for m in messages:
        for r in tool_results(m):
            if r.get("is_error"):
                failed.add(r["tool_use_id"])
    for m in reversed(messages):
        for use in reversed(tool_uses(m)):
            if use.get("name") != TodoWriteTool.name or use.get("id") in failed:
                continue
            try:
                return _clean((use.get("input") or {}).get("todos"))
            except ToolError:
                continue
    return None


class TodoWriteTool(Tool):
    name = "TodoWrite"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "maxItems": MAX_TODOS,
                "description": "The whole updated plan (it replaces the previous one).",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1, "description": "The step, imperative form."},
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "activeForm": {
                            "type": "string",
                            "description": "The step while it runs, present continuous (\"Running the tests\").",
                        },
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["todos"],
        "additionalProperties": False,
    }
    max_result_chars = 20_000

    # changes only the session's plan, never a file
    read_only = True

    def is_concurrency_safe(self, input: dict[str, Any]) -> bool:
        return False  # updates in one message apply in order

    def describe(self, input: dict[str, Any]) -> str:
        todos = input.get("todos")
        return f"TodoWrite {len(todos)} items" if isinstance(todos, list) else "TodoWrite"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        todos = _clean(input.get("todos"))
        previous = ctx.session.todos
        ctx.session.todos = todos
        record = ctx.session.record
        if record is not None and ctx.depth == 0:
            record({"type": RECORD_TYPE, "tool_use_id": ctx.tool_use_id, "todos": todos})
        c = counts(todos)
        if not todos:
            text = "Todo list cleared."
        else:
            head = (
                f"Todo list updated ({len(todos)} items: {c['completed']} completed, "
                f"{c['in_progress']} in progress, {c['pending']} pending)."
            )
            text = head + "\n" + format_todos(todos)
            if c["in_progress"] == 0 and c["pending"]:
                text += "\nNo item is in progress: mark the one you work on next as in_progress."
        summary = summary_line(todos)
        if previous == todos:
            summary += " (unchanged)"
        return ToolOutput(text, summary=summary)
