"""`agent <subcommand>`: the words that are commands, not prompts (Claude Code's `claude doctor`, ...).

The subcommands are one Typer app (help text, shell completion), imported only when `agent/cli.py` sees
a subcommand word: the root prompt command stays on the light argparse parser (`agent/flags.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

# The commands below take their words as they come (`agent mcp add NAME -- CMD ARGS...` is Claude Code's
# grammar, with the server's own flags after `--`): each forwards them to its module's parser.
RAW: dict[str, Any] = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


class _McpGroup(TyperGroup):
    """`agent mcp frobnicate` says "unknown mcp command", as before Typer."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands:
            ctx.fail(f"unknown mcp command {args[0]!r}")
        return super().resolve_command(ctx, args)


app = typer.Typer(name="agent", help="Subcommands of agent (a prompt is the root command: agent --help).",
                  no_args_is_help=True, add_completion=True, rich_markup_mode=None)
mcp_app = typer.Typer(cls=_McpGroup, no_args_is_help=True, rich_markup_mode=None,
                      help="Configure MCP servers: add, add-json, list, get, remove.")
app.add_typer(mcp_app, name="mcp")


def _done(code: int) -> None:
    raise typer.Exit(code)


@app.command(context_settings=RAW)
def doctor(ctx: typer.Context) -> None:
    """Check the installation: Python, the SDK, ripgrep, the key, settings, MCP servers."""
    from agent.doctor import main

    _done(main(list(ctx.args)))


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def config(
    action: Annotated[str, typer.Argument(help="get | set | add | remove | list")],
    key: Annotated[str | None, typer.Argument(help="A dotted key: permissions.defaultMode")] = None,
    values: Annotated[list[str] | None, typer.Argument(help="set: one value; add / remove: list items")] = None,
    global_: Annotated[bool, typer.Option("-g", "--global", help="The user settings file.")] = False,
) -> None:
    """Read and change settings files (the project's local file, or the user's with -g)."""
    from agent.config_cmd import ACTIONS, ConfigArgs, main

    if action not in ACTIONS:
        raise typer.BadParameter(f"{action!r} is not one of {', '.join(ACTIONS)}", param_hint="ACTION")
    _done(main(ConfigArgs(action, key, list(values or []), global_)))


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def trust(
    folder: Annotated[Path | None, typer.Argument(help="The folder (default: the current one).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted folders.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Revoke the folder's trust.")] = False,
) -> None:
    """Trust a folder: its own settings, hooks, MCP servers and .env count (untrusted, they only restrict)."""
    from agent.trust_cli import main

    _done(main([*([str(folder)] if folder is not None else []), *(["--list"] if list_ else []),
                *(["--revoke"] if revoke else [])]))


def _mcp(name: str, help: str) -> None:
    @mcp_app.command(name=name, help=help, context_settings=RAW)
    def command(ctx: typer.Context) -> None:
        from agent.mcp_cli import main

        _done(main([name, *ctx.args]))


for _name, _help in (
    ("add", "add [-s scope] [-t stdio|http] [-e KEY=VAL] [-H 'K: V'] NAME (-- COMMAND [ARGS...] | URL)"),
    ("add-json", "add-json [-s scope] NAME JSON"),
    ("list", "List the configured servers and their scope."),
    ("get", "get NAME: one server's configuration."),
    ("remove", "remove NAME [-s scope]"),
):
    _mcp(_name, _help)


def run_subcommand(name: str, argv: list[str]) -> int:
    """Run `agent <name> <argv...>`; the exit code (2 for a usage error, as every other usage error)."""
    try:
        typer.main.get_command(app).main(args=[name, *argv] if name else argv, prog_name="agent",
                                         complete_var="_AGENT_COMPLETE", standalone_mode=True)
    except SystemExit as exc:  # standalone mode: usage errors are shown and exit 2, as click does
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
