"""`agent --help`, the README and Claude Code 2.1.332 agree (recorded: tests/fixtures/claude_code/cli_usage.json,
by record_cli_usage.py): every flag the README documents is in --help; every flag the parser accepts is in
--help unless Claude Code hides it too; a mistyped option gets Claude Code's exact lines and exit code,
through the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agent.flags import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RECORDED = json.loads((ROOT / "tests" / "fixtures" / "claude_code" / "cli_usage.json").read_text())
LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
# Ours, shown in our help where Claude Code hides its own: the README documents them.
SHOWN_THOUGH_CLAUDE_CODE_HIDES = {"thinkng_hidden_in_claude_code"}


def agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture(scope="module")
def help_flags() -> set[str]:
    r = agent("--help")
    assert r.returncode == 0, r.stderr
    return set(LONG_FLAG.findall(r.stdout))


def accepted() -> set[str]:
    return {f for f in build_parser()._option_string_actions if f.startswith("--")}


def table_flags() -> set[str]:
    """The flags of the README's flag table (its first column)."""
    rows = [line for line in README.splitlines() if line.startswith("| `-")]
    return {f for row in rows for f in LONG_FLAG.findall(row.split(" | ")[0])}


def test_every_flag_the_readme_lists_is_in_help(help_flags: set[str]) -> None:
    table = {f.replace("[-file]", "") for f in table_flags()}
    assert {"--agents", "--thinking", "--permission-mode"} <= table
    assert table - accepted() == set(), "the README's table lists flags the parser does not take"
    documented = {f for f in LONG_FLAG.findall(README) if f in accepted()}  # prose too: --init, --task-budget...
    assert {"--agents", "--thinking", "--init-only", "--task-budget"} <= documented
    assert (table | documented) - help_flags == set()


def test_help_names_every_permission_mode() -> None:
    out = agent("--help").stdout
    for mode in ("default", "manual", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"):
        assert re.search(rf"\b{mode}\b", out), mode


def test_every_accepted_flag_is_in_help_unless_claude_code_hides_it(help_flags: set[str]) -> None:
    claude_code_shows = set(RECORDED["help_flags"])
    hidden = accepted() - help_flags
    assert hidden & claude_code_shows == set(), "flags Claude Code's help shows and ours hides"
    assert {"--max-thinking-tokens"} <= hidden  # hidden by both (Claude Code's help lacks it)


@pytest.mark.parametrize("case", sorted(set(RECORDED["unknown_option"]) - SHOWN_THOUGH_CLAUDE_CODE_HIDES))
def test_unknown_option_as_claude_code_says_it(case: str) -> None:
    rec = RECORDED["unknown_option"][case]
    r = agent(*rec["args"])
    assert (r.returncode, r.stdout, r.stderr) == (rec["rc"], rec["stdout"], rec["stderr"])


def test_an_option_our_help_shows_is_suggested() -> None:
    r = agent("--thinkng", "disabled", "-p", "hi")
    assert r.returncode == 1
    assert r.stderr == "error: unknown option '--thinkng'\n(Did you mean --thinking?)\n"


def test_other_usage_errors_keep_exit_2() -> None:
    r = agent("--output-format", "xml", "-p", "hi")
    assert r.returncode == 2 and "--output-format" in r.stderr


def test_readme_says_where_the_setup_command_puts_agent() -> None:
    setup = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "python3 -m venv .venv" in setup and ".venv/bin/pip install" in setup
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "agent" in scripts  # pip puts this entry point in .venv/bin/
    after = README.split(setup, 1)[1][:600]
    assert ". .venv/bin/activate" in after and "`.venv/bin/agent`" in after
