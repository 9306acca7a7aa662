"""The outbound request check: every violation is found, every repair passes the check, and the loop
never sends a broken request (strict mode raises, production repairs and traces)."""

from __future__ import annotations

import pytest

from services.request_check import (
    MISSING_RESULT_TEXT,
    RequestInvalid,
    check_request,
    ensure_valid,
    repair_request,
)


def u(*blocks):
    return {"role": "user", "content": list(blocks)}


def a(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def t(text):
    return {"type": "text", "text": text}


def use(tid, name="Read"):
    return {"type": "tool_use", "id": tid, "name": name, "input": {}}


def res(tid, content="ok"):
    return {"type": "tool_result", "tool_use_id": tid, "content": content}


def kinds(msgs, **kw):
    return sorted(v.kind for v in check_request(msgs, **kw))


def test_valid_request_has_no_violation():
    msgs = [u(t("hi")), a(t("x"), use("1"), use("2")), u(res("1"), res("2")), a(t("done")), u(t("next"))]
    assert check_request(msgs) == []
    assert ensure_valid(msgs) is msgs


def test_consecutive_user_messages_are_one_wire_turn():
    # hook context + prompt, and results + an injected skill message: the API merges them.
    msgs = [u(t("ctx")), u(t("hi")), a(use("1")), u(res("1")), u(t("skill text"))]
    assert check_request(msgs) == []


@pytest.mark.parametrize(
    "msgs, expected",
    [
        ([u(t("hi")), a(use("1")), u(t("no result"))], ["unanswered"]),
        ([u(t("hi")), a(t("x")), u(res("9"))], ["orphan"]),
        ([u(res("9"))], ["orphan"]),
        ([u(t("hi")), a(use("1")), u(res("1"), res("1"))], ["duplicate"]),
        ([u(t("hi")), a(use("1")), u(t("first"), res("1"))], ["order"]),
        ([a(t("x")), u(t("hi"))], ["roles"]),
        ([u(t("hi")), a(t("x"))], ["roles"]),
        ([u(t("hi")), a(t("x")), a(t("y")), u(t("z"))], ["roles"]),
        ([u(t("  \n"))], ["empty"]),
        ([u(t("hi")), a(use("1")), u(res("1", " \t"))], ["empty"]),
        ([u(t("hi")), a(use("1")), u(res("1", [t("")]))], ["empty"]),
        ([u(t("hi")), {"role": "assistant", "content": []}, u(t("x"))], ["empty"]),
        ([], ["empty"]),
    ],
)
def test_each_violation_is_found_and_repaired(msgs, expected):
    assert kinds(msgs) == expected
    fixed = repair_request(msgs)
    assert check_request(fixed) == []


def test_repair_answers_a_missing_result_with_an_error_and_keeps_the_rest():
    msgs = [u(t("hi")), a(use("1"), use("2")), u(res("2", "two"))]
    fixed = repair_request(msgs)
    results = [b for m in fixed for b in m["content"] if b.get("type") == "tool_result"]
    assert {r["tool_use_id"] for r in results} == {"1", "2"}
    synthetic = next(r for r in results if r["tool_use_id"] == "1")
    assert synthetic["is_error"] and synthetic["content"] == MISSING_RESULT_TEXT
    assert next(r for r in results if r["tool_use_id"] == "2")["content"] == "two"


def test_repair_fills_blank_result_with_the_tool_marker():
    msgs = [u(t("hi")), a(use("1", "Bash")), u(res("1", "   "))]
    fixed = repair_request(msgs)
    assert fixed[-1]["content"][0]["content"] == "(Bash completed with no output)"


def test_breakpoints_over_four_are_a_violation():
    cc = {"cache_control": {"type": "ephemeral"}}
    system = [{"type": "text", "text": "s", **cc}]
    tools = [{"name": "Read", **cc}]
    msgs = [u({**t("a"), **cc}), a({**t("b"), **cc}), u({**t("c"), **cc})]
    assert kinds(msgs, system=system, tools=tools) == ["breakpoints"]
    assert check_request(msgs[:2] + [u(t("c"))], system=system, tools=tools) == []


def test_strict_mode_raises_and_production_repairs(monkeypatch, capsys):
    broken = [u(t("hi")), a(use("1")), u(t("lost"))]
    monkeypatch.setenv("AGENT_STRICT_REQUESTS", "1")
    with pytest.raises(RequestInvalid, match="unanswered"):
        ensure_valid(broken)
    monkeypatch.setenv("AGENT_STRICT_REQUESTS", "0")
    monkeypatch.setenv("TRACE", "1")
    fixed = ensure_valid(broken)
    assert check_request(fixed) == []
    assert "request.repaired" in capsys.readouterr().err


def test_repair_is_deterministic():
    broken = [u(t("hi")), a(use("1")), u(t("lost")), a(t("x")), u(res("zz"), t("y"))]
    assert repair_request(broken) == repair_request(broken)
