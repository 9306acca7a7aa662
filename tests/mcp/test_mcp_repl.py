"""MCP in the REPL (real servers, piped terminal input): `/mcp`, prompt commands with quoting, name=value and
a required argument asked for, roles kept with no extra user message, and an elicitation form."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from prompt_toolkit.input import create_pipe_input

from agent.model.scripted import ScriptedModel, reply, tool_call
from tests.test_repl import make_repl, project, user_texts, wait_for  # noqa: F401 - fixture reuse

SERVERS = Path(__file__).resolve().parent / "servers"


def configure(root: Path, *names: str) -> None:
    servers = {n: {"command": sys.executable, "args": [str(SERVERS / f"{n}.py")]} for n in names}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


async def test_prompt_commands_keep_roles_and_ask_for_required_args(project: Path) -> None:  # noqa: F811
    configure(project, "templates")
    model = ScriptedModel([reply("first"), reply("second")])
    # topic is required: the first command asks for it
    # Lines typed ahead are queued, never taken as the answer to a question that opens later: the argument
    # is typed once the question is on screen.
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        run = asyncio.ensure_future(repl.run())
        inp.send_text("/templates:review\r")
        await wait_for(lambda: repl.asking_kind() == "text", 60)
        inp.send_text("alpha\r")
        inp.send_text('/templates:review beta "very dry"\r/mcp\r\x04')
        assert await asyncio.wait_for(run, 60) == 0
    model.assert_done()
    out = buf.getvalue()
    first, second = model.requests
    roles = [m["role"] for m in first.messages]
    assert roles == ["user", "user", "assistant", "user"]
    assert first.messages[2]["content"] == [{"type": "text", "text": "I will start with the notes."}]
    texts = user_texts(first)
    assert texts[0].startswith("The following material comes from an MCP resource") and "the intro document" in texts[0]
    assert texts[1:] == ["Review alpha in a plain tone. See @templates:docs://intro", "embedded note on alpha"]
    assert not any("MCP prompt" in t for t in user_texts(second))  # no extra user message
    assert "Review beta in a very dry tone. See @templates:docs://intro" in user_texts(second)
    assert "Mounted MCP resource @templates:notes://alpha (22 chars)" in out
    assert "templates (stdio, project): connected" in out and "· mcp__templates__slow" in out
    assert "log: " in out


async def test_elicitation_is_a_form_in_the_repl(project: Path) -> None:  # noqa: F811
    configure(project, "asks")
    model = ScriptedModel([reply("Asking.", tool_call("mcp__asks__ask_name", {}, id="toolu_e")), reply("Hi Ada.")])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        run = asyncio.ensure_future(repl.run())
        inp.send_text("/mcp\r")  # waits for nothing; the server may still be starting
        inp.send_text("@asks:none say hello\r")  # a mention waits for its server
        await wait_for(lambda: "Permission: mcp__asks__ask_name" in buf.getvalue(), 60)
        inp.send_text("y")  # allow the MCP tool once (one key)
        await wait_for(lambda: "asks: Who are you?" in buf.getvalue(), 30)
        inp.send_text("Ada\r")
        await wait_for(lambda: repl._question is not None and "age" in repl._question.text.lower(), 30)
        inp.send_text("41\r")  # each field is typed once its question is open (type-ahead is queued)
        await wait_for(lambda: "Hi Ada." in buf.getvalue(), 30)
        inp.send_text("\x04")
        assert await run == 0
    model.assert_done()
    out = buf.getvalue()
    result = model.requests[1].messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_e" and result["content"] == [{"type": "text", "text": "hello Ada (41)"}]
    assert 'MCP server "asks" asks: Who are you?' in out


def test_the_repl_completer_is_reachable_for_mcp_mentions(project: Path) -> None:  # noqa: F811
    """`start_mcp` hands the manager to the prompt's completer; it must be the ReplCompleter itself."""
    from agent.repl.session import ReplCompleter

    with create_pipe_input() as inp:
        repl, _ = make_repl(project, ScriptedModel([]), inp)
        assert isinstance(repl.session.completer, ReplCompleter)
