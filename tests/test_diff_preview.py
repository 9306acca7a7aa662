"""Edit/Write diffs are taken before the tool runs and travel on the start event, so a front end that draws
the event after the write still shows the real change (a new file's lines, an Edit in its context), with
paths relative to the project."""

from __future__ import annotations

from pathlib import Path

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.events import ToolStartEvent
from tools.edit import EditTool
from tools.permissions import PermissionGate
from tools.read import ReadTool
from tools.write import WriteTool


async def test_start_events_carry_the_diff_from_before_the_write(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    model = ScriptedModel([
        reply(tool_call("Read", {"file_path": "app.py"})),
        reply(tool_call("Write", {"file_path": "new.txt", "content": "hello\nworld\n"}),
              tool_call("Edit", {"file_path": str(cwd / "app.py"), "old_string": "b = 2", "new_string": "b = 20"})),
        reply("done"),
    ])
    engine = QueryEngine(EngineConfig(cwd=cwd, model="m"), [ReadTool(), WriteTool(), EditTool()],
                         QueryDeps(call_model=model), gate=PermissionGate(mode="bypassPermissions"))
    starts = [ev async for ev in engine.run_turn("go") if isinstance(ev, ToolStartEvent)]
    engine.close()
    by_name = {ev.name: ev for ev in starts}
    assert by_name["Read"].diff is None
    write = by_name["Write"].diff
    assert write[:2] == ["--- a/new.txt", "+++ b/new.txt"] and "+hello" in write and "+world" in write
    edit = by_name["Edit"].diff
    assert edit[:2] == ["--- a/app.py", "+++ b/app.py"]  # relative, not a//abs/path
    assert "-b = 2" in edit and "+b = 20" in edit and " a = 1" in edit  # in its context, not just the strings
    assert (cwd / "new.txt").read_text() == "hello\nworld\n" and "b = 20" in (cwd / "app.py").read_text()
