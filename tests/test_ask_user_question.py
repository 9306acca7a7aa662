"""AskUserQuestion as Claude Code 2.1.332 has it (recorded from the binary against tests/fake_anthropic.py):
offered where someone can answer, answered in the REPL's menu (a real pseudo-terminal here) and through the
SDK's `can_use_tool` (tests/compat/test_ask_user_question_sdk.py); in `-p` it is not offered and a call made
anyway gets Claude Code's "disabled" tool_use_error."""

from __future__ import annotations

import sys

import pytest

from tests.fake_anthropic import tool_block
from tools.ask_user_question import DISABLED_RESULT, join_labels, result_text

Q1 = {"question": "Which?", "header": "Lib", "options": [{"label": "A", "description": "a"},
                                                       {"label": "B", "description": "b"}], "multiSelect": False}
Q2 = {"question": "Features?", "header": "F", "options": [{"label": "X", "description": "x"},
                                                         {"label": "Y", "description": "y"},
                                                         {"label": "Z", "description": "z"}], "multiSelect": True}
PLAIN = "Your questions have been answered: {}. You can now continue with these answers in mind."
FREE = ("The user answered: {}. Read the answers carefully \u2014 they may request clarification, changes, or "
        "that you not proceed \u2014 and follow what they actually say.")


def test_result_wording_recorded_from_the_binary() -> None:
    # The three texts 2.1.332 sent for these answers (stream-json, --permission-prompt-tool stdio).
    assert result_text([Q1], {"Which?": "A"}, {}) == PLAIN.format('"Which?"="A"')
    assert result_text([Q1, Q2], {"Which?": "A", "Features?": "X, Y"}, {"Which?": {"notes": "because"}}) == \
        FREE.format('"Which?"="A" notes: because, "Features?"="X, Y"')
    assert result_text([Q1], {}, {}) == "The user did not answer the questions."
    # Free text (the "Other" answer) is not one of the labels: the careful-reading wording.
    assert result_text([Q1], {"Which?": "use C"}, {}) == FREE.format('"Which?"="use C"')
    assert result_text([Q2], {"Features?": "X, Z"}, {}) == PLAIN.format('"Features?"="X, Z"')
    assert result_text([Q2], {"Features?": "X, nope"}, {}).startswith("The user answered:")
    assert join_labels(["a, b", "c"]) == '"a, b", c'


def test_one_shot_does_not_offer_it_and_a_call_gets_the_disabled_error(cli, fake_anthropic) -> None:
    fake_anthropic.reply(tool_block("AskUserQuestion", {"questions": [Q1]}))
    fake_anthropic.text("Done.")
    r = cli("-p", "ask me")
    assert r.code == 0, r.stderr
    first, second = fake_anthropic.requests
    assert "AskUserQuestion" not in [t["name"] for t in first.body["tools"]]
    result = second.messages[-1]["content"][0]
    assert result["is_error"] and result["content"] == DISABLED_RESULT
    assert DISABLED_RESULT == ("<tool_use_error>Error: No such tool available: AskUserQuestion. AskUserQuestion "
                               "is disabled for this session, in subagents as well as here.</tool_use_error>")


pexpect = pytest.importorskip("pexpect")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_repl_menu_single_multi_and_other(cli, fake_anthropic) -> None:
    from tests.test_repl_pty import finish, spawn, wait_screen

    fake_anthropic.reply(tool_block("AskUserQuestion", {"questions": [Q1, Q2]}))
    fake_anthropic.reply(tool_block("AskUserQuestion", {"questions": [Q1]}))
    fake_anthropic.text("Thanks.")
    child = spawn(cli)
    child.send("ask me\r")
    wait_screen(child, "(1/2) [Lib] Which?")
    wait_screen(child, "3. Other")
    child.send("9\r")  # out of range: asked again
    wait_screen(child, "a number from 1 to 3")
    child.send("2\r")
    wait_screen(child, "(2/2) [F] Features?")
    child.send("1,4\r")  # X plus Other
    wait_screen(child, "Your answer:")
    child.send("my own, really\r")
    wait_screen(child, "[Lib] Which?")  # the second call
    child.send("\x1b")  # Esc declines
    wait_screen(child, "Thanks.")
    child.send("\x04")
    assert finish(child) == 0
    first, second, third = fake_anthropic.requests[:3]
    assert "AskUserQuestion" in [t["name"] for t in first.body["tools"]]
    answered = second.messages[-1]["content"][0]
    assert not answered.get("is_error")
    assert answered["content"] == FREE.format('"Which?"="B", "Features?"="X, "my own, really""')
    declined = third.messages[-1]["content"][0]
    assert declined["is_error"] and "doesn't want to proceed" in str(declined["content"])
