"""AskUserQuestion: the model asks the user one to four multiple-choice questions and waits for the answers.

The name, description, input schema and result wording are Claude Code 2.1.332's (recorded from the binary
and from its requests to the fake server). The answers come back in the input, as in Claude Code: the host
that asks (the REPL's menu, the SDK's `can_use_tool`) returns `updatedInput` with `answers` (question text ->
the chosen label, a multi-select's labels joined by ", ", or free text typed under "Other") and optional
`annotations` (question text -> {"notes", "preview"}). Like Claude Code, the tool is offered only where someone
can answer (the REPL, an SDK host); a `-p` run gets DISABLED_RESULT when the model calls it anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolOutput, tool_use_error

NAME = "AskUserQuestion"
DESCRIPTION = (
    "Use this tool only when you are blocked on a decision that is genuinely the user's to make: one you cannot resolve from the request, the code, or sensible defaults.\n"
    '\n'
    'Usage notes:\n'
    '- Users will always be able to select "Other" to provide custom text input\n'
    '- Use multiSelect: true to allow multiple answers to be selected for a question\n'
    '- If you recommend a specific option, make that the first option in the list and add "(Recommended)" at the end of the label\n'
    '\n'
    'Plan mode note: To switch into plan mode, use EnterPlanMode (not this tool). Once in plan mode, use this tool to clarify requirements or choose between approaches BEFORE finalizing your plan. Do NOT use this tool to ask "Is my plan ready?", "Should I proceed?", or otherwise reference "the plan" in questions — the user cannot see the plan until you call ExitPlanMode for approval.\n'
    '\n'
    "Reserve this for decisions where the user's answer changes what you do next — not for choices with a conventional default or facts you can verify in the codebase yourself. In those cases pick the obvious option, mention it in your response, and proceed.\n"
    '\n'
    'The user may see only the question dialog: tool results and text you wrote earlier in this turn may not be on their screen while it is open. Make each question stand on its own: if it depends on something you found, say so briefly, and name the items you are asking about in the question itself.\n'
)

INPUT_SCHEMA: dict[str, Any] = {'type': 'object',
 'properties': {'questions': {'description': 'Questions to ask the user (1-4 questions)',
                              'minItems': 1,
                              'maxItems': 4,
                              'type': 'array',
                              'items': {'type': 'object',
                                        'properties': {'question': {'description': 'The complete question to ask '
                                                                                   'the user. Should be clear, '
                                                                                   'specific, and end with a '
                                                                                   'question mark. Example: '
                                                                                   '"Which library should we use '
                                                                                   'for date formatting?" If '
                                                                                   'multiSelect is true, phrase '
                                                                                   'it accordingly, e.g. "Which '
                                                                                   'features do you want to '
                                                                                   'enable?"',
                                                                    'type': 'string'},
                                                       'header': {'description': 'Very short label displayed as a '
                                                                                 'chip/tag (max 12 chars). '
                                                                                 'Examples: "Auth method", '
                                                                                 '"Library", "Approach".',
                                                                  'type': 'string'},
                                                       'options': {'description': 'The available choices for this '
                                                                                  'question. Must have 2-4 '
                                                                                  'options. Each option should be '
                                                                                  'a distinct, mutually exclusive '
                                                                                  'choice (unless multiSelect is '
                                                                                  'enabled). There should be no '
                                                                                  "'Other' option, that will be "
                                                                                  'provided automatically.',
                                                                   'minItems': 2,
                                                                   'maxItems': 4,
                                                                   'type': 'array',
                                                                   'items': {'type': 'object',
                                                                             'properties': {'label': {'description': 'The '
                                                                                                                     'display '
                                                                                                                     'text '
                                                                                                                     'for '
                                                                                                                     'this '
                                                                                                                     'option '
                                                                                                                     'that '
                                                                                                                     'the '
                                                                                                                     'user '
                                                                                                                     'will '
                                                                                                                     'see '
                                                                                                                     'and '
                                                                                                                     'select. '
                                                                                                                     'Should '
                                                                                                                     'be '
                                                                                                                     'concise '
                                                                                                                     '(1-5 '
                                                                                                                     'words) '
                                                                                                                     'and '
                                                                                                                     'clearly '
                                                                                                                     'describe '
                                                                                                                     'the '
                                                                                                                     'choice.',
                                                                                                      'type': 'string'},
                                                                                            'description': {'description': 'Explanation '
                                                                                                                           'of '
                                                                                                                           'what '
                                                                                                                           'this '
                                                                                                                           'option '
                                                                                                                           'means '
                                                                                                                           'or '
                                                                                                                           'what '
                                                                                                                           'will '
                                                                                                                           'happen '
                                                                                                                           'if '
                                                                                                                           'chosen. '
                                                                                                                           'Useful '
                                                                                                                           'for '
                                                                                                                           'providing '
                                                                                                                           'context '
                                                                                                                           'about '
                                                                                                                           'trade-offs '
                                                                                                                           'or '
                                                                                                                           'implications.',
                                                                                                            'type': 'string'},
                                                                                            'preview': {'description': 'Optional '
                                                                                                                       'preview '
                                                                                                                       'content '
                                                                                                                       'rendered '
                                                                                                                       'when '
                                                                                                                       'this '
                                                                                                                       'option '
                                                                                                                       'is '
                                                                                                                       'focused. '
                                                                                                                       'Use '
                                                                                                                       'for '
                                                                                                                       'mockups, '
                                                                                                                       'code '
                                                                                                                       'snippets, '
                                                                                                                       'or '
                                                                                                                       'visual '
                                                                                                                       'comparisons '
                                                                                                                       'that '
                                                                                                                       'help '
                                                                                                                       'users '
                                                                                                                       'compare '
                                                                                                                       'options. '
                                                                                                                       'See '
                                                                                                                       'the '
                                                                                                                       'tool '
                                                                                                                       'description '
                                                                                                                       'for '
                                                                                                                       'the '
                                                                                                                       'expected '
                                                                                                                       'content '
                                                                                                                       'format.',
                                                                                                        'type': 'string'}},
                                                                             'required': ['label', 'description'],
                                                                             'additionalProperties': False}},
                                                       'multiSelect': {'description': 'Set to true to allow the '
                                                                                      'user to select multiple '
                                                                                      'options instead of just '
                                                                                      'one. Use when choices are '
                                                                                      'not mutually exclusive.',
                                                                       'default': False,
                                                                       'type': 'boolean'}},
                                        'required': ['question', 'header', 'options', 'multiSelect'],
                                        'additionalProperties': False}},
                'answers': {'description': 'User answers collected by the permission component',
                            'type': 'object',
                            'propertyNames': {'type': 'string'},
                            'additionalProperties': {'type': 'string'}},
                'annotations': {'description': 'Optional per-question annotations from the user (e.g., notes on '
                                               'preview selections). Keyed by question text.',
                                'type': 'object',
                                'propertyNames': {'type': 'string'},
                                'additionalProperties': {'type': 'object',
                                                         'properties': {'preview': {'description': 'The preview '
                                                                                                   'content of '
                                                                                                   'the selected '
                                                                                                   'option, if '
                                                                                                   'the question '
                                                                                                   'used '
                                                                                                   'previews.',
                                                                                    'type': 'string'},
                                                                        'notes': {'description': 'Free-text notes '
                                                                                                 'the user added '
                                                                                                 'to their '
                                                                                                 'selection.',
                                                                                  'type': 'string'}},
                                                         'additionalProperties': False}},
                'metadata': {'description': 'Optional metadata for tracking and analytics purposes. Not displayed '
                                            'to user.',
                             'type': 'object',
                             'properties': {'source': {'description': 'Optional identifier for the source of this '
                                                                      'question (e.g., "remember" for /remember '
                                                                      'command). Used for analytics tracking.',
                                                       'type': 'string'}},
                             'additionalProperties': False}},
 'required': ['questions'],
 'additionalProperties': False}

NOTES_ONLY = "(notes only)"  # an answer that is only a note, as Claude Code marks it
NO_ANSWER = "The user did not answer the questions."
DISABLED_RESULT = tool_use_error(
    f"Error: No such tool available: {NAME}. {NAME} is disabled for this session, in subagents as well as here.")


def _quote(label: str) -> str:
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'


def join_labels(labels: list[str]) -> str:
    """A multi-select answer, Claude Code's way: labels joined by ", ", a label with ", " or a quote quoted."""
    return ", ".join(_quote(x) if ", " in x or '"' in x else x for x in labels)


def _split_labels(text: str) -> list[str] | None:
    """The inverse of join_labels (None when the text is not such a list)."""
    import json

    out: list[str] = []
    rest = text
    while rest:
        if rest.startswith('"'):
            end = 1
            while end < len(rest) and rest[end] != '"':
                end += 2 if rest[end] == "\\" else 1
            if end >= len(rest):
                return None
            try:
                out.append(json.loads(rest[: end + 1]))
            except ValueError:
                return None
            rest = rest[end + 1:]
        else:
            cut = rest.find(", ")
            out.append(rest if cut < 0 else rest[:cut])
            rest = "" if cut < 0 else rest[cut:]
        if rest.startswith(", "):
            rest = rest[2:]
        elif rest:
            return None
    return out


def _is_plain(question: dict[str, Any], answer: Any, note: str) -> bool:
    """An answer that is one of the offered labels (or a list of them), with no note: no free text to read."""
    if note:
        return False
    labels = {str(o.get("label")) for o in question.get("options") or [] if isinstance(o, dict)}
    multi = question.get("multiSelect") is True
    if isinstance(answer, list):
        return multi and bool(answer) and all(a in labels for a in answer)
    if not answer or answer == NOTES_ONLY or answer in labels:
        return True
    if not multi or not isinstance(answer, str):
        return False
    parts = _split_labels(answer)
    return bool(parts) and join_labels(parts or []) == answer and all(p in labels for p in parts or [])


def result_text(questions: list[dict[str, Any]], answers: dict[str, Any], annotations: dict[str, Any]) -> str:
    """The tool_result Claude Code sends for these answers."""
    parts: list[str] = []
    plain = True
    for q in questions:
        text = str(q.get("question", ""))
        answer = answers.get(text)
        note_obj = _table(annotations.get(text))
        note = _text(note_obj.get("notes"))
        preview = _text(note_obj.get("preview"))
        answered = bool(answer) and answer != NOTES_ONLY
        plain = plain and _is_plain(q, answer, note)
        if not answered and not note:
            continue
        bits = [f'"{text}"="{answer}"' if answered else f'"{text}"=(no option selected)']
        if preview:
            bits.append(f"selected preview:\n{preview}")
        if note:
            bits.append(f"notes: {note}")
        parts.append(" ".join(bits))
    if not parts:
        return NO_ANSWER
    joined = ", ".join(parts)
    if plain:
        return f"Your questions have been answered: {joined}. You can now continue with these answers in mind."
    return (f"The user answered: {joined}. Read the answers carefully \u2014 they may request clarification, "
            "changes, or that you not proceed \u2014 and follow what they actually say.")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def duplicate_problem(questions: list[dict[str, Any]]) -> str | None:
    """Answers are keyed by question text and chosen by label: both must be unique."""
    texts = [q.get("question") for q in questions]
    if len(set(texts)) != len(texts):
        return "Question texts must be unique"
    for q in questions:
        labels = [o.get("label") for o in q.get("options") or []]
        if len(set(labels)) != len(labels):
            return f'Option labels must be unique within each question ("{q.get("question")}")'
    return None


class AskUserQuestionTool(Tool):
    name = NAME
    description = DESCRIPTION
    input_schema = INPUT_SCHEMA
    # The gate lets it through; the question itself is asked here (it changes nothing on disk).
    read_only = True

    def __init__(self, get_gate: Callable[[], Any]):
        self.get_gate = get_gate

    def describe(self, input: dict[str, Any]) -> str:
        qs = input.get("questions")
        return f"Ask {len(qs)} question{'s' if len(qs) != 1 else ''}" if isinstance(qs, list) else "Ask the user"

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        from tools.permissions import REJECT_MESSAGE, PermissionRequest, PermissionResult

        questions = [q for q in input.get("questions") or [] if isinstance(q, dict)]
        problem = duplicate_problem(questions)
        if problem:
            raise ToolError(tool_use_error(f"InputValidationError: {problem}"))
        gate = self.get_gate()
        if gate.ask is None:  # not offered then; a call made anyway gets Claude Code's words
            raise ToolError(DISABLED_RESULT)
        label = "; ".join(str(q.get("question", "")) for q in questions)
        answer = await gate.ask(PermissionRequest(self, input, label, "", ctx.tool_use_id, display=label,
                                                  always_rule=None))
        if isinstance(answer, PermissionResult) and answer.answer == "deny" or answer == "deny":
            message = answer.message if isinstance(answer, PermissionResult) else ""
            return ToolOutput(message or REJECT_MESSAGE, is_error=True, summary="not answered")
        final = answer.updated_input if isinstance(answer, PermissionResult) and answer.updated_input else input
        answers = _table(final.get("answers"))
        notes = _table(final.get("annotations"))
        asked = [q for q in final.get("questions") or questions if isinstance(q, dict)]
        return ToolOutput(result_text(asked, answers, notes), summary=f"{len(answers)} answered")
