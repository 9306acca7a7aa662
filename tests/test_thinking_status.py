"""The model thinking, shown: in the REPL a spinner while a thinking block streams and "thought for Ns"
after it (Claude Code 2.1.332's words), with the display omitted (no text) and with text."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from agent.repl.render import Renderer, make_console
from agent.repl.thinking_status import ThinkingClock, label, thought_for
from services.events import AssistantEvent, TextDeltaEvent, ThinkingDeltaEvent
from services.messages import assistant_message, text_block
from tests.fake_anthropic import thinking_block


def test_words_grow_with_the_time() -> None:
    assert [label(s) for s in (0, 9.9, 10, 25, 30, 44, 45, 600)] == [
        "thinking", "thinking", "still thinking", "thinking more", "thinking some more", "thinking some more",
        "deep in thought", "deep in thought"]
    assert thought_for(0.2) == "thought for 1s" and thought_for(3.6) == "thought for 4s"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def renderer() -> tuple[Renderer, io.StringIO, Clock]:
    buf, clock = io.StringIO(), Clock()
    r = Renderer(make_console(file=buf, width=100, force_terminal=False, color_system=None))
    r.thinking_clock = ThinkingClock(clock)
    return r, buf, clock


def test_omitted_thinking_shows_how_long_and_no_text() -> None:
    r, buf, clock = renderer()
    r.event(ThinkingDeltaEvent(""))  # the block's start: the display is omitted, no text follows
    assert r.thinking_clock.running() == "thinking"
    clock.now += 12
    assert r.thinking_clock.running() == "still thinking"
    clock.now += 0.4
    r.event(TextDeltaEvent("The answer."))
    r.event(AssistantEvent(assistant_message([text_block("The answer.")])))
    out = buf.getvalue()
    assert "✻ thought for 12s" in out and "Thinking…" not in out
    assert out.index("thought for") < out.index("The answer.") and out.count("thought for") == 1


def test_thinking_with_text_keeps_its_lines_and_says_how_long() -> None:
    r, buf, clock = renderer()
    r.event(ThinkingDeltaEvent(""))
    r.event(ThinkingDeltaEvent("Plan: add them.\n"))
    clock.now += 2
    r.event(AssistantEvent(assistant_message([text_block("")])))
    out = buf.getvalue()
    assert "✻ Thinking…" in out and "Plan: add them." in out and "✻ thought for 2s" in out


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_the_repl_says_the_model_thought(cli, fake_anthropic) -> None:
    pytest.importorskip("pexpect")
    from tests.test_repl_pty import finish, read_until, run_line, spawn

    fake_anthropic.reply(thinking_block("", "sig-omitted"), "Worked it out.", pace=0.3)
    child = spawn(cli)
    run_line(child, "think", "Worked it out.")
    screen = read_until(child, lambda s: "thought for" in s)
    assert re.search(r"✻ thought for \d+s", screen), screen
    child.send("/exit\r")
    assert finish(child) == 0


STREAM = json.loads((Path(__file__).parent / "fixtures" / "claude_code" / "thinking_stream.json").read_text())


def run_modes(cli, fake_anthropic, args: list[str]) -> tuple[dict, list[dict]]:
    fake_anthropic.reply(thinking_block("abcdefghij" * 20), "Answer.", fragment=STREAM["delta_chars"])
    result = cli("-p", "Do the task.", "--model", "claude-opus-5-5", *args)
    assert result.code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return fake_anthropic.requests[-1].body["thinking"], lines


def test_json_and_stream_json_report_thinking_as_claude_code(cli, fake_anthropic) -> None:
    for mode, args in (("json", ["--output-format", "json"]), ("text_verbose", ["--verbose"]),
                       ("json_verbose", ["--output-format", "json", "--verbose"])):
        thinking, _ = run_modes(cli, fake_anthropic, args)
        assert thinking == STREAM[mode]["request_thinking"], mode
    thinking, events = run_modes(cli, fake_anthropic, ["--output-format", "stream-json", "--verbose"])
    assert thinking == STREAM["stream_json_verbose"]["request_thinking"]
    ours = []
    for e in events:
        if e["type"] == "system" and e.get("subtype") == "thinking_tokens":
            ours.append({k: e[k] for k in ("type", "subtype", "estimated_tokens", "estimated_tokens_delta")})
        elif e["type"] == "assistant":
            kept = {k: e[k] for k in ("type", "parent_tool_use_id", "thinking_duration_ms", "thinking_display") if k in e}
            if "thinking_duration_ms" in kept:
                assert isinstance(kept["thinking_duration_ms"], int) and kept["thinking_duration_ms"] >= 0
                kept["thinking_duration_ms"] = "<ms>"
            ours.append({**kept, "content_types": [b["type"] for b in e["message"]["content"]]})
    assert ours == STREAM["stream_json_verbose"]["events"]
