"""Edit a JSON file's text in place: add to or remove from one array, keeping the user's formatting.

A settings file is the user's: rewriting it with `json.dumps` would reflow their layout. The parser
here records where every value sits, so an edit touches only the characters it must; the result is
checked by parsing it again, and anything that does not round-trip falls back to a plain rewrite
(content kept, layout lost). Comments are not JSON: a file with them is refused, never rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


class JsonEditError(ValueError):
    pass


@dataclass
class Node:
    start: int
    end: int
    kind: str  # "object", "array", "scalar"
    members: list[tuple[str, int, Node]] = field(default_factory=list)  # objects: (key, key start, value)
    items: list[Node] = field(default_factory=list)  # arrays

    def get(self, key: str) -> Node | None:
        found = [v for k, _, v in self.members if k == key]
        return found[-1] if found else None  # JSON's last duplicate wins, as json.loads does


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def _parse(text: str, i: int) -> Node:
    i = _ws(text, i)
    if i >= len(text):
        raise JsonEditError("unexpected end of file")
    ch = text[i]
    if ch == "{":
        return _parse_object(text, i)
    if ch == "[":
        return _parse_array(text, i)
    if ch == '"':
        _, end = scanstring(text, i + 1)
        return Node(i, end, "scalar")
    m = _SCALAR.match(text, i)
    if not m:
        raise JsonEditError(f"unexpected {ch!r} at offset {i}")
    return Node(i, m.end(), "scalar")


def _parse_object(text: str, start: int) -> Node:
    node = Node(start, start, "object")
    i = _ws(text, start + 1)
    if text.startswith("}", i):
        node.end = i + 1
        return node
    while True:
        if not text.startswith('"', i):
            raise JsonEditError(f"expected a key at offset {i}")
        key, after = scanstring(text, i + 1)
        colon = _ws(text, after)
        if not text.startswith(":", colon):
            raise JsonEditError(f"expected ':' at offset {colon}")
        value = _parse(text, colon + 1)
        node.members.append((key, i, value))
        i = _ws(text, value.end)
        if text.startswith("}", i):
            node.end = i + 1
            return node
        if not text.startswith(",", i):
            raise JsonEditError(f"expected ',' or '}}' at offset {i}")
        i = _ws(text, i + 1)


def _parse_array(text: str, start: int) -> Node:
    node = Node(start, start, "array")
    i = _ws(text, start + 1)
    if text.startswith("]", i):
        node.end = i + 1
        return node
    while True:
        item = _parse(text, i)
        node.items.append(item)
        i = _ws(text, item.end)
        if text.startswith("]", i):
            node.end = i + 1
            return node
        if not text.startswith(",", i):
            raise JsonEditError(f"expected ',' or ']' at offset {i}")
        i = i + 1


def parse_spans(text: str) -> Node:
    root = _parse(text, 0)
    if _ws(text, root.end) != len(text):
        raise JsonEditError("text after the top-level value")
    return root


def _indent_before(text: str, pos: int) -> str | None:
    """The indentation of the line `pos` starts on, or None when `pos` is not first on its line."""
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return prefix if prefix.strip() == "" and line_start > 0 else None


def _render(value: Any, indent: str, unit: str) -> str:
    """`value` as JSON; multi-line (indented by `unit`, continued at `indent`) when `unit` is set."""
    if not unit:
        return json.dumps(value, ensure_ascii=False)
    lines = json.dumps(value, ensure_ascii=False, indent=len(unit.expandtabs(4))).split("\n")
    if "\t" in unit:
        lines = [re.sub(r"^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), ln) for ln in lines]
    return "\n".join([lines[0], *(indent + ln for ln in lines[1:])])


def _container_layout(text: str, node: Node, first: int | None) -> tuple[str, str]:
    """(separator before a new entry, indent of entries) following the container's own style."""
    if first is None:
        return ", ", ""
    indent = _indent_before(text, first)
    if indent is None:
        return ", ", ""
    return ",\n" + indent, indent


def _unit(text: str, node: Node, indent: str) -> str:
    """One level of indentation: the entries' indent minus their container's."""
    outer = _indent_before(text, node.start)
    if outer is None:
        line_start = text.rfind("\n", 0, node.start) + 1
        outer = re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]
    return indent[len(outer):] if indent.startswith(outer) and len(indent) > len(outer) else "  "


def append_to_array(text: str, node: Node, value: Any) -> str:
    if not node.items:
        return text[: node.start] + "[" + json.dumps(value, ensure_ascii=False) + "]" + text[node.end:]
    sep, _ = _container_layout(text, node, node.items[0].start)
    last = node.items[-1]
    return text[: last.end] + sep + json.dumps(value, ensure_ascii=False) + text[last.end:]


def add_member(text: str, node: Node, key: str, value: Any) -> str:
    """`"key": value` as the object's last member, laid out like its other members."""
    if not node.members:
        outer = _indent_before(text, node.start) or ""
        if node.start == 0 or "\n" in text[node.start:node.end]:
            inner = outer + "  "
            body = f'{json.dumps(key)}: {_render(value, inner, "  ")}'
            return text[: node.start] + "{\n" + inner + body + "\n" + outer + "}" + text[node.end:]
        return text[: node.start] + "{" + f"{json.dumps(key)}: {json.dumps(value)}" + "}" + text[node.end:]
    sep, indent = _container_layout(text, node, node.members[0][1])
    unit = _unit(text, node, indent) if indent else ""
    last = node.members[-1][2]
    entry = f"{json.dumps(key, ensure_ascii=False)}: {_render(value, indent, unit)}"
    return text[: last.end] + sep + entry + text[last.end:]


def remove_from_array(text: str, node: Node, index: int) -> str:
    items = node.items
    if len(items) == 1:
        return text[: node.start] + "[]" + text[node.end:]
    if index == len(items) - 1:
        return text[: items[index - 1].end] + text[items[index].end:]
    return text[: items[index].start] + text[items[index + 1].start:]
