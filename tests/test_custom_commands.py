"""Custom slash commands (`.claude/commands/**/*.md`) through the real CLI against the fake server.

The expected message shapes are Claude Code 2.1.332's, recorded from the real binary: a `<command-message>`
header block then the expanded body; `$N` is 0-based and a missing one stays as written; without a
placeholder the arguments are appended as `ARGUMENTS: ...`; a refused `` !`cmd` `` makes no model call.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from services.skills.commands import split_tools, substitute_arguments
from services.trust import trust

REVIEW = ("---\ndescription: Review a file\nargument-hint: <file>\nallowed-tools: Bash(echo:*)\n---\n"
          "Review $ARGUMENTS please. First=$0 Second=$1 Third=$2\nEcho: !`echo hi-from-bang`\nSee @notes.txt\n")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "claude-config"
    d.mkdir(exist_ok=True)
    return d


def blocks(request) -> list[str]:  # noqa: ANN001
    last = request.messages[-1]["content"]
    return [b["text"] for b in last if b.get("type") == "text"]


def test_substitution_matches_claude_code() -> None:
    assert substitute_arguments("Review $ARGUMENTS. $0|$1|$2|$ARGUMENTS[1]\n", "src/a.py two") == \
        "Review src/a.py two. src/a.py|two|$2|two\n"
    assert substitute_arguments("Plain body.\n", "some args") == "Plain body.\n\n\nARGUMENTS: some args"
    assert substitute_arguments("Plain body.\n", "") == "Plain body.\n"
    assert substitute_arguments("$1abc", "a b") == "$1abc\n\nARGUMENTS: a b"  # `$1abc` is no placeholder
    assert split_tools("Bash(git add:*, x), Read") == ("Bash(git add:*, x)", "Read")


def test_project_command_expanded_with_bang_and_file(cli, workdir, fake_anthropic, tmp_path) -> None:
    write(workdir / ".claude/commands/review.md", REVIEW)
    write(workdir / "notes.txt", "NOTES BODY\n")
    trust(workdir, cli.agent_home)
    fake_anthropic.text("reviewed")
    r = cli("-p", "/review src/a.py two", CLAUDE_CONFIG_DIR=str(user_dir(tmp_path)))
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "reviewed"
    (req,) = fake_anthropic.requests
    assert blocks(req) == [
        "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>src/a.py two</command-args>\n",
        "Review src/a.py two please. First=src/a.py Second=two Third=$2\nEcho: hi-from-bang\nSee @notes.txt\n",
    ]
    sent = json.dumps(req.messages)
    assert "Called the Read tool with the following input: {\\\"file_path\\\":\\\"" + str(workdir / "notes.txt") in sent
    assert "Result of calling the Read tool:\\n1\\tNOTES BODY\\n2\\t\\n" in sent


def test_bang_outside_allowed_tools_fails_without_a_model_call(cli, workdir, fake_anthropic, tmp_path) -> None:
    write(workdir / ".claude/commands/deny.md", "---\nallowed-tools: Bash(echo:*)\n---\nX !`touch made.txt` Y\n")
    trust(workdir, cli.agent_home)
    r = cli("-p", "/deny", CLAUDE_CONFIG_DIR=str(user_dir(tmp_path)))
    assert r.code == 1
    assert 'Shell command permission check failed for pattern "!`touch made.txt`"' in r.stderr
    assert "Traceback" not in r.stderr
    assert fake_anthropic.requests == [] and not (workdir / "made.txt").exists()


def test_bang_never_runs_in_an_untrusted_folder(cli, workdir, fake_anthropic, tmp_path) -> None:
    write(workdir / ".claude/commands/review.md", REVIEW.replace("echo hi-from-bang", "echo x > ran.txt"))
    r = cli("-p", "/review a", CLAUDE_CONFIG_DIR=str(user_dir(tmp_path)))
    assert r.code == 1 and "trusted folder" in r.stderr
    assert fake_anthropic.requests == [] and not (workdir / "ran.txt").exists()


def test_namespaces_precedence_model_and_init(cli, workdir, fake_anthropic, tmp_path) -> None:
    user = user_dir(tmp_path)
    write(workdir / ".claude/commands/frontend/lint.md", "---\nmodel: claude-haiku-4-5\n---\nLint the frontend.\n")
    write(workdir / ".claude/commands/same.md", "project wins\n")
    write(user / "commands/same.md", "user loses\n")
    write(user / "commands/mine.md", "---\ndescription: mine\n---\nUser command $ARGUMENTS\n")
    fake_anthropic.text("linted")
    fake_anthropic.text("same")
    fake_anthropic.text("mine")
    r = cli("-p", "/frontend:lint", "--output-format", "stream-json", "--verbose", CLAUDE_CONFIG_DIR=str(user))
    assert r.code == 0, r.stderr
    init = json.loads(r.stdout.splitlines()[0])
    assert {"frontend:lint", "same", "mine"} <= set(init["slash_commands"])
    first = fake_anthropic.requests[0]
    assert first.body["model"] == "claude-haiku-4-5" and blocks(first)[1] == "Lint the frontend.\n"
    assert cli("-p", "/same", CLAUDE_CONFIG_DIR=str(user)).code == 0
    assert blocks(fake_anthropic.requests[1])[1] == "project wins\n"
    assert cli("-p", "/mine 42", CLAUDE_CONFIG_DIR=str(user)).code == 0
    assert blocks(fake_anthropic.requests[2])[1] == "User command 42\n"


def test_symlinked_command_and_skill_to_a_secret_are_ignored(cli, workdir, fake_anthropic, tmp_path) -> None:
    secret = write(tmp_path / "outside" / "secret.txt", "TOP-SECRET-TOKEN\n")
    (workdir / ".claude/commands").mkdir(parents=True)
    os.symlink(secret, workdir / ".claude/commands/steal.md")
    (workdir / ".claude/skills/leak").mkdir(parents=True)
    os.symlink(secret, workdir / ".claude/skills/leak/SKILL.md")
    os.symlink("/proc/self/environ", workdir / ".claude/commands/env.md")
    write(workdir / ".claude/commands/ok.md", "fine $ARGUMENTS @" + str(secret) + "\n")
    trust(workdir, cli.agent_home)
    fake_anthropic.text("done")
    r = cli("-p", "/ok now", "--output-format", "stream-json", "--verbose", CLAUDE_CONFIG_DIR=str(user_dir(tmp_path)))
    assert r.code == 0, r.stderr
    notices = [ln for ln in r.stderr.splitlines() if ln.startswith("notice: Ignored")]
    assert len(notices) == 3 and any("steal.md" in n for n in notices) and any("SKILL.md" in n for n in notices)
    init = json.loads(r.stdout.splitlines()[0])
    assert "steal" not in init["slash_commands"] and "env" not in init["slash_commands"]
    assert "leak" not in init["skills"]
    sent = json.dumps(fake_anthropic.requests[0].body)
    assert "TOP-SECRET-TOKEN" not in sent  # neither as a command, a skill nor an @file outside the read scope
    assert "fine now @" in sent


async def test_sdk_client_runs_a_custom_command(workdir, agent_home, fake_anthropic, tmp_path) -> None:
    """The official claude-agent-sdk, pointed at this agent: the init message lists the command and a
    `/name args` prompt is expanded; a refused `` !`cmd` `` is an error result, never a model call."""
    import sys

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, SystemMessage

    from tests.conftest import ROOT, TEST_KEY

    launcher = write(tmp_path / "agent-cli", f'#!/bin/sh\nexec "{sys.executable}" -m agent "$@"\n')
    launcher.chmod(0o755)
    write(workdir / ".claude/commands/hi.md", "---\ndescription: Say hi\n---\nSay hi to $ARGUMENTS.\n")
    write(workdir / ".claude/commands/bad.md", "---\nallowed-tools: Bash(echo:*)\n---\n!`touch x`\n")
    trust(workdir, agent_home)
    fake_anthropic.text("Hi, Ann.")
    env = {"ANTHROPIC_BASE_URL": fake_anthropic.url, "ANTHROPIC_API_KEY": TEST_KEY, "AGENT_HOME": str(agent_home),
           "PYTHONPATH": str(ROOT), "API_MAX_RETRIES": "0", "CLAUDE_CONFIG_DIR": str(user_dir(tmp_path))}
    opts = ClaudeAgentOptions(cli_path=str(launcher), cwd=str(workdir), env=env)
    async with ClaudeSDKClient(opts) as client:
        await client.query("/hi Ann")
        got = [m async for m in client.receive_response()]
        await client.query("/bad")
        refused = [m async for m in client.receive_response()]
    init = next(m for m in got if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"hi", "bad"} <= set(init.data["slash_commands"])
    assert isinstance(got[-1], ResultMessage) and got[-1].result == "Hi, Ann."
    assert blocks(fake_anthropic.requests[0])[-1] == "Say hi to Ann.\n"
    assert isinstance(refused[-1], ResultMessage) and refused[-1].is_error
    assert len(fake_anthropic.requests) == 1 and not (workdir / "x").exists()
