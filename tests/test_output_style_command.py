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


def test_p_lists_switches_and_refuses(cli: CliRunner, fake_anthropic: FakeAnthropic) -> None:
    r = cli("-p", "/output-style")
    assert r.code == 0 and r.stdout.startswith("Output style: default\nAvailable styles:\n- default (current): ")
    assert "- Explanatory: " in r.stdout and r.stdout.rstrip().endswith("Usage: /output-style <style>")
    r = cli("-p", "/output-style nosuch")
    assert r.stdout.startswith('Unknown output style "nosuch". Available styles: default, ')
    local = Path(cli.cwd) / LOCAL
    local.parent.mkdir()
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
