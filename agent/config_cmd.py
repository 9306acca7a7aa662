"""`agent config get|set|add|remove|list`: read and write settings as Claude Code's `claude config` does.

Project scope (the default) writes `.agents/settings.local.json` (not committed); `-g`/`--global` writes the
user's `$AGENT_HOME/settings.json`. Values are JSON when they parse (`true`, `3`, `["a"]`), else strings.
Keys may be dotted (`permissions.defaultMode`).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
    path.parent.mkdir(parents=True, exist_ok=True)
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


@dataclass
class ConfigArgs:
    action: str  # get | set | add | remove | list
    key: str | None
    values: list[str]
    global_: bool  # the user settings file


ACTIONS = ("get", "set", "add", "remove", "list")


def main(ns: ConfigArgs) -> int:
    """`agent config ...`, parsed by the Typer app (agent/subcommands.py)."""
    path = _path(ns.global_)
    data = _load(path)
    if ns.action == "list":
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not ns.key:
        sys.stderr.write(f"error: agent config {ns.action} needs a key\n")
        return 2
    if ns.action == "get":
        try:
            node, last = _walk(data, ns.key, create=False)
            value = node[last]
        except KeyError:
            sys.stderr.write(f"error: {ns.key} is not set in {path}\n")
            return 1
        sys.stdout.write((value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)) + "\n")
        return 0
    if ns.action == "set":
        if len(ns.values) != 1:
            sys.stderr.write("error: agent config set KEY VALUE takes one value\n")
            return 2
        node, last = _walk(data, ns.key, create=True)
        node[last] = _value(ns.values[0])
    else:
        node, last = _walk(data, ns.key, create=True)
        current = node.get(last, [])
        if not isinstance(current, list):
            sys.stderr.write(f"error: {ns.key} is not a list in {path}\n")
            return 1
        if ns.action == "add":
            current += [v for v in ns.values if v not in current]
        else:
            current = [v for v in current if v not in ns.values]
        node[last] = current
    _save(path, data)
    sys.stdout.write(f"{ns.action}: {ns.key} in {path}\n")
    return 0
