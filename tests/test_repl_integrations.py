"""The REPL wires the skills and MCP features in: `/<skill-id>`, `/mcp`, `/<server>:<prompt>`, `@server:uri`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prompt_toolkit.input import create_pipe_input

from agent.model.scripted import ScriptedModel, reply
from tests.test_repl import make_repl, project, user_texts  # noqa: F401 - fixture reuse

SERVERS = Path(__file__).parent / "mcp" / "servers"


async def test_skill_slash_command_runs_a_turn_with_the_skill(project: Path) -> None:  # noqa: F811
    skill = project / ".agents" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: Deploy\ndescription: Ship it\n---\nRun the deploy checklist.\n")
    model = ScriptedModel([reply("Deploying.")])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        assert repl.router.get("deploy") is not None
        inp.send_text("/deploy staging\r")
        inp.send_text("\x04")
        assert await repl.run() == 0
    model.assert_done()
    sent = "\n".join(user_texts(model.requests[0]))
    assert "Run the deploy checklist." in sent and "staging" in sent


async def test_mcp_status_prompt_command_and_mention(project: Path) -> None:  # noqa: F811
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tour": {"command": sys.executable, "args": [str(SERVERS / "tour.py")]}}})
    )
    model = ScriptedModel([reply("Planned."), reply("Read it.")])
    with create_pipe_input() as inp:
        repl, buf = make_repl(project, model, inp)
        inp.send_text("/mcp\r")
        inp.send_text("/tour:plan_trip Paris 3\r")
        inp.send_text("summarise @tour:docs://handbook please\r")
        inp.send_text("\x04")
        assert await repl.run() == 0
    model.assert_done()
    out = buf.getvalue()
    assert "tour: connected" in out or "tour:" in out
    assert "mcp__tour__echo" in {t["name"] for t in model.requests[0].tools}
    assert "City=Paris; Days=3." in "\n".join(user_texts(model.requests[0]))
    second = "\n".join(user_texts(model.requests[1]))
    assert "Book trains, not planes" in second
    assert repl.mcp is not None and not repl.mcp.connected()  # closed on exit


def test_bare_resume_flag_gets_the_pick_sentinel() -> None:
    from agent.flags import parse_argv
    from services.session import PICK_SESSION

    def resume(*argv: str) -> str | None:
        return parse_argv(list(argv)).resume

    assert resume("-r") == PICK_SESSION
    assert resume("--resume", "--mock") == PICK_SESSION
    assert resume("-r", "20261202-abc") == "20261202-abc"
    assert resume("--resume=abc") == "abc"
    assert resume("--", "-r") is None and parse_argv(["--", "-r"]).prompt == ["-r"]


async def test_resume_without_id_opens_the_picker(project: Path) -> None:  # noqa: F811
    from services.session import PICK_SESSION

    first = ScriptedModel([reply("first answer")])
    with create_pipe_input() as inp:
        repl, _ = make_repl(project, first, inp)
        inp.send_text("remember this\r\x04")
        assert await repl.run() == 0
    earlier = repl.engine.session_id
    second = ScriptedModel([reply("resumed answer")])
    with create_pipe_input() as inp:
        repl2, buf = make_repl(project, second, inp)
        inp.send_text("1\r")  # pick the first session in the list
        inp.send_text("go on\r\x04")
        assert await repl2.run(resume=PICK_SESSION) == 0
    assert repl2.engine.session_id == earlier
    assert "remember this" in user_texts(second.requests[0])


def test_bare_resume_in_one_shot_is_a_usage_error(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {**os.environ, "AGENT_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "agent", "-r", "--mock", "task"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "picks a session in the REPL" in proc.stderr
