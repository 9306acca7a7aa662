"""The acceptance test of `claude -p` compatibility: the official `claude-agent-sdk` package, pointed at this
agent with `cli_path`, runs multi-turn tasks with tools, a permission callback, hooks and an interrupt.

Nothing here is ours but the agent: the SDK spawns `agent` exactly as it spawns `claude` (stream-json on
stdin and stdout, control requests both ways), and the agent talks to the local fake Anthropic server.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from tests.conftest import ROOT, TEST_KEY
from tests.fake_anthropic import FakeAnthropic, tool_block


@pytest.fixture
def launcher(tmp_path: Path) -> Path:
    """An executable that runs this agent, as `cli_path` must be."""
    path = tmp_path / "agent-cli"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agent "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def options(launcher: Path, agent_home: Path, workdir: Path, fake_anthropic: FakeAnthropic):
    stderr: list[str] = []

    def make(env_extra: dict[str, str] | None = None, **kw: Any) -> ClaudeAgentOptions:
        env = {"ANTHROPIC_BASE_URL": fake_anthropic.url, "ANTHROPIC_API_KEY": TEST_KEY,
               "AGENT_HOME": str(agent_home), "PYTHONPATH": str(ROOT), "API_MAX_RETRIES": "0",
               "NO_COLOR": "1", "AGENT_ECHO_TOOL": "1", **(env_extra or {})}
        return ClaudeAgentOptions(cli_path=str(launcher), cwd=str(workdir), env=env,
                                  stderr=stderr.append, **kw)

    make.stderr = stderr  # type: ignore[attr-defined]
    return make


async def _prompts(*texts: str):
    for text in texts:
        yield {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None,
               "session_id": ""}


def _texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content
            if isinstance(b, TextBlock)]


async def test_query_string_prompt(options, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.text("Hello from the fake model.")
    messages = [m async for m in query(prompt="say hello", options=options(model="claude-sonnet-4-5"))]
    assert isinstance(messages[0], SystemMessage) and messages[0].subtype == "init"
    assert messages[0].data["model"] == "claude-sonnet-4-5" and "Bash" in messages[0].data["tools"]
    assert _texts(messages) == ["Hello from the fake model."]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.result == "Hello from the fake model." and result.num_turns == 1
    assert result.session_id == messages[0].data["session_id"]
    assert result.usage["input_tokens"] == 12 and result.total_cost_usd is not None
    (request,) = fake_anthropic.requests
    assert request.body["model"] == "claude-sonnet-4-5"
    assert request.messages[0]["content"][0]["text"] == "say hello"
    assert "system" not in request.body  # the SDK's default `--system-prompt ""`: no system prompt at all


async def test_permission_callback_rewrites_the_input_then_a_second_turn(options, fake_anthropic: FakeAnthropic,
                                                                         workdir: Path) -> None:
    fake_anthropic.reply("Writing.", tool_block("Bash", {"command": "echo one > out.txt", "description": "write"},
                                                id="toolu_sdk1"))
    fake_anthropic.text("Written.")
    fake_anthropic.text("Second turn.")
    asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def can_use_tool(name: str, input: dict[str, Any], ctx: Any) -> Any:
        asked.append((name, dict(input), ctx.tool_use_id))
        return PermissionResultAllow(updated_input={**input, "command": "echo two > out.txt"})

    messages = [m async for m in query(prompt=_prompts("write it", "and again"),
                                       options=options(can_use_tool=can_use_tool))]
    assert asked == [("Bash", {"command": "echo one > out.txt", "description": "write"}, "toolu_sdk1")]
    assert (workdir / "out.txt").read_text() == "two\n"
    uses = [b for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolUseBlock)]
    assert [u.id for u in uses] == ["toolu_sdk1"]
    results = [b for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
               for b in m.content if isinstance(b, ToolResultBlock)]
    assert results[0].tool_use_id == "toolu_sdk1" and not results[0].is_error
    finals = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in finals] == ["Written.", "Second turn."]
    assert finals[0].num_turns == 2 and finals[0].permission_denials == []
    # One session: the second turn's request carries the first turn's history.
    third = fake_anthropic.requests[2]
    assert [m["role"] for m in third.messages] == ["user", "assistant", "user", "assistant", "user"]


async def test_permission_callback_denies(options, fake_anthropic: FakeAnthropic, workdir: Path) -> None:
    fake_anthropic.reply(tool_block("Bash", {"command": "touch bad.txt"}, id="toolu_no"))
    fake_anthropic.text("Understood.")

    async def can_use_tool(name: str, input: dict[str, Any], ctx: Any) -> Any:
        return PermissionResultDeny(message="not in this repo")

    messages = [m async for m in query(prompt=_prompts("try"), options=options(can_use_tool=can_use_tool))]
    assert not (workdir / "bad.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "Understood."
    assert result.permission_denials == [
        {"tool_name": "Bash", "tool_use_id": "toolu_no", "tool_input": {"command": "touch bad.txt"}}]
    sent = fake_anthropic.requests[1].messages[-1]["content"][0]
    assert sent["is_error"] is True and sent["content"] == "not in this repo"


async def test_no_callback_means_the_headless_denial(options, fake_anthropic: FakeAnthropic, workdir: Path) -> None:
    fake_anthropic.reply(tool_block("Write", {"file_path": "x.txt", "content": "x"}, id="toolu_w"))
    fake_anthropic.text("Could not write.")
    messages = [m async for m in query(prompt="write x", options=options())]
    assert not (workdir / "x.txt").exists()
    assert messages[-1].permission_denials[0]["tool_name"] == "Write"
    sent = fake_anthropic.requests[1].messages[-1]["content"][0]
    assert sent["content"] == (f"Claude requested permissions to write to {workdir / 'x.txt'}, "
                               "but you haven't granted it yet.")


async def test_client_multi_turn_hooks_mode_model_and_interrupt(options, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply(tool_block("Echo", {"message": "hooked"}, id="toolu_h"))
    fake_anthropic.text("first answer")
    fake_anthropic.stall(60, True, "never finished")
    fake_anthropic.text("after the interrupt")
    hook_calls: list[tuple[str, str]] = []

    async def pre_tool(input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        hook_calls.append(("PreToolUse", input["tool_name"]))
        return {}

    async def stop(input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        hook_calls.append(("Stop", input["hook_event_name"]))
        return {}

    opts = options(include_partial_messages=True, allowed_tools=["Echo"],
                   hooks={"PreToolUse": [HookMatcher(matcher="Echo", hooks=[pre_tool])],
                          "Stop": [HookMatcher(hooks=[stop])]})
    async with ClaudeSDKClient(options=opts) as client:
        await client.set_permission_mode("acceptEdits")
        await client.set_model("claude-haiku-4-5")
        await client.query("use the echo tool")
        first = [m async for m in client.receive_response()]
        assert isinstance(first[-1], ResultMessage) and first[-1].result == "first answer"
        assert ("PreToolUse", "Echo") in hook_calls and ("Stop", "Stop") in hook_calls
        assert any(isinstance(m, StreamEvent) and m.event.get("type") == "message_start" for m in first)
        assert fake_anthropic.requests[0].body["model"] == "claude-haiku-4-5"

        await client.query("take your time")
        deadline = time.monotonic() + 60
        while len(fake_anthropic.requests) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(fake_anthropic.requests) == 3, "the second turn never reached the API"
        await client.interrupt()
        second = [m async for m in client.receive_response()]
        assert isinstance(second[-1], ResultMessage) and second[-1].is_error
        assert second[-1].subtype == "error_during_execution"

        await client.query("still there?")
        third = [m async for m in client.receive_response()]
        assert third[-1].result == "after the interrupt" and third[-1].session_id == first[-1].session_id
    last = fake_anthropic.requests[-1].messages
    assert last[0]["content"][0]["text"] == "use the echo tool"
    assert last[-1]["content"][-1]["text"] == "still there?"


async def test_an_sdk_hosted_mcp_server_is_called_through_the_control_protocol(options, fake_anthropic) -> None:
    """`create_sdk_mcp_server` runs the server inside the SDK's process; the agent reaches it with
    `mcp_message` control requests (initialize, tools/list, tools/call)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers", {"a": float, "b": float})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    server = create_sdk_mcp_server("calc", tools=[add])
    fake_anthropic.reply(tool_block("mcp__calc__add", {"a": 2, "b": 3}, id="toolu_sdkmcp"))
    fake_anthropic.text("It is 5.")
    opts = options(mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"], )
    messages = [m async for m in query(prompt=_prompts("add 2 and 3"), options=opts)]
    assert calls == [{"a": 2, "b": 3}], (options.stderr, [m for m in messages][-3:])
    assert messages[-1].result == "It is 5."
    assert "mcp__calc__add" in [t["name"] for t in fake_anthropic.requests[0].body["tools"]]
    sent = fake_anthropic.requests[1].messages[-1]["content"][0]
    assert sent["tool_use_id"] == "toolu_sdkmcp" and not sent.get("is_error")
    assert "sum=5" in json.dumps(sent["content"])


async def test_pre_tool_use_callbacks_allow_ask_rewrite_and_deny_before_the_gate(options, fake_anthropic,
                                                                               workdir: Path) -> None:
    """The SDK's PreToolUse callbacks fold as Claude Code folds them, before the permission check: "allow"
    runs a command no rule allows, "ask" goes to can_use_tool even where a rule allows, `updatedInput` is what
    runs (and is judged), "deny" gives the model Claude Code's words."""
    asked: list[str] = []

    async def can_use_tool(name: str, input: dict[str, Any], ctx: Any) -> Any:
        asked.append(input.get("command", ""))
        return PermissionResultDeny(message="not now")

    async def pre_tool(input: dict[str, Any], tool_use_id: str | None, ctx: Any) -> dict[str, Any]:
        command = input["tool_input"]["command"]
        specific: dict[str, Any] = {"hookEventName": "PreToolUse"}
        if "allowed-by-hook" in command:
            specific["permissionDecision"] = "allow"
        elif "ask-me" in command:
            specific["permissionDecision"] = "ask"
        elif "rewrite-me" in command:
            specific.update(permissionDecision="allow", updatedInput={"command": "echo rewritten",
                                                                      "description": "x"})
        else:
            specific.update(permissionDecision="deny", permissionDecisionReason="not this one")
        return {"hookSpecificOutput": specific}

    for i, command in enumerate(["touch allowed-by-hook", "echo ask-me", "echo rewrite-me", "echo other"]):
        fake_anthropic.reply(tool_block("Bash", {"command": command, "description": "x"}, id=f"b{i}"))
    fake_anthropic.text("done")
    opts = options(allowed_tools=["Bash(echo:*)"], can_use_tool=can_use_tool,
                   hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre_tool])]})
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("go")
        async for _ in client.receive_response():
            pass
    results = {b["tool_use_id"]: b for r in fake_anthropic.requests for m in r.messages
               if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
    assert not results["b0"].get("is_error") and (workdir / "allowed-by-hook").exists()
    assert results["b1"]["is_error"] and asked == ["echo ask-me"]
    assert not results["b2"].get("is_error") and "rewritten" in json.dumps(results["b2"]["content"])
    assert results["b3"]["is_error"] and results["b3"]["content"] == "PreToolUse:Bash hook error: not this one"
