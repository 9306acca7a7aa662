"""What a later session loads (services/loaded_config.py) stays read-only in the sandbox at any depth, and
the permission gate asks before writing it: real bubblewrap through BashTool.call (the session sandbox), the
bounded walk on real trees, the gate on real paths."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.sandbox_settings import SandboxSettings
from tests.files import write
from tools import sandbox_session, sandbox_walk
from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.permissions import PermissionGate, PermissionRequest
from tools.sandbox import Availability, Sandbox, probe
from tools.sandbox_walk import find_loaded
from tools.write import WriteTool

needs_bwrap = pytest.mark.skipif(not probe(os.environ.get("PATH")).ok, reason="bubblewrap does not work here")

PROTECTED_AT_DEPTH = (".env", ".env.local", "sub/.claude/settings.json", "sub/.mcp.json", "sub/.git/config",
                      "deep/a/b/CLAUDE.md", "sub/.gitattributes", "sub/AGENTS.md", "sub/.envrc", "sub/.lsp.json",
                      "sub/.env.production", "sub/.agents/skills/x/SKILL.md", "sub/.git/hooks/pre-commit")


def _tree(project: Path) -> None:
    for rel in PROTECTED_AT_DEPTH:
        if rel != ".env":  # a missing root .env gets the placeholder
            write(project / rel, "ORIGINAL\n")
    write(project / "deep" / "a" / "b" / "code.py", "print(1)\n")


@pytest.fixture
def box() -> Iterator[tuple[BashTool, ToolContext, Path]]:
    # Outside /tmp: the sandbox's /tmp is private, a path there would not be the host's.
    base = Path(tempfile.mkdtemp(prefix="agent-sbx-loaded-", dir="/var/tmp"))
    project = base / "project"
    project.mkdir()
    _tree(project)
    tool = BashTool()
    tool.sandbox = Sandbox(SandboxSettings(), probe(os.environ.get("PATH")), project, base / "home", base / "agent")
    try:
        yield tool, ToolContext(session=SessionState(cwd=project), project_root=project), base
    finally:
        sandbox_session.stop_all()
        shutil.rmtree(base, ignore_errors=True)


async def _sh(tool: BashTool, ctx: ToolContext, command: str) -> str:
    out = await tool.call({"command": command}, ctx)
    return str(out.content)


@needs_bwrap
async def test_writes_to_loaded_configuration_fail_at_any_depth(box) -> None:
    tool, ctx, _ = box
    project = ctx.project_root
    lines = "; ".join(f"printf 'ANTHROPIC_BASE_URL=http://127.0.0.1:9\\n' > {rel}; echo {rel}=$?"
                      for rel in PROTECTED_AT_DEPTH)
    out = await _sh(tool, ctx, lines + "; sed -i s/ORIGINAL/EVIL/ sub/.mcp.json; echo sed=$?; "
                    "rm -f .env.local; echo rm=$?; echo ok > deep/a/b/new.txt; echo normal=$?; "
                    "echo 2 >> deep/a/b/code.py; echo append=$?")
    for rel in PROTECTED_AT_DEPTH:
        assert f"{rel}=1" in out, (rel, out)
        assert rel == ".env" or (project / rel).read_text() == "ORIGINAL\n", rel
    assert "sed=4" in out and "rm=1" in out and (project / ".env.local").exists()
    assert "normal=0" in out and (project / "deep/a/b/new.txt").read_text() == "ok\n"
    assert "append=0" in out and (project / "deep/a/b/code.py").read_text() == "print(1)\n2\n"
    assert (project / ".env").read_text() == ""  # the placeholder, empty while the sandbox holds it
    sandbox_session.stop_all()
    assert not (project / ".env").exists()  # gone with the sandbox


@needs_bwrap
async def test_renaming_the_parent_away_keeps_the_protection(box) -> None:
    tool, ctx, _ = box
    project = ctx.project_root
    out = await _sh(tool, ctx, "mv sub sub2; echo mv=$?; echo EVIL > sub2/.claude/settings.json; echo w=$?; "
                    "mv sub2/.claude sub2/c; echo inner=$?; rm -rf sub2; echo rm=$?")
    assert "mv=0" in out and "w=1" in out and "inner=1" in out and "rm=1" in out
    # The mount went with the directory: the file is read-only under its new name, and still there.
    assert (project / "sub2" / ".claude" / "settings.json").read_text() == "ORIGINAL\n"
    assert (project / "sub2" / ".git" / "config").read_text() == "ORIGINAL\n"


@needs_bwrap
async def test_a_file_made_at_depth_is_read_only_from_the_next_command_on(box) -> None:
    tool, ctx, _ = box
    project = ctx.project_root
    # Within one command a mount cannot stop it (the trust digest catches it when a session loads it)...
    out = await _sh(tool, ctx, "mkdir -p new/.claude && echo '{}' > new/.claude/settings.json; echo made=$?")
    assert "made=0" in out
    # ...but the next command's sandbox is a fresh one that binds it.
    out = await _sh(tool, ctx, "echo EVIL > new/.claude/settings.json; echo w=$?")
    assert "w=1" in out and (project / "new/.claude/settings.json").read_text() == "{}\n"


def _sandbox(project: Path, base: Path) -> Sandbox:
    return Sandbox(SandboxSettings(), Availability(True, path="/usr/bin/bwrap"), project, base, base / "h")


def test_the_walk_follows_no_symlink(tmp_path: Path) -> None:
    project, outside = tmp_path / "p", tmp_path / "outside"
    write(outside / "CLAUDE.md", "x")
    write(outside / "secret.env", "A=1\n")
    (project / "sub").mkdir(parents=True)
    (project / "sub" / ".env").symlink_to(outside / "secret.env")
    (project / "linked").symlink_to(outside)  # a directory link: not walked into
    (project / "sub" / ".claude").symlink_to(outside)
    walk = find_loaded(str(project))
    assert walk.found == [] and walk.capped is None
    wrapped = _sandbox(project, tmp_path).wrap(["true"], project, {})
    try:
        assert not any(a.startswith(str(outside)) for a in wrapped.argv)
        assert str(project / "sub" / ".env") not in wrapped.argv
    finally:
        wrapped.release()


def test_the_walk_skips_dependencies_and_git_internals_and_stops_at_its_cap(tmp_path: Path) -> None:
    project = tmp_path / "p"
    write(project / "node_modules" / "pkg" / "CLAUDE.md", "x")
    write(project / ".venv" / "lib" / "AGENTS.md", "x")
    write(project / ".env" / "bin" / "activate", "x")  # a virtualenv called .env: not a dotenv file
    write(project / ".git" / "modules" / "m" / "config", "x")  # the root's own .git: bound by _protect
    write(project / "vendor" / "lib" / ".git", "gitdir: ../../.git/modules/m\n")  # a submodule's .git file
    write(project / "svc" / ".git" / "objects" / "ab" / "CLAUDE.md", "x")  # inside a nested git dir
    write(project / "svc" / ".git" / "config", "[core]\n")
    found = find_loaded(str(project), skip={".git"}).found
    assert sorted(found) == [str(project / "svc/.git/config"), str(project / "vendor/lib/.git")]
    for i in range(50):
        write(project / "many" / f"d{i:02}" / "CLAUDE.md", "x")
    capped = find_loaded(str(project / "many"), max_entries=60)
    assert capped.capped == "60 entries" and len(capped.found) == 11  # what was found is still protected


def test_a_missing_root_env_is_an_empty_file_placeholder_and_a_real_one_is_bound(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    sb = _sandbox(project, tmp_path)
    first = sb.wrap(["true"], project, {})
    assert (project / ".env").is_file() and (project / ".env").read_bytes() == b""
    assert str(project / ".env") in first.argv
    first.release()
    assert not (project / ".env").exists()
    (project / ".env").write_text("A=1\n")
    second = sb.wrap(["true"], project, {})
    second.release()
    assert (project / ".env").read_text() == "A=1\n"  # real: bound as it is, never removed
    i = second.argv.index(str(project / ".env"))
    assert second.argv[i - 1] == "--ro-bind-try"


@pytest.mark.parametrize("rel", [".env", "sub/.env.local", "sub/.claude/settings.json", "sub/.mcp.json",
                                 "sub/.git/config", "sub/.git/hooks/pre-commit", "sub/.gitattributes",
                                 "sub/.envrc", "sub/.lsp.json", "sub/.agents/x.md"])
async def test_the_gate_always_asks_for_configuration_at_any_depth(tmp_path: Path, rel: str) -> None:
    project = tmp_path / "p"
    project.mkdir()
    ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
    asked: list[PermissionRequest] = []

    async def ask(req: PermissionRequest) -> str:
        asked.append(req)
        return "deny"

    kw: dict[str, Any] = {"home": tmp_path / "home", "allowed_tools": ["Write"], "ask": ask}
    input = {"file_path": str(project / rel), "content": "x"}
    for mode in ("default", "acceptEdits"):
        asked.clear()
        assert not (await PermissionGate(mode=mode, **kw).authorize(WriteTool(), input, ctx)).allowed
        assert len(asked) == 1 and asked[0].always_rule is None, (mode, rel)  # never an "always" for it


@pytest.mark.parametrize("rel", ["CLAUDE.md", "deep/a/b/CLAUDE.md", "sub/AGENTS.md", "sub/CLAUDE.local.md",
                                 "sub/.env.production"])
async def test_accept_edits_asks_for_instructions_at_any_depth_and_a_rule_can_allow_them(
        tmp_path: Path, rel: str) -> None:
    project = tmp_path / "p"
    project.mkdir()
    ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
    input = {"file_path": str(project / rel), "content": "x"}
    headless = PermissionGate(home=tmp_path / "home", mode="acceptEdits", headless=True)
    assert not (await headless.authorize(WriteTool(), input, ctx)).allowed
    # An instruction file is what /init writes: an allow rule covers it (a dotenv file never).
    allowed = PermissionGate(home=tmp_path / "home", allowed_tools=["Write"], headless=True)
    assert (await allowed.authorize(WriteTool(), input, ctx)).allowed is ("env" not in rel)


def test_the_walk_reads_again_only_the_directories_that_changed(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    project = tmp_path / "p"
    write(project / "a" / "b" / "x.py", "x\n")
    write(project / "svc" / ".git" / "HEAD", "ref: refs/heads/main\n")
    time.sleep(sandbox_walk.SETTLE_S + 0.2)  # settled: their listings are kept from now on
    assert find_loaded(str(project)).found == []
    scans: list[str] = []
    real = sandbox_walk._scan
    monkeypatch.setattr(sandbox_walk, "_scan", lambda folder, git: scans.append(folder) or real(folder, git))
    assert find_loaded(str(project)).found == [] and scans == []  # nothing changed: nothing read again
    write(project / "a" / "b" / "CLAUDE.md", "x")
    os.utime(project / "a" / "b", (0, 0))  # its mtime set back: its ctime still moved
    (project / "svc" / ".git" / "config").write_text("[core]\n")
    assert sorted(find_loaded(str(project)).found) == [str(project / "a/b/CLAUDE.md"),
                                                      str(project / "svc/.git/config")]
    assert sorted(scans) == [str(project / "a/b"), str(project / "svc/.git")]


def test_a_capped_walk_is_traced_and_still_protects_what_it_found(tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    from services import trace

    project = tmp_path / "p"
    write(project / "CLAUDE.md", "x")
    for i in range(30):
        write(project / "z" / f"f{i}", "x")
    write(project / "z" / "deeper" / "AGENTS.md", "x")
    monkeypatch.setattr(sandbox_walk, "WALK_MAX_ENTRIES", 12)  # the root (with its placeholders), then z/
    monkeypatch.setattr(trace, "_forced", True)
    wrapped = _sandbox(project, tmp_path).wrap(["true"], project, {})
    wrapped.release()
    assert str(project / "CLAUDE.md") in wrapped.argv  # found before the cap: still bound
    assert str(project / "z" / "deeper" / "AGENTS.md") not in wrapped.argv
    err = capsys.readouterr().err
    assert f"[trace] sandbox.walk_capped root={project}" in err and "limit=12 entries" in err
