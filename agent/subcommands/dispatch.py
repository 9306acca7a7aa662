"""`agent <subcommand>`: the words that are commands, not prompts (Claude Code's `claude doctor`, ...).

Each subcommand is a Typer app in its own module, imported only when its word comes first: the root prompt
command (argparse, agent/flags.py) pays nothing for Typer. Shell completion (`agent --install-completion`,
or the shell asking through `_AGENT_COMPLETE`) loads all of them, since it has to list them.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

# word -> module that defines `register(root)`; the order is the order `agent --help` lists them in.
SUBCOMMANDS: dict[str, str] = {
    "mcp": "agent.subcommands.mcp",
    "doctor": "agent.subcommands.doctor",
    "config": "agent.subcommands.config",
    "trust": "agent.subcommands.trust",
}
COMPLETION_FLAGS = ("--install-completion", "--show-completion")
COMPLETE_VAR = "_AGENT_COMPLETE"
_NO_SUCH_COMMAND = re.compile(r"^No such command '(.*)'\.$")


def new_app(help_text: str, **kwargs: object) -> typer.Typer:
    """A Typer app with the settings every subcommand shares: plain help (no markup), one-line errors
    handled by `run_subcommand`, no Typer traceback decoration (our guard owns tracebacks)."""
    import typer

    return typer.Typer(help=help_text, add_completion=False, rich_markup_mode=None,
                       pretty_exceptions_enable=False, **kwargs)  # type: ignore[arg-type]


def _root(names: list[str]) -> typer.Typer:
    import typer

    root = typer.Typer(add_completion=True, rich_markup_mode=None, pretty_exceptions_enable=False,
                       no_args_is_help=True)
    # A callback makes the root a group even with one subcommand loaded, so `agent trust DIR` keeps its word.
    root.callback()(lambda: None)
    for name in names:
        importlib.import_module(SUBCOMMANDS[name]).register(root)
    return root


def run_subcommand(name: str, argv: list[str]) -> int:
    """Run `agent NAME ARGV...`; bad usage is one line on stderr and exit 2."""
    return _invoke(_root([name]), [name, *argv], name)


def run_completion(argv: list[str]) -> int:
    """`agent --install-completion` / `--show-completion`, and the shell's completion requests."""
    return _invoke(_root(list(SUBCOMMANDS)), argv, "")


def _invoke(root: typer.Typer, args: list[str], name: str) -> int:
    import typer

    try:
        result = root(args=args, prog_name="agent", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 130
    except typer.TyperException as exc:
        message = exc.format_message()
        if message.startswith("Usage:"):  # no arguments: the help, on stdout, as bad usage
            sys.stdout.write(message + "\n")
            return exc.exit_code
        unknown = _NO_SUCH_COMMAND.match(message)
        if unknown:
            message = f"unknown {name} command {unknown.group(1)!r}".replace("  ", " ")
        sys.stderr.write(f"error: {message}\n")
        return exc.exit_code
    return result if isinstance(result, int) else 0
