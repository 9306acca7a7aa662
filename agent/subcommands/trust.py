"""`agent trust [DIR] [--list] [--revoke]`: record, list or revoke folder trust (services/trust.py).

Imported only when `agent trust` runs (agent/subcommands/dispatch.py), so Typer costs the other commands nothing.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

HELP = ("Trust a folder's own configuration. A trusted folder's own settings, hooks, MCP servers and .env "
        "count; an untrusted folder's may only restrict.")


def trust_command(
    directory: Annotated[str | None, typer.Argument(metavar="[DIR]", help="the folder (default: here)")] = None,
    list_: Annotated[bool, typer.Option("--list", help="list the trusted folders")] = False,
    revoke_: Annotated[bool, typer.Option("--revoke", help="revoke the folder's trust")] = False,
) -> int:
    from services.config import agent_home
    from services.trust import revoke, trust, trusted_folders

    if list_ and (revoke_ or directory):
        sys.stderr.write("error: --list takes no folder and no --revoke\n")
        return 2
    home = agent_home()
    if list_:
        for trusted in trusted_folders(home):
            sys.stdout.write(trusted + "\n")
        return 0
    folder = Path(directory or ".").expanduser().resolve()
    if not folder.is_dir():
        sys.stderr.write(f"error: {folder}: not a directory\n")
        return 2
    if revoke_:
        if revoke(folder, home):
            sys.stdout.write(f"Revoked trust for {folder}\n")
            return 0
        sys.stderr.write(f"error: {folder} was not trusted (a parent folder may be: agent trust --list)\n")
        return 1
    sys.stdout.write(f"Trusted {trust(folder, home)}\n")
    return 0


def register(root: typer.Typer) -> None:
    root.command("trust", help=HELP)(trust_command)
