"""Claude Code's MessageDisplay hook: display-only rewriting of the assistant's text.

In `-p` (recorded from 2.1.332 in message_display.json) the hook sees each finished message once and what
it answers is what text, json and stream-json print; the transcript keeps the model's words. In the REPL
it sees the reply as it streams, by whole lines, through a real terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.message_display import MessageDisplay
from services.events import AssistantEvent, RetryEvent, TextDeltaEvent
from services.hooks import Hooks
from services.messages import assistant_message, text_block
from services.trust import trust
from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic

FIXTURE = json.loads((Path(__file__).parent / "fixtures/claude_code/message_display.json").read_text())
# Claude Code's telemetry id, which this agent does not send (as for every other event).
ABSENT = {"prompt_id"}


def hook_project(cli: CliRunner, answer: str) -> Path:
    """A trusted project whose MessageDisplay hook logs its input and prints `answer`."""
    proj = Path(cli.cwd)
    (proj / ".claude").mkdir(exist_ok=True)
    log = proj / "display.jsonl"
    command = f"cat >> {log}; echo >> {log}; {answer}"
    (proj / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"MessageDisplay": [{"hooks": [{"type": "command", "command": command}]}]}}))
    trust(proj, cli.agent_home)
    return log


def printed(fmt: str, stdout: str) -> str:
    if fmt == "text":
        return stdout
    lines = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
    if fmt == "json":
        return str(lines[-1]["result"])
    return "".join(b.get("text", "") for x in lines if x.get("type") == "assistant"
                   for b in x["message"]["content"] if b.get("type") == "text")


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_print_mode_shows_the_hooks_text_as_claude_code_does(cli: CliRunner, fake_anthropic: FakeAnthropic,
                                                             fmt: str) -> None:
    recorded = FIXTURE["formats"][fmt]
    log = hook_project(cli, f"echo '{json.dumps(FIXTURE['answer'])}'")
    fake_anthropic.text(FIXTURE["reply"])
    r = cli("-p", "hi", "--output-format", fmt, *(["--verbose"] if fmt == "stream-json" else []))
    assert r.code == 0, r.stderr
    assert printed(fmt, r.stdout) == recorded["printed"]
    inputs = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert [{k: i[k] for k in ("index", "final", "delta")} for i in inputs] == [
        {k: i[k] for k in ("index", "final", "delta")} for i in recorded["inputs"]]
    assert set(inputs[0]) == set(recorded["inputs"][0]["fields"]) - ABSENT
    # Display-only: the model's words are what the session keeps and sends on.
    fake_anthropic.text("Again.")
    assert cli("-c", "-p", "more").code == 0
    sent = json.dumps(fake_anthropic.requests[-1].messages)
    assert "Line one.\\nLine two." in sent and "REWRITTEN" not in sent


def test_a_failing_or_silent_hook_shows_the_original(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    hook_project(cli, "echo broken >&2; exit 1")
    fake_anthropic.text("Kept as is.")
    r = cli("-p", "hi")
    assert r.code == 0 and r.stdout.strip() == "Kept as is."
    hook_project(cli, "echo 'not json'")
    fake_anthropic.text("Still as is.")
    assert cli("-p", "hi").stdout.strip() == "Still as is."


class Recorder(Hooks):
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def wants(self, event: str) -> bool:
        return event == "MessageDisplay"

    async def message_display(self, fields: dict[str, Any]) -> str | None:
        self.calls.append(fields)
        return f"<{fields['index']}:{fields['delta'].upper()}>"


async def collect(hooks: Hooks, events: list[Any]) -> list[Any]:
    async def source():
        for ev in events:
            yield ev
    return [ev async for ev in MessageDisplay(hooks).stream(source())]


async def test_streamed_text_goes_to_the_hook_by_whole_lines() -> None:
    hooks = Recorder()
    done = AssistantEvent(assistant_message([text_block("one\ntwo\nthree")]))
    out = await collect(hooks, [TextDeltaEvent("on"), TextDeltaEvent("e\ntw"), TextDeltaEvent("o\nthr"),
                                TextDeltaEvent("ee"), done, TextDeltaEvent("next\n"), done])
    assert [(c["index"], c["final"], c["delta"]) for c in hooks.calls] == [
        (0, False, "one\n"), (1, False, "two\n"), (2, True, "three"), (0, False, "next\n"), (1, True, "")]
    assert len({c["message_id"] for c in hooks.calls}) == 2 and len({c["turn_id"] for c in hooks.calls}) == 1
    shown = [ev.text for ev in out if isinstance(ev, TextDeltaEvent)]
    assert shown == ["<0:ONE\n>", "<1:TWO\n>", "<2:THREE>", "<0:NEXT\n>", "<1:>"]
    assert out[3] is done  # the stored message itself passes unchanged


async def test_a_retried_attempt_is_not_shown_and_no_hook_means_no_change() -> None:
    hooks = Recorder()
    out = await collect(hooks, [TextDeltaEvent("half a li"), RetryEvent(1, 0.0, "overloaded"),
                                TextDeltaEvent("whole\n"), AssistantEvent(assistant_message([text_block("whole")]))])
    assert [c["delta"] for c in hooks.calls] == ["whole\n", ""]
    assert isinstance(out[0], RetryEvent)
    plain = [TextDeltaEvent("a\nb"), AssistantEvent(assistant_message([text_block("a\nb")]))]
    assert await collect(Hooks(), plain) == plain


pexpect = pytest.importorskip("pexpect")
from tests.test_repl_pty import finish, run_line, spawn  # noqa: E402

REWRITE = """import json, sys
d = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(d) + "\\n")
shown = "SHOWN%d %s" % (d["index"], d["delta"].upper())
print(json.dumps({"hookSpecificOutput": {"hookEventName": "MessageDisplay", "displayContent": shown}}))
"""


def test_the_repl_shows_the_rewritten_lines(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    proj = Path(cli.cwd)
    (proj / "display_hook.py").write_text(REWRITE)
    log = proj / "display.jsonl"
    hook_project(cli, "true")
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"MessageDisplay": [{"hooks": [
        {"type": "command", "command": f"{sys.executable} {proj / 'display_hook.py'} {log}"}]}]}}))
    trust(proj, cli.agent_home)  # as it is now: trust covers the configuration the user saw
    fake_anthropic.text("first line here\nsecond line here", fragment=4)
    child = spawn(cli)
    run_line(child, "hi", "SECOND LINE HERE")
    screen = child.screen.text()
    child.send("\x04")
    assert finish(child) == 0
    assert "FIRST LINE HERE" in screen and "first line here" not in screen
    calls = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert calls[-1]["final"] is True and "".join(c["delta"] for c in calls) == "first line here\nsecond line here"
    # The transcript keeps the model's words.
    (transcript,) = (cli.agent_home / "projects").rglob("*.jsonl")
    assert "second line here" in transcript.read_text() and "SECOND" not in transcript.read_text()
