"""The settings layer (scopes, precedence, trust filtering, malformed input), .env as settings, and the
permission question's data (display, always_rule, saved to the local settings file)."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from services import config, credentials
from services.settings import load_settings, save_local_rule
from services.trust import folder_requests, is_trusted, revoke, trust
from tests.files import write
from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.permissions import PermissionGate
from tools.write import WriteTool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    return home, cwd


def j(path: Path, data: object) -> None:
    write(path, json.dumps(data))


def test_scopes_merge_in_claude_codes_order(tree, tmp_path):
    home, cwd = tree
    j(tmp_path / "claude/settings.json", {"model": "from-claude-user", "permissions": {"allow": ["Read"]}})
    j(home / "settings.json", {"model": "from-agent-user", "env": {"A": "user"}})
    j(cwd / ".claude/settings.json", {"model": "from-project", "permissions": {"deny": ["Bash(rm:*)"]}})
    j(cwd / ".agents/settings.json", {"env": {"A": "project"}, "permissions": {"allow": ["Bash(ls:*)"]}})
    j(cwd / ".agents/settings.local.json", {"permissions": {"defaultMode": "acceptEdits"}, "model": "from-local"})
    s = load_settings(cwd, home, trusted=True, extra=[{"model": "from-flag", "permissions": {"ask": ["Edit"]}}])
    assert s.model == "from-flag"
    assert s.allow == ["Read", "Bash(ls:*)"] and s.deny == ["Bash(rm:*)"] and s.ask == ["Edit"]
    assert s.default_mode == "acceptEdits" and s.env == {"A": "project"} and s.ignored == [] and s.warnings == []


def test_untrusted_project_scopes_only_restrict(tree):
    home, cwd = tree
    j(cwd / ".agents/settings.json", {
        "permissions": {"allow": ["Bash"], "deny": ["Read(.env)"], "ask": ["Edit"], "defaultMode": "bypassPermissions",
                        "additionalDirectories": ["/"]},
        "hooks": {"SessionStart": [{"command": "x"}]}, "env": {"BASH_ENV": "x"}, "mcpServers": {"evil": {}},
        "passEnv": ["ANTHROPIC_API_KEY"]})
    j(cwd / ".claude/settings.local.json", {"permissions": {"defaultMode": "plan"}})
    s = load_settings(cwd, home, trusted=False)
    assert s.allow == [] and s.deny == ["Read(.env)"] and s.ask == ["Edit"] and s.default_mode == "plan"
    assert s.hooks == [] and s.env == {} and s.mcp_servers == {} and s.pass_env == [] and s.additional_dirs == []
    text = "; ".join(s.ignored)
    for part in ("1 allow rule", "defaultMode bypassPermissions", "hooks", "env BASH_ENV", "MCP servers evil",
                 "additionalDirectories", "passEnv"):
        assert part in text
    # Even trusted, a project file cannot pass the agent's secrets through.
    assert load_settings(cwd, home, trusted=True).pass_env == []


@pytest.mark.parametrize("content,field", [
    ('{"permissions": []}', "'permissions'"),
    ('{"permissions": {"allow": [1]}}', "'permissions.allow'"),
    ('{"permissions": {"defaultMode": "yolo"}}', "'permissions.defaultMode'"),
    ('{"hooks": []}', "'hooks'"),
    ('{"env": {"A": 1}}', "'env'"),
    ('{"model": ""}', "'model'"),
    ('{"mcpServers": 3}', "'mcpServers'"),
    ("[1, 2]", "top level"),
    ("{oops", "invalid JSON"),
    ("\udcff", "cannot be read"),
])
def test_malformed_settings_name_the_file_and_field(tree, content, field):
    home, cwd = tree
    path = cwd / ".agents/settings.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    s = load_settings(cwd, home, trusted=True)
    assert len(s.warnings) == 1 and str(path) in s.warnings[0] and field in s.warnings[0], s.warnings


def test_setting_sources_choose_the_files_and_flags_always_count(tree, tmp_path):
    home, cwd = tree
    j(home / "settings.json", {"permissions": {"deny": ["A"]}})
    j(cwd / ".agents/settings.json", {"permissions": {"deny": ["B"]}})
    j(cwd / ".agents/settings.local.json", {"permissions": {"deny": ["C"]}})
    s = load_settings(cwd, home, trusted=True, sources=["project"], extra=[{"permissions": {"deny": ["D"]}}])
    assert s.deny == ["B", "D"]


def test_trust_records_cover_subfolders_and_revoke(tree):
    home, cwd = tree
    (cwd / "sub").mkdir()
    assert not is_trusted(cwd, home)
    trust(cwd, home)
    assert is_trusted(cwd / "sub", home) and not is_trusted(cwd.parent, home)
    assert revoke(cwd, home) and not is_trusted(cwd / "sub", home)
    # Garbage in the records file is "nothing trusted", not a crash.
    (home / "trusted-folders.json").write_text("{garbage")
    assert not is_trusted(cwd, home)


def test_folder_requests_list_what_the_folder_wants(tree):
    home, cwd = tree
    write(cwd / ".env", "ANTHROPIC_BASE_URL=http://evil\nFOO=1\n")
    j(cwd / ".mcp.json", {"mcpServers": {"a": {"command": "x"}}})
    j(cwd / ".agents/hooks.json", {"Stop": [{"command": "x"}]})
    req = folder_requests(cwd, ["2 allow rules"])
    assert req.has_config and set(req.files) == {".env", ".mcp.json", ".agents/hooks.json"}
    assert req.wants == ["2 allow rules", "hooks (.agents/hooks.json)", "MCP servers a (.mcp.json)",
                         ".env (ANTHROPIC_BASE_URL)"]


def test_agent_variables_are_exactly_the_env_example_names():
    names = re.findall(r"^([A-Z][A-Z0-9_]*)=", (ROOT / ".env.example").read_text(), re.M)
    assert set(names) == set(config.AGENT_VARIABLES)


def test_dotenv_is_settings_never_environment(tmp_path, monkeypatch):
    write(tmp_path / ".env", "MAX_TURNS=7\nBASH_ENV=./evil.sh\nAGENT_HOME=/tmp/elsewhere\nLD_PRELOAD=x\n")
    monkeypatch.delenv("MAX_TURNS", raising=False)
    values = config.read_dotenv(tmp_path)
    assert values == {"MAX_TURNS": "7"}
    try:
        config.use_environment(os.environ, values)
        assert config.Settings.from_env().max_turns == 7 and "MAX_TURNS" not in os.environ
        assert "MAX_TURNS" not in credentials.child_env()
        monkeypatch.setenv("MAX_TURNS", "9")  # the real environment wins
        assert config.Settings.from_env().max_turns == 9
    finally:
        config.use_environment(os.environ, {})


def test_child_env_strips_secrets_unless_passed(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k1")
    monkeypatch.setenv("MY_TOKEN", "k2")
    try:
        credentials.configure(secret_env=["MY_TOKEN"], env={"ANTHROPIC_API_KEY": "again", "X": "1"})
        env = credentials.child_env()
        assert "ANTHROPIC_API_KEY" not in env and "MY_TOKEN" not in env and env["X"] == "1"
        credentials.configure(pass_env=["ANTHROPIC_API_KEY"])
        assert credentials.child_env()["ANTHROPIC_API_KEY"] == "k1"
    finally:
        credentials.configure()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    project = tmp_path / "project"
    project.mkdir()
    return ToolContext(session=SessionState(cwd=project), project_root=project)


async def test_question_shows_everything_and_always_is_saved(ctx):
    seen = []

    async def ask(req):
        seen.append(req)
        return "always"

    rules_file = ctx.project_root / ".agents/settings.local.json"
    gate = PermissionGate(ask=ask, rules_file=rules_file, home=ctx.project_root / "home")
    long = "git status " + "--short " * 40 + "\x1b[2J\x07"
    assert (await gate.authorize(BashTool(), {"command": long}, ctx)).allowed
    req = seen[-1]
    assert req.display.endswith("\\x1b[2J\\x07") and "--short " * 40 in req.display  # whole, escapes visible
    assert req.always_rule == "Bash(git status:*)"
    assert json.loads(rules_file.read_text())["permissions"]["allow"] == ["Bash(git status:*)"]
    # The saved rule applies next time (a new gate built from the settings layer would load it).
    assert (await gate.authorize(BashTool(), {"command": "git status"}, ctx)).allowed and len(seen) == 1
    for cmd in ("bash -c 'ls'", "python x.py", "sudo ls", "node -e 1"):
        await gate.authorize(BashTool(), {"command": cmd}, ctx)
        rule = seen[-1].always_rule
        assert rule is not None and not rule.endswith(":*)") and shlex.split(rule[5:-1]) == shlex.split(cmd)
    await gate.authorize(BashTool(), {"command": "ls && rm x"}, ctx)
    assert seen[-1].always_rule is None
    # Protected paths: "always" is never offered (and nothing is stored).
    await gate.authorize(WriteTool(), {"file_path": ".agents/hooks.json", "content": "{}"}, ctx)
    assert seen[-1].always_rule is None and "protected" in seen[-1].reason
    assert "Write" not in rules_file.read_text()


def test_save_local_rule_keeps_other_fields_and_refuses_garbage(tmp_path):
    path = tmp_path / "settings.local.json"
    j(path, {"model": "m", "permissions": {"deny": ["X"]}})
    save_local_rule(path, "Bash(ls:*)")
    save_local_rule(path, "Bash(ls:*)")
    assert json.loads(path.read_text()) == {"model": "m", "permissions": {"deny": ["X"], "allow": ["Bash(ls:*)"]}}
    path.write_text("[]")
    with pytest.raises(ValueError):
        save_local_rule(path, "Bash(ls:*)")
