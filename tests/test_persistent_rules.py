"""Rules that persist: "Yes, and don't ask again" saves the narrowest rule to the project's
`.claude/settings.local.json` (Claude Code's `localSettings`), keeping the user's keys and layout,
0600, atomically; a later `-p` run honours it in a trusted folder; `/permissions` lists and removes."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest
from rich.console import Console

from services.rule_store import RuleStoreError, add_rule, remove_rule

pexpect = pytest.importorskip("pexpect")

from tests.fake_anthropic import tool_block  # noqa: E402
from tests.test_repl_pty import PROMPT_READY, finish, spawn, wait_screen  # noqa: E402

USER_FILE = """{
    "model": "claude-sonnet-4-5",
    "permissions": {
        "allow": [
            "Read(docs/**)"
        ],
        "deny": []
    },
    "env": {"A": "1"}
}
"""


def test_a_rule_joins_the_users_list_in_their_layout(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(USER_FILE)
    assert add_rule(path, "Bash(make:*)")
    assert not add_rule(path, "Bash(make:*)")  # already there: nothing written twice
    assert path.read_text() == USER_FILE.replace('"Read(docs/**)"', '"Read(docs/**)",\n            "Bash(make:*)"')
    assert remove_rule(path, "Bash(make:*)", "allow")
    assert path.read_text() == USER_FILE
    assert not remove_rule(path, "Bash(make:*)", "allow")


def test_missing_lists_are_added_where_the_user_would(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{\n\t"model": "x"\n}\n')
    add_rule(path, "Bash(ls:*)")
    assert path.read_text() == '{\n\t"model": "x",\n\t"permissions": {\n\t\t"allow": [\n\t\t\t"Bash(ls:*)"\n\t\t]\n\t}\n}\n'
    path.write_text('{"permissions": {"deny": ["WebFetch"]}}')
    add_rule(path, "Bash(ls:*)")
    assert json.loads(path.read_text()) == {"permissions": {"deny": ["WebFetch"], "allow": ["Bash(ls:*)"]}}


@pytest.mark.parametrize("text, says", [
    ('{\n  // my note\n  "model": "x"\n}\n', "has comments"),
    ('{"model": "x",}', "not valid JSON"),
    ("[1, 2]", "top level is not an object"),
    ('{"permissions": {"allow": "Bash"}}', "'permissions.allow' is not a list"),
    ('{"permissions": []}', "'permissions' is not an object"),
])
def test_a_file_it_cannot_edit_safely_is_left_as_it_was(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "settings.local.json"
    path.write_text(text)
    with pytest.raises(RuleStoreError, match=says):
        add_rule(path, "Bash(ls:*)")
    assert path.read_text() == text
    assert os.listdir(tmp_path) == ["settings.local.json"]  # no temporary file left behind


def test_the_file_and_its_new_directory_are_private_under_umask_000(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "proj" / ".claude" / "settings.local.json"
        (tmp_path / "proj").mkdir()
        add_rule(path, "Bash(ls:*)")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_dont_ask_again_in_the_repl_holds_in_the_next_p_run(cli, fake_anthropic) -> None:
    work = Path(cli.cwd)
    settings = work / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "model": "claude-sonnet-4-5"\n}\n')
    assert cli("trust", str(work), with_fake=False).code == 0
    fake_anthropic.reply(tool_block("Bash", {"command": "touch first.txt"}))
    fake_anthropic.text("Made it.")
    child = spawn(cli)
    child.send("make a file\r")
    wait_screen(child, "don't ask again for Bash(touch first.txt)")
    child.send("2")
    child.expect_exact("Saved Bash(touch first.txt) to")
    child.expect_exact("Made it.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "first.txt").exists()
    data = json.loads(settings.read_text())
    assert data == {"model": "claude-sonnet-4-5", "permissions": {"allow": ["Bash(touch first.txt)"]}}
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    # The next session, headless: nobody to ask, and the rule lets it run.
    (work / "first.txt").unlink()
    fake_anthropic.reply(tool_block("Bash", {"command": "touch first.txt"}))
    fake_anthropic.text("Made it again.")
    r = cli("-p", "make it again")
    assert r.code == 0, r.stderr
    assert (work / "first.txt").exists()
    # Removed with /permissions, the next run asks again (headless: refused).
    child = spawn(cli)
    child.send("/permissions\r")
    child.expect_exact("allow  Bash(touch first.txt)  [local: .claude/settings.local.json]")
    child.expect_exact(PROMPT_READY)
    child.send("/permissions remove 1\r")
    child.expect_exact("Removed allow rule Bash(touch first.txt) (local: .claude/settings.local.json).")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert json.loads(settings.read_text()) == {"model": "claude-sonnet-4-5", "permissions": {"allow": []}}
    (work / "first.txt").unlink()
    fake_anthropic.reply(tool_block("Bash", {"command": "touch first.txt"}))
    fake_anthropic.text("Refused.")
    r = cli("-p", "make it once more")
    assert not (work / "first.txt").exists()


def test_an_untrusted_folder_lists_its_allow_rules_as_not_applied(env_ctx) -> None:
    ctx, buf = env_ctx
    ctx.engine.gate.session_rules.append(("Write", "a.txt"))
    from agent.slash.permissions import cmd_permissions

    cmd_permissions(ctx, "")
    out = buf.getvalue()
    assert "allow  Bash(ls:*)  [local: .claude/settings.local.json]  (not applied: folder not trusted)" in out
    assert "allow  Write(a.txt)  [session: this session]" in out
    cmd_permissions(ctx, "remove 2")
    assert ctx.engine.gate.session_rules == []
    assert "Removed allow rule Write(a.txt) (session: this session)." in buf.getvalue()
    cmd_permissions(ctx, "remove 9")
    assert "No rule '9'" in buf.getvalue()


@pytest.fixture
def env_ctx(proj: Path):
    from agent.loop.factory import AppOptions, build_engine
    from agent.slash.router import CommandContext, default_router
    from services.config import Settings

    (proj / ".claude").mkdir()
    (proj / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": ["Bash(ls:*)"]}}')
    opts = AppOptions(cwd=proj, settings=Settings(model="claude-sonnet-4-5"), trusted=False)
    engine = build_engine(opts)
    buf = io.StringIO()
    console = Console(file=buf, width=200, color_system=None)
    return CommandContext(engine, console, proj, default_router(), opts=opts), buf
