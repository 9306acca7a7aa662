"""The subcommands are Typer apps behind the argparse root: help, shell completion, and one-line errors,
through the real CLI."""

from __future__ import annotations

from tests.conftest import CliRunner


def test_each_subcommand_has_help_and_bad_usage_is_one_line(cli: CliRunner) -> None:
    for word, shown in (("mcp", "add-json"), ("config", "remove"), ("doctor", "settings files"),
                        ("trust", "--revoke")):
        r = cli(word, "--help", with_fake=False)
        assert r.code == 0 and f"Usage: agent {word}" in r.stdout and shown in r.stdout, (word, r.stderr)
    r = cli("mcp", with_fake=False)  # no command: the help, as bad usage
    assert r.code == 2 and "Usage: agent mcp" in r.stdout
    r = cli("config", "get", with_fake=False)
    assert r.code == 2 and r.stderr.count("\n") == 1 and "Missing argument 'KEY'" in r.stderr
    r = cli("trust", "--list", "--revoke", with_fake=False)
    assert r.code == 2 and r.stderr == "error: --list takes no folder and no --revoke\n"


def test_shell_completion_lists_subcommands_and_their_commands(cli: CliRunner) -> None:
    def complete(words: str) -> list[str]:
        r = cli(with_fake=False, COMP_WORDS=words, COMP_CWORD=str(len(words.split()) - 1),
                _AGENT_COMPLETE="complete_bash")
        assert r.code == 0, r.stderr
        return r.stdout.split()

    assert complete("agent d") == ["doctor"]
    assert complete("agent mcp a") == ["add", "add-json"]
    r = cli("--show-completion", "bash", with_fake=False)
    assert r.code == 0 and "_AGENT_COMPLETE=complete_bash" in r.stdout

