"""One end to end: a scripted model drives the engine built by build_engine to Read then Edit a file."""

from __future__ import annotations

from pathlib import Path

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.config import Settings
from services.events import Terminal
from services.messages import tool_results


async def test_scripted_model_reads_then_edits(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ALLOW_WRITE", raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "app.py").write_text("def greet():\n    return 'hello'\n")
    model = ScriptedModel([
        reply("Reading.", tool_call("Read", {"file_path": "app.py"}, id="toolu_r")),
        reply("Editing.", tool_call("Edit", {"file_path": "app.py", "old_string": "'hello'", "new_string": "'hi'"}, id="toolu_e")),
        reply("Done."),
    ])
    engine = build_engine(AppOptions(cwd=project, settings=Settings(), permission_mode="acceptEdits"),
                          deps=QueryDeps(call_model=model))
    assert {"Read", "Write", "Edit", "Bash", "Grep", "Glob"} <= {t.name for t in engine.tools}
    assert "Echo" not in {t.name for t in engine.tools}
    terminal = None
    async for ev in engine.run_turn("change the greeting"):
        if isinstance(ev, Terminal):
            terminal = ev
    assert terminal is not None and terminal.reason == "completed"
    model.assert_done()
    assert (project / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    results = [r for m in engine.messages if m["role"] == "user" for r in tool_results(m)]
    assert "2\t    return 'hello'" in results[0]["content"]
    assert not results[1].get("is_error") and "has been updated successfully" in results[1]["content"]


async def test_disallowed_bare_tool_is_not_offered_and_rules_reach_the_gate(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    project = tmp_path / "proj"
    project.mkdir()
    opts = AppOptions(cwd=project, settings=Settings(), allowed_tools=["Bash(git status:*)"], disallowed_tools=["Bash", "Edit(secret/**)"])
    engine = build_engine(opts, deps=QueryDeps(call_model=ScriptedModel([])))
    assert "Bash" not in {t.name for t in engine.tools}
    assert engine.gate.allowed_tools == ["Bash(git status:*)"]
    assert "Edit(secret/**)" in engine.gate.disallowed_tools
