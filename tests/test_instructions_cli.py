"""Claude Code's instruction files through the real CLI, compared with what Claude Code 2.1.332 sent.

The reference is `tests/fixtures/claude_code/instructions.json`, recorded from the real binary (npm
`@anthropic-ai/claude-code@2.1.332`) by `record_instructions.py` on the layout of `instructions_layout.py`.
The start-up text is the same (Claude Code sends it as a <system-reminder> in the first user message; this
agent keeps it in the system prompt, see CONTEXT.md); nested files and path rules follow the tool results
with the same words, once each, and the earlier request is a byte prefix of the later one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.trust import trust
from tests.conftest import CliRunner
from tests.fake_anthropic import tool_block
from tests.fixtures.claude_code.instructions_layout import READS, lay_out, portable

RECORDED = json.loads((Path(__file__).parent / "fixtures/claude_code/instructions.json").read_text())
CLAUDE_CODE_VERSION = "2.1.332"
WRAP = ("<system-reminder>\n", "\n</system-reminder>")


def test_the_reference_was_recorded_from_claude_code_2_1_332():
    assert RECORDED["version"].startswith(CLAUDE_CODE_VERSION)


def _run(tmp_path: Path, cli: CliRunner, *, trusted: bool, reads: list[str] = READS):
    home, proj = lay_out(tmp_path)
    if trusted:
        trust(proj, cli.agent_home)
    for rel in reads:
        cli.fake.reply(tool_block("Read", {"file_path": str(proj / rel)}))
    cli.fake.reply("Final answer.")
    runner = CliRunner(cli.agent_home, proj, cli.fake)
    result = runner("-p", "Do the task.", HOME=str(home), CLAUDE_CONFIG_DIR=None)
    assert result.code == 0, result.stderr
    return result, [r.body for r in cli.fake.requests]


def _system(body: dict) -> str:
    return "".join(b["text"] for b in body["system"])


def _after_results(body: dict) -> list[str]:
    """The texts sent after the last tool results (the meta messages that follow them)."""
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m["role"] == "assistant")
    return [b["text"] for m in msgs[last + 1:] for b in m["content"] if b.get("type") == "text"
            and b["text"].startswith("<system-reminder>\nContents of")]


def test_start_up_instructions_are_claude_codes_text(tmp_path, cli):
    _, bodies = _run(tmp_path, cli, trusted=True)
    recorded = RECORDED["claude_md"]
    assert recorded.startswith(WRAP[0]) and recorded.endswith(WRAP[1])
    expected = recorded[len(WRAP[0]):-len(WRAP[1])]
    assert expected in portable(_system(bodies[0]), tmp_path)
    # What the recording shows about the rules: imports 4 deep, a cycle cut, nothing from code, no AGENTS.md
    # beside a CLAUDE.md, the path-scoped rule and the sub-directory's file not at start-up.
    for absent in ("DEEPER-4-TOO-DEEP", "INCODE-SHOULD-NOT", "INBLOCK-SHOULD-NOT", "NOT-IN-USE", "RULE-TS-ONLY",
                   "SUB-CLAUDE-MD", "block comment goes"):
        assert absent not in json.dumps(bodies[0])


def test_nested_file_and_path_rule_join_once_after_the_tool_results(tmp_path, cli):
    _, bodies = _run(tmp_path, cli, trusted=True)
    got = [[portable(t, tmp_path) for t in _after_results(b)] for b in bodies[1:]]
    assert got == RECORDED["after_tool_results"]
    # Appended, never inserted: each request starts with the previous one's bytes (system and messages;
    # the cache breakpoint markers move by design).
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert _bare(before["system"]) == _bare(after["system"])
        head = json.dumps(_bare(before["messages"]))[:-1]
        assert json.dumps(_bare(after["messages"])).startswith(head)


def _bare(value):
    if isinstance(value, list):
        return [_bare(v) for v in value]
    if isinstance(value, dict):
        return {k: _bare(v) for k, v in value.items() if k != "cache_control"}
    return value


def test_untrusted_folder_loads_only_the_users_files(tmp_path, cli):
    _, bodies = _run(tmp_path, cli, trusted=False, reads=["sub/file.txt", "src/a.ts"])
    sent = json.dumps(bodies)
    assert "USER-CLAUDE-MD" in sent and "USER-IMPORTED" in sent and "USER-RULE" in sent
    for project in ("PROJ-CLAUDE-MD", "OUTER-ABOVE-REPO", "LOCAL-MD", "RULE-GENERAL", "SUB-CLAUDE-MD", "RULE-TS-ONLY"):
        assert project not in sent


@pytest.mark.parametrize("trusted", [True, False])
def test_agent_home_agents_md_is_the_users_file(tmp_path, cli, trusted):
    (cli.agent_home / "AGENTS.md").write_text("AGENT-HOME-AGENTS\n")
    _, bodies = _run(tmp_path, cli, trusted=trusted, reads=[])
    system = _system(bodies[0])
    assert (f"Contents of {cli.agent_home / 'AGENTS.md'} (user's private global instructions for all "
            "projects):\n\nAGENT-HOME-AGENTS") in system
    assert system.index("USER-RULE text") < system.index("AGENT-HOME-AGENTS")


def test_claude_md_excludes_from_the_settings(tmp_path, cli):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(
        {"claudeMdExcludes": ["**/outer/CLAUDE.md", "**/.claude/rules/**", "**/sub/CLAUDE.md"]}))
    result, bodies = _run(tmp_path, cli, trusted=True)
    sent = json.dumps(bodies)
    for excluded in ("OUTER-ABOVE-REPO", "RULE-GENERAL", "USER-RULE", "RULE-TS-ONLY", "SUB-CLAUDE-MD"):
        assert excluded not in sent
    assert "PROJ-CLAUDE-MD" in sent and "USER-CLAUDE-MD" in sent
    assert "claudeMdExcludes" not in result.stderr  # a known setting: no warning


def test_a_subdirectory_agents_md_joins_where_it_is_the_file_in_use(tmp_path, cli):
    home, proj = lay_out(tmp_path)
    (proj / "lib").mkdir()
    (proj / "lib" / "AGENTS.md").write_text("LIB-AGENTS-MD\n")
    (proj / "lib" / "x.py").write_text("x = 1\n")
    trust(proj, cli.agent_home)
    cli.fake.reply(tool_block("Read", {"file_path": str(proj / "lib" / "x.py")}))
    cli.fake.reply("Done.")
    assert CliRunner(cli.agent_home, proj, cli.fake)("-p", "Go.", HOME=str(home), CLAUDE_CONFIG_DIR=None).code == 0
    assert _after_results(cli.fake.requests[1].body) == [
        f"<system-reminder>\nContents of {proj / 'lib' / 'AGENTS.md'}:\n\nLIB-AGENTS-MD\n\n</system-reminder>"]


def test_a_resumed_session_does_not_announce_a_file_again(tmp_path, cli):
    home, proj = lay_out(tmp_path)
    trust(proj, cli.agent_home)
    runner = CliRunner(cli.agent_home, proj, cli.fake)
    for _ in range(2):
        cli.fake.reply(tool_block("Read", {"file_path": str(proj / "sub" / "file.txt")}))
        cli.fake.reply("Done.")
    assert runner("-p", "Go.", HOME=str(home), CLAUDE_CONFIG_DIR=None).code == 0
    assert runner("-p", "-c", "Again.", HOME=str(home), CLAUDE_CONFIG_DIR=None).code == 0
    bodies = [r.body for r in cli.fake.requests]
    assert json.dumps(bodies[1]).count("SUB-CLAUDE-MD") == 1
    assert json.dumps(bodies[3]).count("SUB-CLAUDE-MD") == 1  # the earlier announcement, not a second one


HOOKS_RECORDED = json.loads((Path(__file__).parent / "fixtures/claude_code/instruction_hooks.json").read_text())


def test_instructions_loaded_and_cwd_changed_hooks_match_claude_code(tmp_path, cli):
    """The same layout and calls as record_instruction_hooks.py: each InstructionsLoaded input (file, memory
    type, load reason, importer, trigger, globs) and the CwdChanged input are the binary's. Hooks run
    concurrently there, so the events are compared in a stable order."""
    from tests.fixtures.claude_code.record_instruction_hooks import EVENTS, hooks, kept, script

    assert HOOKS_RECORDED["version"] == CLAUDE_CODE_VERSION
    home, proj = lay_out(tmp_path)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (proj / ".claude" / "settings.json").write_text(json.dumps(hooks(log_dir)))
    trust(proj, cli.agent_home)
    for name, input in script(proj):
        cli.fake.reply(tool_block(name, input))
    cli.fake.reply("Final answer.")
    result = CliRunner(cli.agent_home, proj, cli.fake)("-p", "Do the task.", "--dangerously-skip-permissions",
                                                      HOME=str(home), CLAUDE_CONFIG_DIR=None)
    assert result.code == 0, result.stderr
    for event in EVENTS:
        lines = (log_dir / f"{event}.jsonl").read_text().splitlines()
        ours = [kept(json.loads(x), tmp_path) for x in lines if x.strip()]
        key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
        assert sorted(ours, key=key) == sorted(HOOKS_RECORDED[event], key=key), event
