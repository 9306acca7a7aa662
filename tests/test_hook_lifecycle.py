"""Every hook event this agent runs, through the real CLI in a trusted project whose .claude/settings.json has a
hook per event writing its JSON input to a file: the input fields and the control output as Claude Code
2.1.332 has them (recorded from the binary against tests/fake_anthropic.py: PostToolUseFailure's `error`,
`is_interrupt`, `duration_ms`; SessionEnd's reason "other" in -p; PreCompact's trigger and custom_instructions;
SessionStart's source "compact" after a compaction; the "<Event>:<Tool> hook additional context: " label).
Worst inputs: a hook printing invalid JSON, a huge output, one hanging past its timeout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from services.trust import trust
from tests.compact.test_summary_e2e import _is_summary
from tests.fake_anthropic import Step, text_block, tool_block

EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop",
          "SessionEnd", "PreCompact", "PostCompact")


def _setup(workdir: Path, cli: Any, out: Path, overrides: dict[str, str] | None = None,
           timeout: int | None = None) -> None:
    """A hook per event: `cat > out/<Event>.<pid>.json`, or the override's command."""
    out.mkdir(exist_ok=True)
    hooks: dict[str, Any] = {}
    for event in EVENTS:
        command = f"cat > {out}/{event}.$$.json"
        if overrides and event in overrides:
            command = f"cat > {out}/{event}.$$.json; {overrides[event]}"
        entry: dict[str, Any] = {"type": "command", "command": command}
        if timeout is not None:
            entry["timeout"] = timeout
        hooks[event] = [{"matcher": "", "hooks": [entry]}]
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}))
    trust(workdir, cli.agent_home)


def _inputs(out: Path, event: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"{event}.*.json"), key=lambda p: p.stat().st_mtime_ns)]


def _texts(request: Any) -> list[str]:
    found = []
    for m in request.messages:
        content = m["content"]
        for b in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if b.get("type") == "text":
                found.append(b["text"])
    return found


def test_one_shot_runs_every_event_with_claude_codes_fields(cli, workdir, fake_anthropic, tmp_path) -> None:
    out = tmp_path / "out"
    ctx = json.dumps({"hookSpecificOutput": {"hookEventName": "X", "additionalContext": "fail-ctx"}})
    _setup(workdir, cli, out, {"PostToolUseFailure": f"echo '{ctx}'",
                               "PostToolUse": "echo '{\"systemMessage\": \"lint is clean\"}'",
                               "UserPromptSubmit": "echo prompt-context-line"})
    fake_anthropic.reply(tool_block("Bash", {"command": "exit 3", "description": "fail"}, id="toolu_f"))
    fake_anthropic.reply(tool_block("Bash", {"command": "echo ok", "description": "ok"}, id="toolu_ok"))
    fake_anthropic.text("Final answer.")
    r = cli("-p", "Do the task.", "--permission-mode", "bypassPermissions")
    assert r.code == 0, r.stderr
    [start] = _inputs(out, "SessionStart")
    assert start["source"] == "startup" and start["hook_event_name"] == "SessionStart"
    [failure] = _inputs(out, "PostToolUseFailure")
    assert failure["tool_name"] == "Bash" and failure["tool_use_id"] == "toolu_f"
    assert failure["tool_input"] == {"command": "exit 3", "description": "fail"}
    assert failure["error"].startswith("Exit code 3") and failure["is_interrupt"] is False
    assert isinstance(failure["duration_ms"], int)
    [post] = _inputs(out, "PostToolUse")  # only the call that succeeded
    assert post["tool_use_id"] == "toolu_ok" and "ok" in str(post["tool_response"])
    assert len(_inputs(out, "PreToolUse")) == 2
    [end] = _inputs(out, "SessionEnd")
    assert end["reason"] == "other" and end["session_id"] == start["session_id"]
    assert _inputs(out, "Stop")[0]["last_assistant_message"] == "Final answer."
    assert "[PostToolUse hook] lint is clean" in r.stderr  # systemMessage: shown to the user
    first, second, third = fake_anthropic.requests
    assert any("prompt-context-line" in t for t in _texts(first))
    assert "PostToolUseFailure:Bash hook additional context: fail-ctx" in _texts(second)
    assert "PostToolUseFailure:Bash hook additional context: fail-ctx" in _texts(third)


def test_user_prompt_submit_block_refuses_the_prompt(cli, workdir, fake_anthropic, tmp_path) -> None:
    out = tmp_path / "out"
    _setup(workdir, cli, out, {"UserPromptSubmit": "echo '{\"decision\": \"block\", \"reason\": \"no secrets\"}'"})
    r = cli("-p", "print the API key", "--output-format", "json")
    assert fake_anthropic.requests == []  # the prompt never reached the model
    assert "no secrets" in r.stdout + r.stderr
    assert _inputs(out, "UserPromptSubmit")[0]["prompt"] == "print the API key"
    assert _inputs(out, "SessionEnd")[0]["reason"] == "other"


@pytest.mark.parametrize("bad", [
    "echo '{not json'",  # invalid JSON: plain output, never a crash
    f"{sys.executable} -c \"print('y' * 2_000_000)\"",  # huge output: clipped
    "sleep 30",  # hangs past its 1 s timeout: killed, the run goes on
])
def test_worst_hook_outputs_never_break_a_run(cli, workdir, fake_anthropic, tmp_path, bad: str) -> None:
    out = tmp_path / "out"
    _setup(workdir, cli, out, {e: bad for e in ("PostToolUse", "PostToolUseFailure", "SessionStart",
                                               "UserPromptSubmit", "SessionEnd", "Stop")}, timeout=1)
    fake_anthropic.reply(tool_block("Bash", {"command": "echo hi", "description": "hi"}))
    fake_anthropic.text("Done.")
    r = cli("-p", "go", "--permission-mode", "bypassPermissions")
    assert r.code == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert [len(_inputs(out, e)) for e in ("SessionStart", "PostToolUse", "SessionEnd")] == [1, 1, 1]
    sent = sum(len(t) for req in fake_anthropic.requests for t in _texts(req))
    assert sent < 200_000  # a 2 MB hook output is clipped before it reaches the model
    if bad == "sleep 30":
        assert "timed out after 1000 ms" in r.stderr


pexpect = pytest.importorskip("pexpect")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_repl_compact_clear_and_exit(cli, workdir, fake_anthropic, tmp_path) -> None:
    from tests.test_repl_pty import finish, spawn, wait_screen

    out = tmp_path / "out"
    ctx = json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "ss-ctx"}})
    _setup(workdir, cli, out, {"SessionStart": f"echo '{ctx}'"})
    fake_anthropic.text("First reply.")
    fake_anthropic.text("Summary text.")
    fake_anthropic.text("After compaction.")
    child = spawn(cli)
    child.send("hello\r")
    wait_screen(child, "First reply.")
    child.send("/compact keep names\r")
    wait_screen(child, "ompact")
    child.send("again\r")
    wait_screen(child, "After compaction.")
    child.send("/clear\r")
    wait_screen(child, "Started a new conversation")
    child.send("\x04")
    assert finish(child) == 0
    [pre] = _inputs(out, "PreCompact")
    assert pre["trigger"] == "manual" and pre["custom_instructions"] == "keep names"
    [post] = _inputs(out, "PostCompact")
    assert post["trigger"] == "manual" and post["compact_summary"] == "Summary text."
    assert [s["source"] for s in _inputs(out, "SessionStart")] == ["startup", "compact"]
    ends = _inputs(out, "SessionEnd")
    assert [e["reason"] for e in ends] == ["clear", "prompt_input_exit"]
    assert ends[0]["session_id"] != ends[1]["session_id"]
    third = fake_anthropic.requests[2]
    assert sum("SessionStart hook additional context: ss-ctx" in t for t in _texts(third)) >= 1


def test_autocompact_runs_pre_and_post_compact_with_trigger_auto(cli, workdir, fake_anthropic, tmp_path) -> None:
    out = tmp_path / "out"
    ctx = json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "after-compact"}})
    _setup(workdir, cli, out, {"SessionStart": f"echo '{ctx}'"})
    for k in range(3):
        (workdir / f"big{k}.txt").write_text(f"part {k} " + "lorem ipsum dolor sit amet\n" * 700)
    for k in range(3):
        fake_anthropic.reply(f"Reading part {k}.", tool_block("Read", {"file_path": str(workdir / f"big{k}.txt")}))
    fake_anthropic.text("Read them all.")

    def serve(rec: Any) -> Step | None:  # usage as big as the request; summary requests get the summary
        tokens = len(rec.raw) // 4
        if _is_summary(rec):
            return Step("stream", blocks=[text_block("SUMMARY-MARK of the work so far.")],
                        usage={"input_tokens": tokens})
        if fake_anthropic.steps:
            fake_anthropic.steps[0].usage = {"input_tokens": tokens}
        return None

    fake_anthropic.before = serve
    r = cli("-p", "read the parts", "--permission-mode", "bypassPermissions", CONTEXT_WINDOW_TOKENS="12000", AUTOCOMPACT_PERCENT="40")
    assert r.code == 0, r.stderr[-2000:]
    pre = _inputs(out, "PreCompact")
    assert pre and pre[0]["trigger"] == "auto" and pre[0]["custom_instructions"] is None
    post = _inputs(out, "PostCompact")
    assert post and post[0]["trigger"] == "auto"
    assert post[0]["compact_summary"] == "SUMMARY-MARK of the work so far."  # the summary, as Claude Code sends it
    assert [x["source"] for x in _inputs(out, "SessionStart")] == ["startup"] + ["compact"] * len(pre), (len(pre), len(post))
    after = [r for r in fake_anthropic.requests if not _is_summary(r)][-1]
    texts = _texts(after)
    assert "SessionStart hook additional context: after-compact" in texts
    assert texts.index("SessionStart hook additional context: after-compact") > \
        next(i for i, t in enumerate(texts) if "SUMMARY-MARK" in t)
