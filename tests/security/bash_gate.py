"""Shared helpers for the Bash trust-boundary tests: a project with a git folder, a sub-directory and a
link out, and one call that says what the gate does with a command line."""

from __future__ import annotations

from pathlib import Path

from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.permissions import PermissionGate, PermissionRequest

BASH = BashTool()
# Broad prefix rules an attacker would love to hide behind.
PREFIX_RULES = ["Bash(cp:*)", "Bash(mv:*)", "Bash(install:*)", "Bash(ln:*)", "Bash(tee:*)", "Bash(sort:*)",
                "Bash(git diff:*)", "Bash(git config:*)", "Bash(git grep:*)", "Bash(git log:*)", "Bash(rg:*)",
                "Bash(tar:*)", "Bash(zip:*)", "Bash(printf:*)", "Bash(find:*)", "Bash(cat:*)", "Bash(echo:*)",
                "Bash(ls:*)", "Bash(sed:*)", "Bash(awk:*)", "Bash(dd:*)", "Bash(curl:*)", "Bash(wget:*)",
                "Bash(touch:*)", "Bash(mkdir:*)", "Bash(rm:*)", "Bash(xargs:*)", "Bash(truncate:*)",
                "Bash(rsync:*)", "Bash(split:*)", "Bash(unzip:*)", "Bash(patch:*)", "Bash(git status:*)",
                "Bash(timeout:*)", "Bash(nice:*)", "Bash(cd:*)", "Bash(uniq:*)", "Bash(chmod:*)", "Bash(git:*)",
                "Bash(true:*)", "Bash(install:*)", "Bash(gzip:*)", "Bash(time:*)", "Bash(env:*)", "Bash(nohup:*)",
                "Bash(stdbuf:*)", "Bash(command:*)"]


def make_project(tmp_path: Path) -> ToolContext:
    project = tmp_path / "project"
    (project / "sub" / "deep").mkdir(parents=True)
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "README.md").write_text("hi\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "escape").symlink_to(outside)
    return ToolContext(session=SessionState(cwd=project), project_root=project)


async def decide(command: str, ctx: ToolContext, rules: list[str] | None = None, *, mode: str = "default",
                 deny: list[str] | None = None) -> tuple[str, PermissionRequest | None]:
    """("allow" | "deny" | "ask", the question asked)."""
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "deny"

    gate = PermissionGate(mode=mode, ask=ask, allowed_tools=list(rules or []),  # type: ignore[arg-type]
                          disallowed_tools=list(deny or []), home=ctx.project_root.parent / "agent-home")
    verdict = await gate.authorize(BASH, {"command": command}, ctx)
    if verdict.allowed:
        return "allow", None
    return ("ask", asked[0]) if asked else ("deny", None)
