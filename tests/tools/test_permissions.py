"""The permission gate as a table of cases: modes, rules, outside-the-tree writes, session rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.bash_rules import always_rule_content
from tools.edit import EditTool
from tools.grep import GrepTool
from tools.permissions import REJECT_MESSAGE, PermissionGate, headless_denial
from tools.read import ReadTool
from tools.write import WriteTool

TOOLS = {"Read": ReadTool(), "Write": WriteTool(), "Edit": EditTool(), "Bash": BashTool(), "Grep": GrepTool()}
E = {"old_string": "a", "new_string": "b"}

# (mode, allowed, disallowed, ask_rules, tool, input, ALLOW_WRITE, expected: allow | deny | ask)
CASES = [
    ("default", [], [], [], "Read", {"file_path": "x.py"}, False, "allow"),
    ("default", [], [], [], "Read", {"file_path": "/etc/hosts"}, False, "ask"),  # reads outside ask
    ("default", ["Read(/etc/**)"], [], [], "Read", {"file_path": "/etc/hosts"}, False, "allow"),
    ("default", [], [], [], "Write", {"file_path": "x.py", "content": ""}, False, "ask"),
    ("default", [], [], [], "Bash", {"command": "ls"}, False, "ask"),
    ("default", [], [], [], "Write", {"file_path": "x.py", "content": ""}, True, "allow"),
    ("acceptEdits", [], [], [], "Edit", {"file_path": "src/a.py", **E}, False, "allow"),
    ("acceptEdits", [], [], [], "Write", {"file_path": "new.py", "content": ""}, False, "allow"),
    ("acceptEdits", [], [], [], "Bash", {"command": "ls"}, False, "ask"),
    ("acceptEdits", [], [], [], "Edit", {"file_path": "../out.py", **E}, False, "ask"),
    ("acceptEdits", [], [], [], "Write", {"file_path": "escape/x.py", "content": ""}, False, "ask"),  # symlink out
    ("default", [], [], [], "Write", {"file_path": "../out.py", "content": ""}, True, "ask"),
    ("default", ["Edit(**)"], [], [], "Edit", {"file_path": "../out.py", **E}, False, "ask"),
    ("plan", [], [], [], "Read", {"file_path": "x.py"}, False, "allow"),
    ("plan", [], [], [], "Edit", {"file_path": "x.py", **E}, False, "deny"),
    ("plan", ["Bash"], [], [], "Bash", {"command": "ls"}, False, "deny"),
    ("bypassPermissions", [], [], [], "Bash", {"command": "rm -rf build"}, False, "allow"),
    ("bypassPermissions", [], ["Bash(rm:*)"], [], "Bash", {"command": "rm -rf build"}, False, "deny"),
    ("default", ["Bash(git status:*)"], [], [], "Bash", {"command": "git status --short"}, False, "allow"),
    ("default", ["Bash(git status:*)"], [], [], "Bash", {"command": "git statusx"}, False, "ask"),
    ("default", ["Bash(git status:*)"], [], [], "Bash", {"command": "git status && rm -rf /"}, False, "ask"),
    ("default", ["Bash(git status:*)"], [], [], "Bash", {"command": "git status $(rm -rf /)"}, False, "ask"),
    ("default", ["Bash(git status:*)", "Bash(ls:*)"], [], [], "Bash", {"command": "git status; ls -la"}, False, "allow"),
    ("default", ["Bash(npm test)"], [], [], "Bash", {"command": "npm test"}, False, "allow"),
    ("default", ["Bash(npm test)"], [], [], "Bash", {"command": "npm test --watch"}, False, "ask"),
    ("default", ["Bash"], ["Bash(rm:*)"], [], "Bash", {"command": "ls && rm x"}, False, "deny"),
    ("default", ["Edit(src/**)"], [], [], "Edit", {"file_path": "src/deep/a.py", **E}, False, "allow"),
    ("default", ["Edit(src/**)"], [], [], "Write", {"file_path": "src/n.py", "content": ""}, False, "allow"),
    ("default", ["Edit(src/**)"], [], [], "Edit", {"file_path": "lib/a.py", **E}, False, "ask"),
    ("default", ["Edit(src/*.py)"], [], [], "Edit", {"file_path": "src/deep/a.py", **E}, False, "ask"),
    ("default", ["Edit"], ["Edit(secrets/**)"], [], "Edit", {"file_path": "secrets/k", **E}, False, "deny"),
    ("acceptEdits", [], [], ["Edit(src/**)"], "Edit", {"file_path": "src/a.py", **E}, False, "ask"),  # ask beats allow
    ("default", ["Edit"], ["Edit"], [], "Edit", {"file_path": "a.py", **E}, False, "deny"),  # deny beats allow
    ("default", [], ["Read"], [], "Read", {"file_path": "a.py"}, False, "deny"),
    ("default", [], ["Read(.env)"], [], "Grep", {"pattern": "x", "path": ".env"}, False, "deny"),
    ("default", [], [], ["Read(**)"], "Read", {"file_path": "a.py"}, False, "ask"),
]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    project = tmp_path / "project"
    project.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "escape").symlink_to(outside)
    return ToolContext(session=SessionState(cwd=project), project_root=project)


@pytest.mark.parametrize("mode,allowed,disallowed,ask_rules,tool,input,allow_write,expected", CASES)
async def test_gate_table(ctx, monkeypatch, mode, allowed, disallowed, ask_rules, tool, input, allow_write, expected):
    if allow_write:
        monkeypatch.setenv("ALLOW_WRITE", "1")
    else:
        monkeypatch.delenv("ALLOW_WRITE", raising=False)
    asked = []

    async def ask(req):
        asked.append(req)
        return "once"

    gate = PermissionGate(mode=mode, ask=ask, allowed_tools=allowed, disallowed_tools=disallowed, ask_tools=ask_rules)
    verdict = await gate.authorize(TOOLS[tool], input, ctx)
    got = "deny" if not verdict.allowed else ("ask" if asked else "allow")
    assert got == expected
    if got == "deny":
        assert REJECT_MESSAGE in verdict.message
    # One-shot (no ask hook): whatever would ask is denied with exactly the reject message.
    oneshot = await PermissionGate(mode=mode, allowed_tools=allowed, disallowed_tools=disallowed,
                                   ask_tools=ask_rules).authorize(TOOLS[tool], input, ctx)
    assert oneshot.allowed == (expected == "allow")
    if expected == "ask":
        assert (oneshot.message == REJECT_MESSAGE or "--add-dir" in oneshot.message) and not oneshot.end_turn


async def test_user_deny_ends_the_turn(ctx) -> None:
    async def deny(req):
        return "deny"

    v = await PermissionGate(ask=deny).authorize(TOOLS["Bash"], {"command": "ls"}, ctx)
    assert not v.allowed and v.message == REJECT_MESSAGE and v.end_turn


async def test_always_is_scoped_to_path_or_command_prefix(ctx) -> None:
    asked = []

    async def ask(req):
        asked.append(req.label)
        return "always" if len(asked) <= 2 else "deny"

    gate = PermissionGate(ask=ask)
    assert (await gate.authorize(TOOLS["Write"], {"file_path": "a.txt", "content": ""}, ctx)).allowed
    assert gate.session_rules == [("Write", "a.txt")]
    assert (await gate.authorize(TOOLS["Write"], {"file_path": "a.txt", "content": "2"}, ctx)).allowed
    assert len(asked) == 1
    assert (await gate.authorize(TOOLS["Bash"], {"command": "git status --short"}, ctx)).allowed
    assert gate.session_rules[-1] == ("Bash", "git status:*")
    assert (await gate.authorize(TOOLS["Bash"], {"command": "git status"}, ctx)).allowed and len(asked) == 2
    # Never all of Bash (react-agent-mini's bug B12): another command still asks.
    v = await gate.authorize(TOOLS["Bash"], {"command": "rm -rf /"}, ctx)
    assert not v.allowed and len(asked) == 3


async def test_always_on_an_outside_write_adds_no_rule(ctx) -> None:
    async def ask(req):
        assert "outside" in req.reason
        return "always"

    gate = PermissionGate(mode="acceptEdits", ask=ask)
    assert (await gate.authorize(TOOLS["Write"], {"file_path": "../x", "content": ""}, ctx)).allowed
    assert gate.session_rules == []


def test_always_rule_is_never_broader_than_word_and_subcommand() -> None:
    assert always_rule_content("git status --short") == "git status:*"
    assert always_rule_content("ls -la /tmp") == "ls:*"
    assert always_rule_content("make && rm -rf x") is None  # compound: no "always"
    assert always_rule_content("git -C x push") == "git -C x push"
    for interp in ("bash -c 'ls'", "python -m pytest", "sudo apt install x", "node x.js", "perl -e 1", "sh x.sh"):
        rule = always_rule_content(interp)
        assert rule is not None and not rule.endswith(":*"), interp
    assert always_rule_content("echo $(id)") is None


def test_headless_denial_words(ctx) -> None:
    """Claude Code 2.1's `-p` denial texts (tests/fixtures/claude_code: denied_*_default_mode)."""
    w = headless_denial(TOOLS["Write"], {"file_path": "new.txt", "content": ""}, ctx)
    assert w == f"Claude requested permissions to write to {ctx.resolve('new.txt')}, but you haven't granted it yet."
    r = headless_denial(TOOLS["Read"], {"file_path": "a.py"}, ctx)
    assert r.startswith("Claude requested permissions to read from ")
    assert headless_denial(TOOLS["Bash"], {"command": "python3 x.py"}, ctx) == "This command requires approval"
