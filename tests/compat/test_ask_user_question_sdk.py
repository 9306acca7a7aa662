"""AskUserQuestion through the real claude-agent-sdk: the question reaches `can_use_tool` with the model's input,
the host's answers come back in `updated_input["answers"]` (as Claude Code 2.1.332 reads them, recorded), a
denial is an is_error result with the host's message, and malformed input never reaches the host."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, query  # noqa: E402

from tests.compat.test_agent_sdk import _prompts, launcher, options  # noqa: E402,F401
from tests.fake_anthropic import FakeAnthropic, tool_block  # noqa: E402
from tests.test_ask_user_question import PLAIN, Q1, Q2  # noqa: E402

pytestmark = pytest.mark.asyncio


def _result(fake: FakeAnthropic, n: int) -> dict[str, Any]:
    return fake.requests[n].messages[-1]["content"][0]


async def test_answers_come_back_in_updated_input(options, fake_anthropic: FakeAnthropic) -> None:  # noqa: F811
    fake_anthropic.reply(tool_block("AskUserQuestion", {"questions": [Q1, Q2]}, id="toolu_q"))
    fake_anthropic.reply(tool_block("AskUserQuestion", {"questions": [Q1]}, id="toolu_q2"))
    fake_anthropic.text("Done.")
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, input: dict[str, Any], ctx: Any) -> Any:
        asked.append((name, dict(input)))
        if len(asked) == 1:
            return PermissionResultAllow(updated_input={**input, "answers": {"Which?": "A", "Features?": "X, Z"}})
        return PermissionResultDeny(message="User declined to answer")

    msgs = [m async for m in query(prompt=_prompts("ask me"), options=options(can_use_tool=can_use_tool))]
    assert msgs
    assert asked[0] == ("AskUserQuestion", {"questions": [Q1, Q2]})
    assert "AskUserQuestion" in [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    first = _result(fake_anthropic, 1)
    assert not first.get("is_error") and first["content"] == PLAIN.format('"Which?"="A", "Features?"="X, Z"')
    second = _result(fake_anthropic, 2)
    assert second["is_error"] and second["content"] == "User declined to answer"


@pytest.mark.parametrize("bad", [
    {"questions": []},
    {"questions": [{**Q1, "options": Q1["options"][:1]}]},  # one option: no decision in it
    {"questions": [Q1, Q1]},  # answers are keyed by the question's text
    {"questions": "Which?"},
    {"questions": [{**Q1, "options": [{"label": "A", "description": "a"}, {"label": "A", "description": "b"}]}]},
])
async def test_malformed_input_is_an_error_and_never_asked(options, fake_anthropic: FakeAnthropic,  # noqa: F811
                                                          bad: dict[str, Any]) -> None:
    fake_anthropic.reply(tool_block("AskUserQuestion", bad))
    fake_anthropic.text("Ok.")
    asked: list[str] = []

    async def can_use_tool(name: str, input: dict[str, Any], ctx: Any) -> Any:
        asked.append(name)
        return PermissionResultAllow()

    [m async for m in query(prompt=_prompts("ask"), options=options(can_use_tool=can_use_tool))]
    result = _result(fake_anthropic, 1)
    assert result["is_error"] and "InputValidationError" in str(result["content"])
    assert asked == []
