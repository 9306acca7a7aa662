"""`agent config get|set|add|remove|list`: read and write settings as Claude Code's `claude config` does.

Project scope (the default) writes `.agents/settings.local.json` (not committed); `-g`/`--global` writes the
user's `$AGENT_HOME/settings.json`. Values are JSON when they parse (`true`, `3`, `["a"]`), else strings.
Keys may be dotted (`permissions.defaultMode`).
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from services.private_fs import ensure_private_dir


def _path(global_: bool) -> Path:
    from services.config import agent_home

    return agent_home() / "settings.json" if global_ else Path.cwd() / ".agents" / "settings.local.json"


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {path}: cannot be read as JSON ({exc}); fix or remove it first") from None
    if not isinstance(data, dict):
        raise SystemExit(f"error: {path}: not a JSON object; fix or remove it first")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, path)


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _walk(data: dict[str, Any], key: str, create: bool) -> tuple[dict[str, Any], str]:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            if not create:
                raise KeyError(key)
            nxt = node[part] = {}
        node = nxt
    return node, parts[-1]


GlobalOpt = Annotated[bool, typer.Option("-g", "--global", help="the user settings file")]
KeyArg = Annotated[str, typer.Argument(metavar="KEY", help="a settings key, dotted for nested keys")]
ValuesArg = Annotated[list[str], typer.Argument(metavar="VALUE...", help="the values")]

app = typer.Typer(help=__doc__, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False)


@app.command("list", help="Print the settings file.")
def list_command(global_: GlobalOpt = False) -> int:
    sys.stdout.write(json.dumps(_load(_path(global_)), indent=2, ensure_ascii=False) + "\n")
    return 0


@app.command("get", help="Print one setting.")
def get_command(key: KeyArg, global_: GlobalOpt = False) -> int:
    path = _path(global_)
    try:
        node, last = _walk(_load(path), key, create=False)
        value = node[last]
    except KeyError:
        sys.stderr.write(f"error: {key} is not set in {path}\n")
        return 1
    sys.stdout.write((value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)) + "\n")
    return 0


@app.command("set", help="Set one setting (JSON when it parses, else a string).")
def set_command(key: KeyArg, value: Annotated[str, typer.Argument(metavar="VALUE")],
                global_: GlobalOpt = False) -> int:
    path = _path(global_)
    data = _load(path)
    node, last = _walk(data, key, create=True)
    node[last] = _value(value)
    return _saved(path, data, "set", key)


@app.command("add", help="Add values to a list setting.")
def add_command(key: KeyArg, values: ValuesArg, global_: GlobalOpt = False) -> int:
    return _edit_list(key, values, global_, add=True)


@app.command("remove", help="Remove values from a list setting.")
def remove_command(key: KeyArg, values: ValuesArg, global_: GlobalOpt = False) -> int:
    return _edit_list(key, values, global_, add=False)


def _edit_list(key: str, values: list[str], global_: bool, add: bool) -> int:
    path = _path(global_)
    data = _load(path)
    node, last = _walk(data, key, create=True)
    current = node.get(last, [])
    if not isinstance(current, list):
        sys.stderr.write(f"error: {key} is not a list in {path}\n")
        return 1
    node[last] = current + [v for v in values if v not in current] if add else [v for v in current if v not in values]
    return _saved(path, data, "add" if add else "remove", key)


def _saved(path: Path, data: dict[str, Any], action: str, key: str) -> int:
    _save(path, data)
    sys.stdout.write(f"{action}: {key} in {path}\n")
    return 0


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="config")
