"""`/output-style [style]` as Claude Code 2.1.332 has it (its words, recorded from the binary): in a real
terminal it switches the style, saves it to `.claude/settings.local.json` (other keys and layout kept) and
the next request's system prompt carries it; a later `agent -p` uses it; as a `-p` prompt it lists or
switches without a request; an unknown name and a settings file it cannot edit are one line each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic

LOCAL = Path(".claude") / "settings.local.json"


RECORDED = json.loads((Path(__file__).parent / "fixtures/claude_code/output_style_command.json").read_text())


def test_p_lists_switches_and_refuses(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    assert RECORDED["version"] == "2.1.332"
    r = cli("-p", "/output-style")
    assert r.code == 0 and r.stdout == RECORDED["listing"]
    r = cli("-p", "/output-style nosuch")
    assert r.stdout == RECORDED["unknown"]
    r = cli("-p", "/output-style explanatory", "--output-format", "json")
    assert {k: json.loads(r.stdout).get(k) for k in RECORDED["json"]} == RECORDED["json"]
    (Path(cli.cwd) / LOCAL).unlink()
    lines = [json.loads(x) for x in cli("-p", "/output-style explanatory", "--output-format", "stream-json",
                                        "--verbose").stdout.splitlines() if x.startswith("{")]
    stream = RECORDED["stream_json"]
    assert [x["type"] for x in lines] == stream["types"]
    assert lines[1]["message"]["model"] == stream["assistant_model"]
    assert lines[1]["message"]["content"][0]["text"] == stream["assistant_text"]
    assert lines[1]["local_command_run"] == stream["local_command_run"]
    assert lines[-1]["local_command"] == stream["result_local_command"]
    local = Path(cli.cwd) / LOCAL
    local.write_text('{\n    "permissions": {"allow": ["Read"]}\n}\n')
    r = cli("-p", "/output-style learning")
    assert r.stdout.strip() == "Output style set to Learning"
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Read"]}, "outputStyle": "Learning"}
    assert local.read_text().startswith('{\n    "permissions"') and local.stat().st_mode & 0o777 == 0o600
    r = cli("-p", "/output-style Learning", "--output-format", "json")
    assert json.loads(r.stdout)["result"] == "Output style is already Learning"
    # The next run's request carries the style.
    fake_anthropic.text("ok")
    cli("-p", "hi")
    assert "# Output Style: Learning" in json.dumps(fake_anthropic.requests[-1].body["system"])
    local.write_text('{"outputStyle": "Learning", // mine\n}')
    r = cli("-p", "/output-style concise")  # the broken file is ignored (one warning): the style is default
    assert r.stdout.startswith(f"Couldn't save output style: {local} has comments"), r.stdout
    assert "// mine" in local.read_text()
    assert len(fake_anthropic.requests) == 1  # only the one real prompt reached the model


pexpect = pytest.importorskip("pexpect")


def test_repl_switch_reaches_the_next_request(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    from tests.test_repl_pty import PROMPT_READY, finish, spawn

    fake_anthropic.text("Explained.")
    child = spawn(cli)
    child.send("/output-style explanatory\r")
    child.expect_exact("Output style set to Explanatory")
    child.expect_exact(PROMPT_READY)
    child.send("why?\r")
    child.expect_exact("Explained.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert "# Output Style: Explanatory" in json.dumps(fake_anthropic.requests[0].body["system"])
    assert json.loads((Path(cli.cwd) / LOCAL).read_text()) == {"outputStyle": "Explanatory"}


def test_completion_offers_the_style_names(tmp_path: Path) -> None:
    from prompt_toolkit.document import Document

    from agent.repl.completion import ReplCompleter
    from agent.slash.router import default_router

    styles = tmp_path / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "pirate.md").write_text("---\nname: Pirate\n---\nArr.\n")
    completer = ReplCompleter(default_router(), tmp_path)
    got = [c.text for c in completer.get_completions(Document("/output-style ex"), None)]
    assert got == ["Explanatory"]
    got = [c.text for c in completer.get_completions(Document("/output-style "), None)]
    assert {"default", "Explanatory", "Learning", "Pirate"} <= set(got)


def test_sdk_session_answers_it_locally_and_the_next_prompt_has_the_style(cli: CliRunner,
                                                                          fake_anthropic: FakeAnthropic) -> None:
    import subprocess
    import sys

    fake_anthropic.text("Short.")
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}}) + "\n"
                    for p in ("/output-style concise", "hi"))
    out = subprocess.run([sys.executable, "-m", "agent", "-p", "--input-format", "stream-json", "--output-format",
                          "stream-json", "--verbose"], input=lines, capture_output=True, text=True, cwd=cli.cwd,
                         env=cli.env(), timeout=60)
    events = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    results = [e for e in events if e["type"] == "result"]
    assert [r.get("local_command") for r in results] == ["output_style", None]
    assert results[0]["result"] == "Output style set to Concise" and results[1]["result"] == "Short."
    (request,) = fake_anthropic.requests
    assert "# Output Style: Concise" in json.dumps(request.body["system"])
