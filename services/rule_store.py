"""Permission rules kept in Claude Code's settings files: add one, remove one, list them all.

"Yes, and don't ask again" stores its rule where Claude Code does (`destination: "localSettings"`,
recorded from the 2.1.332 binary): the project's `.claude/settings.local.json`, `permissions.allow`.
The file is the user's: other keys and the layout stay (services/json_edit.py), the write is atomic
(a private temporary file renamed over the old one) and the file is 0600. A file with comments or
broken JSON is refused with one line; it is never rewritten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.json_edit import (
    JsonEditError,
    Node,
    add_member,
    append_to_array,
    parse_spans,
    remove_from_array,
)
from services.private_fs import write_private

LOCAL_RULES_FILE = Path(".claude") / "settings.local.json"
RULE_LISTS = ("allow", "ask", "deny")


class RuleStoreError(ValueError):
    """The file cannot take the edit (comments, broken JSON, a field of the wrong type); unchanged."""


@dataclass(frozen=True)
class StoredRule:
    behavior: str  # allow / ask / deny
    rule: str
    scope: str  # user / project / local / flags / cliArg / session
    source: str  # the file, or "--settings", "command line", "this session"


def _read(path: Path) -> tuple[str, Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleStoreError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    if not text.strip():
        return "", None
    try:
        json.loads(text)
        root = parse_spans(text)
    except (ValueError, JsonEditError) as exc:
        if "//" in text or "/*" in text:
            raise RuleStoreError(f"{path} has comments, which JSON does not allow; not changed "
                                 "(edit it by hand)") from None
        raise RuleStoreError(f"{path} is not valid JSON ({exc}); not changed") from None
    if root.kind != "object":
        raise RuleStoreError(f"{path}: the top level is not an object; not changed")
    return text, root


def _expect(node: Node | None, kind: str, path: Path, field: str) -> Node | None:
    if node is not None and node.kind != kind:
        raise RuleStoreError(f"{path}: field {field!r} is not {'an object' if kind == 'object' else 'a list'}; "
                             "not changed")
    return node


def _with_rule(text: str, root: Node, path: Path, behavior: str, rule: str) -> str:
    perms = _expect(root.get("permissions"), "object", path, "permissions")
    if perms is None:
        return add_member(text, root, "permissions", {behavior: [rule]})
    rules = _expect(perms.get(behavior), "array", path, f"permissions.{behavior}")
    if rules is None:
        return add_member(text, perms, behavior, [rule])
    return append_to_array(text, rules, rule)


def _rules_in(data: Any, behavior: str) -> list[Any]:
    perms = data.get("permissions") if isinstance(data, dict) else None
    rules = perms.get(behavior) if isinstance(perms, dict) else None
    return rules if isinstance(rules, list) else []


def _write(path: Path, text: str) -> None:
    """The file as the user's choice made it; a trusted folder's digest follows (it is not a change
    made behind the user's back)."""
    from services.config import agent_home
    from services.trust import refresh_file

    write_private(path, text)
    refresh_file(path, agent_home())


def add_rule(path: Path, rule: str, behavior: str = "allow") -> bool:
    """Add `rule` to `permissions.<behavior>` of `path`; False when it was already there."""
    text, root = _read(path)
    if root is None:
        _write(path, json.dumps({"permissions": {behavior: [rule]}}, indent=2) + "\n")
        return True
    before = json.loads(text)
    if rule in _rules_in(before, behavior):
        return False
    new = _with_rule(text, root, path, behavior, rule)
    expected = json.loads(text)
    expected.setdefault("permissions", {}).setdefault(behavior, []).append(rule)
    if _loads_or_none(new) != expected:  # the in-place edit went wrong: keep the content, lose the layout
        new = json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    _write(path, new)
    return True


def remove_rule(path: Path, rule: str, behavior: str) -> bool:
    """Remove every `rule` from `permissions.<behavior>` of `path`; False when it was not there."""
    text, root = _read(path)
    if root is None:
        return False
    removed = False
    while True:
        perms = root.get("permissions")
        rules = perms.get(behavior) if perms is not None and perms.kind == "object" else None
        if rules is None or rules.kind != "array":
            break
        hit = next((i for i, item in enumerate(rules.items)
                    if _loads_or_none(text[item.start:item.end]) == rule), None)
        if hit is None:
            break
        text = remove_from_array(text, rules, hit)
        root = parse_spans(text)
        removed = True
    if removed:
        _write(path, text)
    return removed


def _loads_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def file_rules(files: list[Any]) -> list[StoredRule]:
    """Every rule of every settings file the settings layer read (services.settings.SettingsFile)."""
    out: list[StoredRule] = []
    for f in files:
        for behavior in RULE_LISTS:
            out.extend(StoredRule(behavior, r, f.scope, f.path) for r in _rules_in(f.data, behavior)
                       if isinstance(r, str))
    return out


def set_setting(path: Path, key: str, value: Any) -> None:
    """Set the top-level `key` of the settings file `path` to `value`, in place (other keys and the layout
    kept; created 0600 when missing); RuleStoreError, with the file named, when it cannot be edited."""
    text, root = _read(path)
    if root is None:
        _write(path, json.dumps({key: value}, indent=2) + "\n")
        return
    current = root.get(key)
    if current is not None:
        new = text[:current.start] + json.dumps(value, ensure_ascii=False) + text[current.end:]
    else:
        new = add_member(text, root, key, value)
    expected = {**json.loads(text), key: value}
    if _loads_or_none(new) != expected:  # the in-place edit went wrong: keep the content, lose the layout
        new = json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    _write(path, new)
