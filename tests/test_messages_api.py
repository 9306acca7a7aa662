"""The whole Messages API through the real SDK against the fake server: every stop reason's outcome,
thinking and server-tool blocks that round-trip byte for byte, JSON replies to stream requests,
retries that leave no trace in the history, and error texts without credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent.model.anthropic as anthropic_model
from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.anthropic import AnthropicModel
from services.events import RetryEvent, TextDeltaEvent, ThinkingDeltaEvent
from services.messages import INVALID_INPUT_KEY, message_text, tool_uses
from services.thinking import ThinkingOptions
from tests.conftest import TEST_KEY
from tests.fake_anthropic import (
    FakeAnthropic,
    redacted_thinking_block,
    server_tool_block,
    text_block,
    thinking_block,
    tool_block,
    whole_block,
)
from tests.test_anthropic_model import RecordingEcho
from tools.echo import EchoTool

MODEL = "claude-sonnet-4-5"  # a budget-thinking model with a 64K output maximum


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(anthropic_model, "INITIAL_DELAY", 0.01)


def engine(cwd: Path, echo: EchoTool | None = None, **config) -> QueryEngine:
    cfg = EngineConfig(cwd=cwd, model=config.pop("model", MODEL), **config)
    return QueryEngine(cfg, [echo or EchoTool()], QueryDeps(AnthropicModel()))


async def turn(e: QueryEngine, text: str):
    events = [ev async for ev in e.run_turn(text)]
    return events, e.last_terminal


def assistant_blocks(fake: FakeAnthropic, request: int) -> list[list[dict]]:
    return [m["content"] for m in fake.requests[request].messages if m["role"] == "assistant"]


# -- thinking ---------------------------------------------------------------------------------------
async def test_thinking_budget_request_and_blocks_round_trip_byte_identical(fake_env, workdir):
    echo = RecordingEcho()
    fake_env.reply(thinking_block("Plan: echo it.\nThen answer.", "sig-A=="), "Echoing.",
                   tool_block("Echo", {"message": "hi"}, id="toolu_t1"))
    fake_env.reply(redacted_thinking_block("ENCRYPTED+/=="), thinking_block("It said hi.", "sig-B"),
                   "The echo said hi.")
    e = engine(workdir, echo, thinking=ThinkingOptions(budget=8000))
    events, terminal = await turn(e, "echo hi")
    assert terminal.reason == "completed" and echo.calls == [{"message": "hi"}]
    first, second = fake_env.requests
    assert first.body["thinking"] == {"type": "enabled", "budget_tokens": 8000, "display": "omitted"}
    assert first.body["max_tokens"] > 8000
    assert first.body["context_management"] == {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    assert "interleaved-thinking-2025-05-14" in first.headers.get("anthropic-beta", "")
    # The first reply goes back exactly as it came: thinking with its signature, then text and call.
    assert assistant_blocks(fake_env, 1)[0] == [
        {"type": "thinking", "thinking": "Plan: echo it.\nThen answer.", "signature": "sig-A=="},
        {"type": "text", "text": "Echoing."},
        {"type": "tool_use", "id": "toolu_t1", "name": "Echo", "input": {"message": "hi"}},
    ]
    final = e.messages[-1]["content"]
    assert final[0] == {"type": "redacted_thinking", "data": "ENCRYPTED+/=="}
    assert final[1] == {"type": "thinking", "thinking": "It said hi.", "signature": "sig-B"}
    thinking_text = "".join(ev.text for ev in events if isinstance(ev, ThinkingDeltaEvent))
    assert "Plan: echo it." in thinking_text
    answer_text = "".join(ev.text for ev in events if isinstance(ev, TextDeltaEvent))
    assert "Plan" not in answer_text  # thinking never mixes into the answer


async def test_adaptive_model_gets_adaptive_thinking_and_effort(fake_env, workdir):
    fake_env.text("ok")
    e = engine(workdir, model="claude-opus-4-6", thinking=ThinkingOptions(effort="high"))
    _, terminal = await turn(e, "hi")
    assert terminal.reason == "completed"
    body = fake_env.requests[0].body
    assert body["thinking"] == {"type": "adaptive", "display": "omitted"} and body["output_config"] == {"effort": "high"}
    assert "effort-2025-11-24" in fake_env.requests[0].headers.get("anthropic-beta", "")


async def test_thinking_is_on_by_default_and_the_off_switch_disables_it(fake_env, workdir):
    fake_env.text("ok")
    fake_env.text("ok")
    await turn(engine(workdir), "hi")  # no knob at all: on, as Claude Code sends it to this model
    await turn(engine(workdir, thinking=ThinkingOptions(budget=0)), "hi")
    on, off = (r.body for r in fake_env.requests)
    assert on["thinking"] == {"type": "enabled", "budget_tokens": 31_999, "display": "omitted"}
    assert on["max_tokens"] == 32_000 and "context_management" in on
    assert off["thinking"] == {"type": "disabled"} and "context_management" not in off


# -- server tools, citations, pause_turn ----------------------------------------------------------------
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [{"type": "web_search_result", "url": "https://example.com/sky", "title": "Sky",
                 "encrypted_content": "EnC0ded==", "page_age": None}],  # an explicit null goes back as null
}
CITATION = {"type": "web_search_result_location", "url": "https://example.com/sky", "title": "Sky",
            "encrypted_index": "EiX=", "cited_text": "The sky is blue."}


async def test_pause_turn_continues_with_server_blocks_and_citations_kept_exactly(fake_env, workdir):
    fake_env.reply("Searching.", server_tool_block("web_search", {"query": "sky colour"}, id="srvtoolu_1"),
                   whole_block(SEARCH_RESULT), stop_reason="pause_turn")
    fake_env.reply(text_block("The sky is blue.", citations=[CITATION]))
    fake_env.text("Anything else?")
    e = engine(workdir)
    events, terminal = await turn(e, "what colour is the sky")
    assert terminal.reason == "completed" and terminal.stop_reason == "end_turn"
    assert len(fake_env.requests) == 2  # pause_turn: the loop went on by itself
    sent = assistant_blocks(fake_env, 1)[0]
    assert sent == [
        {"type": "text", "text": "Searching."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sky colour"}},
        SEARCH_RESULT,
    ]
    await turn(e, "thanks")
    # The paused reply and its continuation are one assistant message, sent back exactly.
    assert assistant_blocks(fake_env, 2) == [[*sent, {"type": "text", "text": "The sky is blue.",
                                                       "citations": [CITATION]}]]


async def test_two_text_blocks_do_not_run_together(fake_env, workdir):
    fake_env.reply("Searching.", "The sky is blue.")
    e = engine(workdir)
    events, _ = await turn(e, "sky")
    shown = "".join(ev.text for ev in events if isinstance(ev, TextDeltaEvent))
    assert shown == "Searching.\n\nThe sky is blue."
    assert message_text(e.messages[-1]) == "Searching.\n\nThe sky is blue."
    assert e.messages[-1]["content"] == [{"type": "text", "text": "Searching."},
                                        {"type": "text", "text": "The sky is blue."}]


# -- stop reasons -------------------------------------------------------------------------------------
async def test_refusal_is_an_error_outcome_and_no_empty_message_is_stored(fake_env, workdir):
    # As the API sends it: an empty text block, then stop_reason refusal with stop_details.
    fake_env.reply("", stop_reason="refusal",
                   stop_details={"type": "refusal", "category": "cyber", "explanation": "Refused by policy."})
    fake_env.text("Hello again.")
    e = engine(workdir)
    _, terminal = await turn(e, "something refused")
    assert terminal.reason == "refusal" and "declined" in terminal.error
    assert "cyber; Refused by policy." in terminal.error
    assert [m["role"] for m in e.messages] == ["user"]
    _, terminal = await turn(e, "hello")
    assert terminal.reason == "completed"
    assert all(m["content"] for m in fake_env.requests[1].messages)  # never content: []


async def test_max_tokens_inside_a_tool_call_retries_once_with_the_model_maximum(fake_env, workdir):
    echo = RecordingEcho()
    fake_env.reply("Writing.", tool_block("Echo", raw_json='{"message": "a long fi'), stop_reason="max_tokens")
    fake_env.reply("Writing.", tool_block("Echo", {"message": "whole"}, id="toolu_ok"))
    fake_env.text("Done.")
    e = engine(workdir, echo)
    events, terminal = await turn(e, "write it")
    assert terminal.reason == "completed"
    assert echo.calls == [{"message": "whole"}]
    assert fake_env.requests[0].body["max_tokens"] == 32000
    assert fake_env.requests[1].body["max_tokens"] == 64000
    assert any(isinstance(ev, RetryEvent) and ev.reason == "max_tokens" for ev in events)
    assert [u["id"] for m in e.messages for u in tool_uses(m)] == ["toolu_ok"]


async def test_max_tokens_inside_a_tool_call_twice_is_reported_and_nothing_runs(fake_env, workdir):
    echo = RecordingEcho()
    for _ in range(2):
        fake_env.reply("Writing.", tool_block("Echo", raw_json='{"message": "a long fi'), stop_reason="max_tokens")
    e = engine(workdir, echo)
    _, terminal = await turn(e, "write it")
    assert terminal.reason == "max_tokens" and "not run" in terminal.error
    assert echo.calls == []
    history = json.dumps(e.messages)
    assert INVALID_INPUT_KEY not in history and "tool_use" not in history
    assert e.messages[-1]["content"] == [{"type": "text", "text": "Writing."}]


async def test_max_tokens_in_text_keeps_the_text_and_says_it_was_cut(fake_env, workdir):
    fake_env.reply("The answer begins and", stop_reason="max_tokens")
    e = engine(workdir)
    _, terminal = await turn(e, "long answer")
    assert terminal.reason == "max_tokens" and "cut" in terminal.error
    assert message_text(e.messages[-1]) == "The answer begins and"


async def test_context_window_exceeded_compacts_and_retries_once(fake_env, workdir):
    fake_env.reply("Partial", stop_reason="model_context_window_exceeded")
    fake_env.text("Summary: the user asked a question.")  # the compaction's own call
    fake_env.text("The answer.")
    e = engine(workdir)
    _, terminal = await turn(e, "question")
    assert terminal.reason == "completed"
    assert message_text(e.messages[-1]) == "The answer."
    assert "Partial" not in json.dumps(e.messages)


async def test_context_window_exceeded_twice_is_reported(fake_env, workdir):
    fake_env.reply("Partial", stop_reason="model_context_window_exceeded")
    fake_env.text("Summary.")
    fake_env.reply("Partial again", stop_reason="model_context_window_exceeded")
    _, terminal = await turn(engine(workdir), "question")
    assert terminal.reason == "context_window_exceeded"


# -- JSON instead of SSE, errors ----------------------------------------------------------------------
async def test_json_message_reply_to_a_stream_request_is_used(fake_env, workdir):
    fake_env.json_reply({"id": "msg_j", "type": "message", "role": "assistant", "model": MODEL,
                         "content": [{"type": "text", "text": "From JSON."}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 5, "output_tokens": 3}})
    e = engine(workdir)
    _, terminal = await turn(e, "hi")
    assert terminal.reason == "completed" and message_text(e.messages[-1]) == "From JSON."


async def test_json_that_is_not_a_message_is_one_clear_error(fake_env, workdir):
    fake_env.json_reply(raw=b'{"status": "ok", "detail": "gateway says hi"}')
    _, terminal = await turn(engine(workdir), "hi")
    assert terminal.reason == "error" and "not a message" in terminal.error and "\n" not in terminal.error


async def test_error_texts_never_carry_credentials(fake_env, workdir):
    fake_env.http_error(400, "invalid_request_error", f"bad header x-api-key: {TEST_KEY} (Bearer abc.def-123456)")
    _, terminal = await turn(engine(workdir), "hi")
    assert terminal.reason == "error"
    assert TEST_KEY not in terminal.error and "abc.def-123456" not in terminal.error
    assert "[REDACTED]" in terminal.error


async def test_usage_is_priced_by_the_model_that_produced_it(fake_env, workdir):
    fake_env.text("one", usage={"input_tokens": 1_000_000}, output_tokens=0)
    fake_env.text("two", usage={"input_tokens": 1_000_000}, output_tokens=0)
    e = engine(workdir, model="claude-haiku-4-5")
    await turn(e, "a")
    e.config.model = "claude-opus-4-1"
    await turn(e, "b")
    assert e.usage.cost("claude-opus-4-1") == pytest.approx(1.0 + 15.0)
    assert set(e.usage.model_usage()) == {"claude-haiku-4-5", "claude-opus-4-1"}


# -- server tools offered by setting --------------------------------------------------------------------
async def test_server_web_tools_replace_the_client_ones_when_enabled(fake_env, workdir):
    from tools.web_fetch import WebFetchTool
    from tools.web_search import WebSearchTool

    fake_env.text("ok")
    cfg = EngineConfig(cwd=workdir, model=MODEL, server_tools=["web_search", "web_fetch"])
    e = QueryEngine(cfg, [EchoTool(), WebFetchTool(), WebSearchTool()], QueryDeps(AnthropicModel()))
    await turn(e, "search")
    req = fake_env.requests[0]
    names = [t["name"] for t in req.body["tools"]]
    assert "WebSearch" not in names and "WebFetch" not in names
    assert {"web_search", "web_fetch"} <= set(names)
    assert "web-fetch-2025-09-10" in req.headers.get("anthropic-beta", "")


def test_server_tools_setting_errors_name_the_file_and_field(tmp_path, monkeypatch):
    from services.config import ConfigError
    from services.server_tools import enabled_server_tools

    monkeypatch.delenv("AGENT_SERVER_TOOLS", raising=False)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"serverTools": ["web_search", "rm_rf"]}))
    with pytest.raises(ConfigError, match="settings.json: field 'serverTools'.*rm_rf"):
        enabled_server_tools([path])
    path.write_text(json.dumps({"serverTools": "web_search"}))
    with pytest.raises(ConfigError, match="must be a list"):
        enabled_server_tools([path])
    path.write_text(json.dumps({"serverTools": ["web_search"]}))
    assert enabled_server_tools([path]) == ["web_search"]
    assert enabled_server_tools([tmp_path / "missing.json"]) == []


async def test_a_thinking_session_runs_a_multi_tool_task_with_byte_identical_round_trips(fake_env, workdir):
    """Three tool rounds, each reply opening with thinking (signatures with characters JSON escapes),
    one redacted block: every later request carries every earlier block exactly as the server sent it."""
    echo = RecordingEcho()
    sent_blocks: list[list[dict]] = []
    for n in range(3):
        thinking = {"type": "thinking", "thinking": f"Step {n}: ünïcode \"quotes\"\n\ttabs", "signature": f"Sig/{n}+=="}
        use = {"type": "tool_use", "id": f"toolu_m{n}", "name": "Echo", "input": {"message": f"round {n}"}}
        blocks = [thinking_block(thinking["thinking"], thinking["signature"])]
        expected = [thinking]
        if n == 1:
            blocks.append(redacted_thinking_block("RED/ACTED=="))
            expected.append({"type": "redacted_thinking", "data": "RED/ACTED=="})
        blocks.append(tool_block("Echo", use["input"], id=use["id"]))
        expected.append(use)
        fake_env.reply(*blocks)
        sent_blocks.append(expected)
    fake_env.reply(thinking_block("All done.", "Sig-final"), "Three echoes done.")
    e = engine(workdir, echo, thinking=ThinkingOptions(budget=2048))
    _, terminal = await turn(e, "echo three times")
    assert terminal.reason == "completed" and len(echo.calls) == 3
    for i, request in enumerate(fake_env.requests[1:], start=1):
        assert assistant_blocks(fake_env, i) == sent_blocks[:i]
        raw = request.raw.decode()
        for blocks in sent_blocks[:i]:  # the exact JSON encoding of each block is in the body
            for block in blocks:
                if block["type"] != "tool_use":
                    assert json.dumps(block["signature" if "signature" in block else "data"]) in raw
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}


def test_the_renderer_shows_thinking_dimmed_apart_and_collapsed():
    import io

    from agent.repl.render import THINKING_LINES, Renderer, make_console
    from services.events import AssistantEvent
    from services.messages import assistant_message, text_block

    buf = io.StringIO()
    r = Renderer(make_console(file=buf, width=100, force_terminal=False, color_system=None))
    thought = "".join(f"thought line {i}\n" for i in range(THINKING_LINES + 5))
    for i in range(0, len(thought), 7):
        r.event(ThinkingDeltaEvent(thought[i : i + 7]))
    r.event(TextDeltaEvent("The answer."))
    r.event(AssistantEvent(assistant_message([text_block("The answer.")])))
    out = buf.getvalue()
    assert "Thinking" in out and f"thought line {THINKING_LINES - 1}" in out
    assert f"thought line {THINKING_LINES}\n" not in out and "5 more lines of thinking" in out
    assert out.rstrip().endswith("The answer.") and "line 0The answer" not in out


async def test_thinking_cut_before_its_signature_is_not_kept(fake_env, workdir):
    fake_env.reply("Let me think.", thinking_block("half a thou", signature=""), stop_reason="max_tokens")
    e = engine(workdir, thinking=ThinkingOptions(budget=2048))
    _, terminal = await turn(e, "hard question")
    assert terminal.reason == "max_tokens"
    assert e.messages[-1]["content"] == [{"type": "text", "text": "Let me think."}]


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence"])
async def test_end_turn_and_stop_sequence_complete_and_an_empty_reply_is_not_stored(fake_env, workdir, stop):
    fake_env.reply("Done.", stop_reason=stop)
    fake_env.reply("", stop_reason=stop)  # nothing in it (the API sends this after some tool results)
    e = engine(workdir)
    _, terminal = await turn(e, "one")
    assert terminal.reason == "completed" and terminal.stop_reason == stop
    _, terminal = await turn(e, "two")
    assert terminal.reason == "completed"
    assert [m["role"] for m in e.messages] == ["user", "assistant", "user"]
