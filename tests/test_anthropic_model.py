"""AnthropicModel (the real SDK path) against the fake Anthropic server, in process."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import agent.model.anthropic as anthropic_model
from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.anthropic import AnthropicModel
from services.messages import INVALID_INPUT_KEY, tool_results, tool_uses
from services.model_types import ModelError, ModelRequest, ModelResponse, Retrying, TextDelta
from tests.conftest import TEST_KEY
from tests.fake_anthropic import FakeAnthropic, Step, text_block, tool_block
from tools.base import Tool, ToolContext, ToolOutput
from tools.echo import EchoTool

ECHO_SPEC = EchoTool().to_api()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """Retries without retry-after use the exponential backoff; keep it short here."""
    monkeypatch.setattr(anthropic_model, "INITIAL_DELAY", 0.01)


def request(text: str = "hi", system: str = "You are a test.", tools=None) -> ModelRequest:
    return ModelRequest(
        [{"role": "user", "content": [{"type": "text", "text": text}]}],
        system,
        [ECHO_SPEC] if tools is None else tools,
        "claude-test",
        256,
    )


async def collect(model: AnthropicModel, req: ModelRequest) -> list:
    return [ev async for ev in model(req)]


def final(events: list) -> ModelResponse:
    responses = [e for e in events if isinstance(e, ModelResponse)]
    assert len(responses) == 1 and events[-1] is responses[0]
    return responses[0]


class RecordingEcho(EchoTool):
    def __init__(self) -> None:
        self.calls: list[dict] = []

    async def call(self, input, ctx: ToolContext) -> ToolOutput:
        self.calls.append(input)
        return await super().call(input, ctx)


def engine_with(tools: list[Tool], cwd: Path) -> QueryEngine:
    return QueryEngine(EngineConfig(cwd=cwd, model="claude-test"), tools, QueryDeps(AnthropicModel()))


async def run_turn(engine: QueryEngine, text: str):
    events = [ev async for ev in engine.run_turn(text)]
    return events, engine.last_terminal


async def test_text_deltas_arrive_while_the_stream_is_still_open(fake_env: FakeAnthropic):
    gate = threading.Event()
    fake_env.add(Step("stream", blocks=[text_block("Hello there, incremental world!")], gate=gate))
    seen_before_release = []
    events = []
    async for ev in AnthropicModel()(request()):
        events.append(ev)
        if isinstance(ev, TextDelta) and not gate.is_set():
            # The server is blocked after its first delta until we release it: we got it live.
            seen_before_release.append(ev.text)
            gate.set()
    assert seen_before_release == ["Hell"]
    assert not fake_env.gate_timed_out
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3 and "".join(deltas) == "Hello there, incremental world!"


async def test_final_message_keeps_text_tool_use_and_usage(fake_env: FakeAnthropic):
    fake_env.reply(
        "Let me echo that.",
        tool_block("Echo", {"message": "a \"quoted\" {value}"}, id="toolu_A"),
        tool_block("Echo", {"message": "second"}, id="toolu_B"),
        usage={"input_tokens": 321, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000},
        output_tokens=45,
    )
    resp = final(await collect(AnthropicModel(), request()))
    content = resp.message["content"]
    assert content[0] == {"type": "text", "text": "Let me echo that."}
    assert content[1] == {"type": "tool_use", "id": "toolu_A", "name": "Echo",
                          "input": {"message": "a \"quoted\" {value}"}}
    assert content[2]["id"] == "toolu_B" and content[2]["input"] == {"message": "second"}
    assert resp.stop_reason == "tool_use"
    expected = {"input_tokens": 321, "output_tokens": 45, "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 2000}
    assert resp.usage == expected
    assert resp.message["usage"] == expected


async def test_request_body_carries_cache_breakpoints_and_credentials(fake_env: FakeAnthropic):
    fake_env.text("ok")
    tools = [ECHO_SPEC, {**ECHO_SPEC, "name": "Echo2"}]
    req = ModelRequest(
        [
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "reply"}]},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "last"}]},
        ],
        "SYSTEM PROMPT",
        tools,
        "claude-test",
        256,
    )
    await collect(AnthropicModel(), req)
    (rec,) = fake_env.requests
    body = rec.body
    assert body["stream"] is True and body["model"] == "claude-test" and body["max_tokens"] == 256
    assert body["system"] == [{"type": "text", "text": "SYSTEM PROMPT", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][0]["input_schema"] == ECHO_SPEC["input_schema"]
    msgs = body["messages"]
    assert msgs[-1]["content"][-1] == {"type": "text", "text": "last", "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in msgs[-1]["content"][0]
    assert all("cache_control" not in b for m in msgs[:-1] for b in m["content"])
    # The caller's request is not mutated by the marking.
    assert "cache_control" not in req.messages[-1]["content"][-1] and "cache_control" not in tools[-1]
    auth = rec.headers.get("x-api-key") or rec.headers.get("authorization", "")
    assert TEST_KEY in auth


async def test_auth_token_is_sent_as_bearer(fake_env: FakeAnthropic, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "bearer-token-xyz")
    fake_env.text("ok")
    resp = final(await collect(AnthropicModel(), request()))
    assert resp.message["content"] == [{"type": "text", "text": "ok"}]
    assert fake_env.requests[0].headers["authorization"] == "Bearer bearer-token-xyz"


async def test_529_then_200_is_retried(fake_env: FakeAnthropic):
    fake_env.http_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    fake_env.text("after retry")
    events = await collect(AnthropicModel(max_retries=2), request())
    assert len(fake_env.requests) == 2
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [(e.attempt, e.max_retries, e.status, e.reason) for e in retries] == [(1, 2, 529, "529 overloaded")]
    assert final(events).message["content"] == [{"type": "text", "text": "after retry"}]


async def test_429_with_retry_after_is_retried(fake_env: FakeAnthropic):
    fake_env.http_error(429, "rate_limit_error", "slow down", headers={"retry-after-ms": "1"})
    fake_env.text("ok")
    events = await collect(AnthropicModel(max_retries=1), request())
    assert [(e.reason, e.status, e.max_retries) for e in events if isinstance(e, Retrying)] == [
        ("429 too many requests", 429, 1)]
    assert len(fake_env.requests) == 2


async def test_mid_stream_overloaded_error_is_retried(fake_env: FakeAnthropic):
    fake_env.stream_error("overloaded_error", "partial text that will be thrown away")
    fake_env.text("second try")
    events = await collect(AnthropicModel(max_retries=2), request())
    assert len(fake_env.requests) == 2
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1 and retries[0].reason == "overloaded error in the stream"
    assert retries[0].status == 200  # inside the stream: stream-json writes no api_retry for it
    assert final(events).message["content"] == [{"type": "text", "text": "second try"}]


async def test_retries_exhausted_is_a_model_error(fake_env: FakeAnthropic):
    for _ in range(2):
        fake_env.http_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
    with pytest.raises(ModelError) as err:
        await collect(AnthropicModel(max_retries=1), request())
    assert err.value.status == 529
    assert "529" in str(err.value) and "\n" not in str(err.value)


async def test_401_is_not_retried_and_never_shows_the_key(fake_env: FakeAnthropic):
    fake_env.http_error(401, "authentication_error", "invalid x-api-key")
    with pytest.raises(ModelError) as err:
        await collect(AnthropicModel(max_retries=3), request())
    message = str(err.value)
    assert len(fake_env.requests) == 1
    assert "ANTHROPIC_API_KEY" in message and "401" in message
    assert TEST_KEY not in message and "\n" not in message


async def test_retry_after_is_capped(fake_env: FakeAnthropic, monkeypatch):
    monkeypatch.setattr(anthropic_model, "MAX_RETRY_AFTER", 0.01)
    fake_env.http_error(429, "rate_limit_error", "later", headers={"retry-after": "86400"})
    fake_env.text("ok")
    events = await asyncio.wait_for(collect(AnthropicModel(max_retries=1), request()), timeout=10)
    (retry,) = [e for e in events if isinstance(e, Retrying)]
    assert retry.delay == pytest.approx(0.01)
    assert final(events).message["content"][0]["text"] == "ok"


async def test_x_should_retry_false_is_obeyed(fake_env: FakeAnthropic):
    fake_env.http_error(503, "api_error", "no", headers={"x-should-retry": "false"})
    with pytest.raises(ModelError):
        await collect(AnthropicModel(max_retries=3), request())
    assert len(fake_env.requests) == 1


async def test_dropped_stream_mid_tool_json_is_retried_and_the_half_call_never_runs(
        fake_env: FakeAnthropic, agent_home, workdir):
    echo = RecordingEcho()
    fake_env.drop("I will echo.", tool_block("Echo", {"message": "x" * 80}, id="toolu_drop"))
    fake_env.reply("I will echo.", tool_block("Echo", {"message": "whole"}, id="toolu_ok"))
    fake_env.text("done")
    engine = engine_with([echo], workdir)
    events, terminal = await run_turn(engine, "go")
    assert terminal.reason == "completed"
    assert echo.calls == [{"message": "whole"}]  # only the complete call of the attempt that finished
    assert any(type(e).__name__ == "RetryEvent" for e in events)
    ids = [u["id"] for m in engine.messages for u in tool_uses(m)]
    assert ids == ["toolu_ok"]


async def test_dropped_stream_every_attempt_is_one_clear_error_and_nothing_runs(
        fake_env: FakeAnthropic, agent_home, workdir):
    echo = RecordingEcho()
    for _ in range(3):  # API_MAX_RETRIES=2: three attempts
        fake_env.drop("I will echo.", tool_block("Echo", {"message": "x" * 80}, id="toolu_drop"))
    engine = engine_with([echo], workdir)
    events, terminal = await run_turn(engine, "go")
    assert terminal.reason == "error"
    assert "dropped" in terminal.error and "\n" not in terminal.error
    assert echo.calls == []
    assert [m["role"] for m in engine.messages] == ["user"]  # the history stays valid


async def test_dropped_stream_direct_is_retried(fake_env: FakeAnthropic):
    fake_env.drop(tool_block("Echo", {"message": "y" * 60}))
    fake_env.text("second time")
    events = await collect(AnthropicModel(max_retries=2), request())
    assert any(isinstance(e, Retrying) and e.reason == "stream dropped" for e in events)
    assert final(events).message["content"] == [{"type": "text", "text": "second time"}]
    assert len(fake_env.requests) == 2


async def test_malformed_tool_json_becomes_an_input_error_result(fake_env: FakeAnthropic, agent_home, workdir):
    echo = RecordingEcho()
    fake_env.reply(tool_block("Echo", raw_json='{"message": "unterminated', id="toolu_bad"))
    fake_env.text("I will fix my call.")
    engine = engine_with([echo], workdir)
    events, terminal = await run_turn(engine, "go")
    assert terminal.reason == "completed"
    (use,) = tool_uses(engine.messages[1])
    assert INVALID_INPUT_KEY in use["input"]
    (result,) = tool_results(engine.messages[2])
    assert result["tool_use_id"] == "toolu_bad" and result.get("is_error") is True
    assert "not valid JSON" in result["content"]
    assert echo.calls == []
    # The follow-up request is valid: the tool_use carries an object input and its result is paired.
    second = fake_env.requests[1].messages
    assert second[1]["content"][0]["input"][INVALID_INPUT_KEY]
    assert second[2]["content"][0]["tool_use_id"] == "toolu_bad"


async def test_stall_after_headers_times_out_with_a_clear_error(fake_env: FakeAnthropic):
    fake_env.stall(5)
    with pytest.raises(ModelError) as err:
        await collect(AnthropicModel(max_retries=0, timeout=0.3), request())
    assert "\n" not in str(err.value)


async def test_stall_before_headers_is_retried_then_fails_clearly(fake_env: FakeAnthropic):
    fake_env.stall(5, False)
    fake_env.stall(5, False)
    with pytest.raises(ModelError) as err:
        await collect(AnthropicModel(max_retries=1, timeout=0.3), request())
    assert "timeout" in str(err.value).lower() and "ANTHROPIC_BASE_URL" in str(err.value)
    assert len(fake_env.requests) == 2


async def test_count_tokens_endpoint_answers(fake_env: FakeAnthropic):
    import anthropic

    client = anthropic.AsyncAnthropic(max_retries=0)
    result = await client.messages.count_tokens(
        model="claude-test", messages=[{"role": "user", "content": "hello"}]
    )
    assert result.input_tokens >= 1
    assert len(fake_env.count_tokens_requests) == 1 and fake_env.requests == []


async def test_stream_ending_without_message_stop_is_a_drop(fake_env: FakeAnthropic, agent_home, workdir):
    """A body that ends cleanly mid-reply (a proxy giving up) must not pass for a complete message."""
    echo = RecordingEcho()
    for _ in range(3):  # every attempt (API_MAX_RETRIES=2) ends the same way
        fake_env.drop("Echoing.", tool_block("Echo", {"message": "z" * 80}), clean_eof=True)
    engine = engine_with([echo], workdir)
    events, terminal = await run_turn(engine, "go")
    assert terminal.reason == "error" and "dropped" in terminal.error
    assert echo.calls == []
    assert [m["role"] for m in engine.messages] == ["user"]
