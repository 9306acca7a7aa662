"""react-agent-mini's own tests that found this port's last gaps, translated (reference:
/work/shared/reference/react-agent-mini.md, the test file named above each test).

- slash.test.ts / skills: `/echo-demo 帮我写一个 foo` -> the model sees `Arguments: 帮我写一个 foo` and the user text.
- promptSlash.test.ts: `/tour:plan_trip (MCP) Tokyo 3` -> prompt plan_trip, args `Tokyo 3`; help shows the marker.
- WriteTool/EditTool.test.ts: over 100 KB -> refused, nothing written.
- BashTool.test.ts: `timeout_ms:300` on `sleep 5` -> an error (the deprecated alias is honoured).
- contextUsage.test.ts / `/compact`: no change in usage -> the feedback says it is unchanged.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import ScriptedModel, reply
from agent.repl.render import make_console
from agent.slash.mcp import register_mcp_commands
from agent.slash.router import CommandContext, default_router
from agent.slash.skills import register_skill_commands
from services.config import Settings
from services.mcp.manager import McpManager
from services.messages import assistant_message, text_block, tool_results, user_message
from services.skills import discover_skills
from tests.files import write
from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.edit import EditTool
from tools.orchestration import BatchOutcome, ToolRunner
from tools.permissions import PermissionGate
from tools.write import WriteTool

TOUR = Path(__file__).resolve().parent.parent / "mcp" / "servers" / "tour.py"


def _ctx(proj: Path, model=None, **settings) -> tuple[CommandContext, io.StringIO]:
    opts = AppOptions(cwd=proj, settings=Settings(**settings))
    engine = build_engine(opts, deps=QueryDeps(call_model=model or ScriptedModel([])))
    buf = io.StringIO()
    console = make_console(file=buf, width=120, force_terminal=False, color_system=None)
    return CommandContext(engine, console, proj, default_router(), opts=opts), buf


async def test_skill_slash_gives_the_model_an_arguments_line_and_the_user_text(proj: Path) -> None:
    write(proj / ".agents/skills/echo-demo/SKILL.md", "---\ndescription: Echo demo\n---\nSay: Skill says: hello")
    model = ScriptedModel([reply("done")])
    ctx, _ = _ctx(proj, model)
    assert register_skill_commands(ctx.router, discover_skills(proj)) == ["echo-demo"]
    result = await ctx.router.dispatch("/echo-demo 帮我写一个 foo", ctx)
    assert result.run_turn is not None
    text, injected = result.run_turn
    events = [ev async for ev in ctx.engine.run_turn(text, inject_before=injected)]
    assert events and len(model.requests) == 1  # one turn
    sent = model.requests[0].messages
    skill_text = sent[-2]["content"][0]["text"]
    assert "Base directory for this skill: " in skill_text and skill_text.endswith("Arguments: 帮我写一个 foo")
    assert sent[-1]["content"] == [{"type": "text", "text": "帮我写一个 foo"}]
    # Without arguments: the skill alone, no Arguments line.
    result = await ctx.router.dispatch("/echo-demo", ctx)
    assert "Arguments:" not in result.run_turn[1][0]["content"][0]["text"]


async def test_mcp_marker_binds_to_the_command_not_the_arguments(tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {
        "tour": {"command": sys.executable, "args": [str(TOUR)]}}}))
    manager = await McpManager.from_project(tmp_path, {"MCP_CONFIG": "servers.json",
                                                       "MCP_CONNECT_TIMEOUT_MS": "90000"})
    try:
        ctx, buf = _ctx(tmp_path)
        async def ask(question: str) -> str:  # a required argument left out is asked for
            assert question.startswith("city (required")
            return "Oslo"

        register_mcp_commands(ctx.router, manager, ask=ask)
        for line, expected in (("/tour:plan_trip (MCP) Tokyo 3", "City=Tokyo; Days=3."),
                               ("/tour:plan_trip 石家庄 2天", "City=石家庄; Days=2天."),
                               ("/tour:plan_trip (MCP)", "City=Oslo; Days=?.")):
            result = await ctx.router.dispatch(line, ctx)
            assert result.run_turn is not None, buf.getvalue()
            assert result.run_turn[1][0]["content"][0]["text"].startswith(expected), line
        for unknown in ("/missing:foo (MCP)", "/missing:foo args"):
            assert (await ctx.router.dispatch(unknown, ctx)).run_turn is None
        await ctx.router.dispatch("/help", ctx)
        assert re.search(r"/tour:plan_trip +\(MCP\) <city> <days> Plan a trip to a city\.", buf.getvalue())
    finally:
        await manager.close()


@pytest.fixture
def tctx(proj: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=proj), project_root=proj)


async def _run(tctx: ToolContext, name: str, tool, **input) -> dict:
    runner = ToolRunner({name: tool}, tctx, PermissionGate(mode="bypassPermissions"))
    outcome = [ev async for ev in runner.run([{"type": "tool_use", "id": "toolu_1", "name": name, "input": input}])][-1]
    assert isinstance(outcome, BatchOutcome)
    return outcome.results[0]


async def test_write_refuses_content_over_100_kb(proj: Path, tctx) -> None:
    over = await _run(tctx, "Write", WriteTool(), file_path="big.txt", content="a" * 102_401)
    assert over.get("is_error") and "100 KB" in over["content"] and not (proj / "big.txt").exists()
    wide = await _run(tctx, "Write", WriteTool(), file_path="wide.txt", content="é" * 51_201)  # 102402 bytes
    assert wide.get("is_error") and not (proj / "wide.txt").exists()
    ok = await _run(tctx, "Write", WriteTool(), file_path="ok.txt", content="a" * 102_400)
    assert not ok.get("is_error") and (proj / "ok.txt").stat().st_size == 102_400


async def test_edit_refuses_new_string_over_100_kb(proj: Path, tctx) -> None:
    (proj / "a.txt").write_text("hello world\n")
    from tools.read import ReadTool

    await ReadTool().call({"file_path": "a.txt"}, tctx.for_call("toolu_r"))
    over = await _run(tctx, "Edit", EditTool(), file_path="a.txt", old_string="world", new_string="b" * 102_401)
    assert over.get("is_error") and "100 KB" in over["content"]
    assert (proj / "a.txt").read_text() == "hello world\n"
    ok = await _run(tctx, "Edit", EditTool(), file_path="a.txt", old_string="world", new_string="bun")
    assert not ok.get("is_error") and (proj / "a.txt").read_text() == "hello bun\n"


async def test_bash_timeout_ms_alias_times_out(tctx) -> None:
    result = await asyncio.wait_for(_run(tctx, "Bash", BashTool(), command="sleep 5", timeout_ms=300), 20)
    assert result.get("is_error") and re.search(r"timed out|timeout", result["content"], re.I)


async def test_compact_says_when_usage_is_unchanged(proj: Path) -> None:
    model = ScriptedModel([reply("Short summary.")])
    ctx, buf = _ctx(proj, model)
    for i in range(3):
        ctx.engine.append_message(user_message(f"question {i}"))
        ctx.engine.append_message(assistant_message([text_block(f"answer {i}")]))
    await ctx.router.dispatch("/compact", ctx)
    out = buf.getvalue()
    # one line, one measure: the estimate-based notice is not printed beside the billed figures
    assert re.search(r"Compacted the conversation: summarised 2 earlier messages \(usage unchanged: ctx ~[\d.]+%\)\.", out), out
    assert "->" not in out and out.count("ctx ~") == 1, out


async def test_compact_reports_a_change(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXT_WINDOW_TOKENS", "64000")
    model = ScriptedModel([reply("Short summary.")])
    ctx, buf = _ctx(proj, model)
    for i in range(6):
        ctx.engine.append_message(user_message(f"question {i}"))
        ctx.engine.append_message(assistant_message([text_block(f"answer {i} " + "x" * 20_000)]))
    await ctx.router.dispatch("/compact", ctx)
    out = buf.getvalue()
    line = re.search(r"Compacted the conversation: summarised 8 earlier messages \(ctx ~(\d+)% -> ctx ~(\d+)%\)\.", out)
    assert line and "unchanged" not in out and int(line[1]) > int(line[2]), out
    assert not tool_results(ctx.engine.messages[0])
