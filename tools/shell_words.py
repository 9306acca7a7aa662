"""The value of a shell word as bash computes it, or UNKNOWN.

Bash turns a word into arguments in steps: line continuations are gone before the word is read, brace
expansion may make several words of one, a leading `~` becomes a home directory, quotes are removed, and
unquoted pattern characters match files. This module does those steps on the pieces tree-sitter-bash
found (`Piece`): literal text (quoted or not) and dynamic parts (a variable, a command or process
substitution, arithmetic) whose value only the running shell knows. A word with a dynamic part, a `~+`,
`~-` or an unknown `~user`, or too many brace alternatives, has no value here (`Word.value is None`):
what the text cannot prove is a question.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass

MAX_BRACE_WORDS = 64  # more alternatives than this: the word is unknown rather than a long list
_DYN = "\x00"  # stands for a dynamic part inside a flattened word (a NUL is never in a real word)


@dataclass(frozen=True)
class Piece:
    text: str
    quoted: bool = False
    dynamic: bool = False


@dataclass(frozen=True)
class Word:
    value: str | None  # None: only the running shell knows it
    glob: bool = False  # unquoted `*`, `?` or `[`: the value is a pattern over file names

    @property
    def known(self) -> bool:
        return self.value is not None and not self.glob


UNKNOWN = Word(None)


def remove_continuations(source: str) -> str:
    """The text with every backslash-newline bash removes taken out (not in single quotes, $'..' or a
    comment, where bash keeps it)."""
    out: list[str] = []
    i, n = 0, len(source)
    state = "normal"
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if state in ("normal", "dq") and c == "\\":
            if nxt != "\n":
                out.append(source[i:i + 2])
            i += 2
            continue
        if state == "ansi" and c == "\\":
            out.append(source[i:i + 2])
            i += 2
            continue
        state = _next_state(state, c, nxt, out[-1][-1:] if out else "")
        if state == "ansi-start":
            out.append("$'")
            state = "ansi"
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _next_state(state: str, c: str, nxt: str, prev: str) -> str:
    if state == "normal":
        if c == "'":
            return "sq"
        if c == '"':
            return "dq"
        if c == "$" and nxt == "'":
            return "ansi-start"
        if c == "#" and (prev == "" or prev in " \t\n;&|()<>"):
            return "comment"
        return state
    if (state == "sq" and c == "'") or (state == "dq" and c == '"') or (state == "ansi" and c == "'"):
        return "normal"
    if state == "comment" and c == "\n":
        return "normal"
    return state


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c(body: str) -> str | None:
    """The value of `$'body'`, or None for escapes not worth guessing (`\\u`, `\\c`)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        hexa = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]) if n == "x" else None
        octal = re.match(r"[0-7]{1,3}", body[i + 1:])
        if n in _ANSI:
            out.append(_ANSI[n])
            i += 2
        elif hexa:
            out.append(chr(int(hexa.group(0), 16)))
            i += 2 + len(hexa.group(0))
        elif octal:
            out.append(chr(int(octal.group(0), 8) & 0xFF))
            i += 1 + len(octal.group(0))
        else:
            return None
    return "".join(out)


def unquoted_pieces(text: str) -> list[Piece]:
    """An unquoted word's text: `\\x` is a quoted x, the rest is open to expansion."""
    pieces: list[Piece] = []
    for m in re.finditer(r"\\(.)|([^\\]+)|\\\Z", text, re.S):
        if m.group(1) is not None:
            pieces.append(Piece(m.group(1), quoted=True))
        elif m.group(2) is not None:
            pieces.append(Piece(m.group(2)))
    return pieces


def double_quoted(text: str) -> str:
    """A double-quoted string's literal content after its escapes (`\\$ \\` \\" \\\\`)."""
    return re.sub(r'\\([$`"\\])', r"\1", text)


# -- expansion ----------------------------------------------------------------------------------------


Chars = list[tuple[str, bool]]  # (character, quoted); a dynamic part is (_DYN, True)


def _flatten(pieces: list[Piece]) -> Chars:
    out: Chars = []
    for p in pieces:
        if p.dynamic:
            out.append((_DYN, True))
        else:
            out.extend((c, p.quoted) for c in p.text)
    return out


def expand(pieces: list[Piece], home: str | None = None) -> list[Word]:
    """The words bash makes of one word: brace expansion, then tilde, quote removal, pattern check."""
    alternatives = _braces(_flatten(pieces), 0)
    if alternatives is None:
        return [UNKNOWN]
    return [_finish(chars, home) for chars in alternatives]


def _finish(chars: Chars, home: str | None) -> Word:
    chars = _tilde(chars, home)
    if any(c == _DYN for c, _ in chars):
        return UNKNOWN
    value = "".join(c for c, _ in chars)
    return Word(value, is_pattern(chars))


def is_pattern(chars: Chars) -> bool:
    """Unquoted `*` or `?`, or an unquoted `[` closed by a later `]` (an unclosed `[` is literal)."""
    for i, (c, q) in enumerate(chars):
        if q:
            continue
        if c in "*?":
            return True
        if c == "[" and any(d == "]" for d, _ in chars[i + 2:]):
            return True
    return False


def _tilde(chars: Chars, home: str | None) -> Chars:
    """`~`, `~/x`, `~user/x`, and the same after `=` or `:` in an assignment-shaped word."""
    text = "".join(c if not q else "\x01" for c, q in chars)
    starts = [0]
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*=", text)
    if m:
        starts = [m.end()] + [i + 1 for i in range(m.end(), len(text)) if text[i] == ":"]
    stops = "/:" if m else "/"
    for start in reversed(starts):
        if start >= len(chars) or chars[start] != ("~", False):
            continue
        end = start + 1
        while end < len(chars) and chars[end][0] not in stops and not chars[end][1]:
            end += 1
        if end < len(chars) and chars[end][1] and chars[end][0] != _DYN:
            continue  # a quoted character in the prefix: bash leaves the tilde alone
        value = _home_of("".join(c for c, _ in chars[start + 1:end]), home)
        replacement: Chars = [(_DYN, True)] if value is None else [(c, True) for c in value]
        chars = chars[:start] + replacement + chars[end:]
    return chars


def _home_of(user: str, home: str | None) -> str | None:
    if user == "":
        return home if home is not None else os.path.expanduser("~")
    if user in ("+", "-") or user.startswith(("+", "-")):
        return None  # $PWD / $OLDPWD: only the running shell knows them
    try:
        return pwd.getpwnam(user).pw_dir
    except (KeyError, ValueError):
        return None


def _braces(chars: Chars, depth: int) -> list[Chars] | None:
    """Bash brace expansion; None when it would make more than MAX_BRACE_WORDS words."""
    if depth > 8:
        return None
    found = _first_brace(chars)
    if found is None:
        return [chars]
    start, end, items = found
    pre, post = chars[:start], chars[end + 1:]
    out: list[Chars] = []
    for item in items:
        expanded = _braces(pre + item + post, depth + 1)
        if expanded is None:
            return None
        out.extend(expanded)
        if len(out) > MAX_BRACE_WORDS:
            return None
    return out


def _first_brace(chars: Chars) -> tuple[int, int, list[Chars]] | None:
    """The first `{...}` bash expands: (start, end, the alternatives)."""
    for start, (c, q) in enumerate(chars):
        if c != "{" or q or (start > 0 and chars[start - 1] == ("$", False)):
            continue
        depth = 0
        commas: list[int] = []
        for j in range(start + 1, len(chars)):
            cj, qj = chars[j]
            if qj:
                continue
            if cj == "{":
                depth += 1
            elif cj == "}" and depth:
                depth -= 1
            elif cj == "}":
                if commas:
                    bounds = [start, *commas, j]
                    return start, j, [chars[a + 1:b] for a, b in zip(bounds, bounds[1:], strict=False)]
                seq = _sequence(chars[start + 1:j])
                if seq is not None:
                    return start, j, seq
                break
            elif cj == "," and depth == 0:
                commas.append(j)
    return None


def _sequence(inner: Chars) -> list[Chars] | None:
    """`{1..5}`, `{01..10..3}`, `{a..e}`: the items, or None when it is not a sequence (or too long)."""
    if any(q for _, q in inner):
        return None
    text = "".join(c for c, _ in inner)
    m = re.fullmatch(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?", text)
    if not m:
        return None
    a, b, step_text = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_text)) if step_text and int(step_text) else 1
    numeric = a.lstrip("-").isdigit() and b.lstrip("-").isdigit()
    if not numeric and (a.isdigit() or b.isdigit()):
        return None
    lo, hi = (int(a), int(b)) if numeric else (ord(a), ord(b))
    count = abs(hi - lo) // step + 1
    if count > MAX_BRACE_WORDS:
        return [[(_DYN, True)]]  # a huge range: one unknown word stands for it
    values = range(lo, hi + (1 if hi >= lo else -1), step if hi >= lo else -step)
    width = max(len(a), len(b)) if numeric and (a.lstrip("-").startswith("0") or b.lstrip("-").startswith("0")) else 0
    items = [str(v).zfill(width) if numeric else chr(v) for v in values]
    return [[(c, True) for c in item] for item in items]
