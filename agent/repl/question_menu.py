"""AskUserQuestion in the REPL: each question shown with its numbered options and "Other", answered on the
input line.

A single-choice question takes one number; a multi-select question takes several ("1,3" or "1 3"). The number
after the last option is "Other": the user then types the answer in their own words, as in Claude Code.
Enter on an empty line skips the question; Esc or Ctrl-C (an empty answer to the first prompt of nothing)
declines them all (the model gets Claude Code's rejection wording). The answers go back to the tool in `updatedInput`, the way the SDK's host sends them.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from agent.repl.permission_menu import visible
from tools.ask_user_question import join_labels
from tools.permissions import PermissionRequest, PermissionResult

OTHER = "Other"


class Asker(Protocol):
    def say(self, text: str, style: str = "") -> None: ...

    async def ask_text(self, question: str) -> str | None: ...


def question_lines(index: int, total: int, question: dict[str, Any]) -> list[str]:
    """The question as shown: header chip, text, numbered options with descriptions, then Other."""
    header = visible(str(question.get("header") or ""))
    head = f"[{header}] " if header else ""
    count = f"({index}/{total}) " if total > 1 else ""
    lines = [f"{count}{head}{visible(str(question.get('question', '')))}"]
    options = [o for o in question.get("options") or [] if isinstance(o, dict)]
    for i, option in enumerate(options, 1):
        desc = visible(str(option.get("description") or ""))
        lines.append(f"  {i}. {visible(str(option.get('label', '')))}" + (f" — {desc}" if desc else ""))
    lines.append(f"  {len(options) + 1}. {OTHER} (type your own answer)")
    return lines


def parse_choice(reply: str, n_options: int, multi: bool) -> list[int] | None:
    """1-based choices from a reply ("2", "1,3", "1 3"); None when the reply is not such a list."""
    items = [x for x in re.split(r"[,\s]+", reply.strip()) if x]
    if not items or not all(x.isdigit() for x in items):
        return None
    picks = list(dict.fromkeys(int(x) for x in items))
    if any(p < 1 or p > n_options + 1 for p in picks) or (not multi and len(picks) != 1):
        return None
    return picks


async def _one(asker: Asker, question: dict[str, Any], index: int, total: int) -> str | None:
    """The answer to one question ("" when skipped), None when the user declined."""
    for line in question_lines(index, total, question):
        asker.say(line)
    options = [str(o.get("label", "")) for o in question.get("options") or [] if isinstance(o, dict)]
    multi = question.get("multiSelect") is True
    prompt = "Numbers, e.g. 1,3 (Enter skips): " if multi else "Number (Enter skips): "
    while True:
        reply = await asker.ask_text(prompt)
        if reply is None:
            return None
        if not reply.strip():
            return ""
        picks = parse_choice(reply, len(options), multi)
        if picks is None:
            asker.say(f"Type {'numbers' if multi else 'a number'} from 1 to {len(options) + 1}.", "yellow")
            continue
        labels = [options[p - 1] for p in picks if p <= len(options)]
        if len(options) + 1 in picks:
            other = await asker.ask_text("Your answer: ")
            if other is None:
                return None
            if other.strip():
                labels.append(other.strip())
        return join_labels(labels) if multi else (labels[0] if labels else "")


async def ask_questions(asker: Asker, request: PermissionRequest) -> PermissionResult:
    """Every question in turn; the answers (question text -> answer) in the tool's input."""
    questions = [q for q in request.input.get("questions") or [] if isinstance(q, dict)]
    answers: dict[str, str] = {}
    for i, question in enumerate(questions, 1):
        answer = await _one(asker, question, i, len(questions))
        if answer is None:
            asker.say("Declined to answer.", "yellow")
            return PermissionResult("deny")  # the tool answers with Claude Code's rejection words
        if answer:
            answers[str(question.get("question", ""))] = answer
    return PermissionResult("once", updated_input={**request.input, "answers": answers})
