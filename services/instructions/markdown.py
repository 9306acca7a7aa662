"""What Claude Code does to an instruction file's text before it is shown (recorded from 2.1.332).

- YAML front matter is removed; its `paths:` (a list, or one comma-separated string with `{a,b}`
  braces) makes a rule conditional. A pattern ending in `/**` is cut to its folder; only `**` means always.
- Block-level HTML comments (`<!-- ... -->` starting a line) are removed with their line; an inline
  comment inside a paragraph stays, as Claude Code keeps it.
- `@path` imports: `(?:^|\\s)@((?:[^\\s\\\\]|\\\\ )+)`, a `#fragment` dropped, `\\ ` an escaped space; the path
  starts with `./`, `~/`, `/` or `[A-Za-z0-9._-]`; never inside a fenced or indented code block or a code span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IMPORT_RE = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN_RE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
COMMENT_RE = re.compile(r"<!--[\s\S]*?-->")
# File types an import may name (Claude Code's list); anything else with an extension is skipped.
TEXT_EXTENSIONS = frozenset(
    ".md .txt .text .json .yaml .yml .toml .xml .csv .html .htm .css .scss .sass .less .js .ts .tsx .jsx .mjs .cjs "
    ".mts .cts .py .pyi .pyw .rb .erb .rake .go .rs .java .kt .kts .scala .c .cpp .cc .cxx .h .hpp .hxx .cs .swift "
    ".sh .bash .zsh .fish .ps1 .bat .cmd .env .ini .cfg .conf .config .properties .sql .graphql .gql .proto .vue "
    ".svelte .astro .ejs .hbs .pug .jade .php .pl .pm .lua .r .R .dart .ex .exs .erl .hrl .clj .cljs .cljc .edn .hs "
    ".lhs .elm .ml .mli .f .f90 .f95 .for .cmake .make .makefile .gradle .sbt .rst .adoc .asciidoc .org .tex .latex "
    ".lock .log .diff .patch".split()
)


@dataclass(frozen=True)
class Parsed:
    content: str  # front matter and block comments removed
    globs: tuple[str, ...] | None  # a conditional rule's `paths:`, or None
    imports: tuple[str, ...]  # the raw import paths, in order


def _yaml_scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_top_commas(text: str) -> list[str]:
    out, cur, depth = [], "", 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return [p for p in out if p]


def _paths_value(lines: list[str]) -> list[str] | None:
    """The `paths:` value of a front-matter block (inline string, flow list or block list), or None."""
    for i, line in enumerate(lines):
        m = re.match(r"^paths\s*:\s*(.*)$", line)
        if not m:
            continue
        rest = m.group(1).strip()
        if rest.startswith("[") and rest.endswith("]"):
            return [_yaml_scalar(p) for p in _split_top_commas(rest[1:-1])]
        if rest:
            return _split_top_commas(_yaml_scalar(rest))
        items = []
        for item in lines[i + 1:]:
            im = re.match(r"^\s*-\s*(.*)$", item)
            if not im:
                break
            items.extend(_split_top_commas(_yaml_scalar(im.group(1))))
        return items
    return None


def split_front_matter(text: str) -> tuple[str, tuple[str, ...] | None]:
    """(the text without its front matter, the conditional globs or None)."""
    m = re.match(r"^---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", text, re.S | re.M)
    if not m:
        return text, None
    raw = _paths_value(m.group(1).splitlines())
    globs = None
    if raw is not None:
        cut = [g[:-3] if g.endswith("/**") else g for g in expand_braces(raw)]
        cut = [g for g in cut if g]
        globs = None if all(g == "**" for g in cut) else tuple(cut)
    return text[m.end():], globs


def expand_braces(patterns: list[str], limit: int = 1000) -> list[str]:
    """`src/{a,b}/*.ts` -> two patterns, in order (past `limit` results a pattern is kept as is)."""
    out: list[str] = []
    for pattern in patterns:
        done: list[str] = []
        todo = [pattern]
        while todo and len(done) + len(todo) <= limit:
            p = todo.pop(0)
            m = re.match(r"^([^{]*)\{([^}]+)\}(.*)$", p)
            if m:
                todo[:0] = [m.group(1) + alt.strip() + m.group(3) for alt in m.group(2).split(",")]
            else:
                done.append(p)
        out.extend(done if not todo else [pattern])
    return out


def _blocks(text: str) -> list[tuple[str, bool]]:
    """The text's lines, each with whether it is code (fenced or indented block)."""
    out: list[tuple[str, bool]] = []
    fence: str | None = None
    prev_blank = True
    for line in text.splitlines(keepends=True):
        m = FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            out.append((line, True))
        elif fence is not None:
            out.append((line, True))
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            indented = prev_blank and (line.startswith("    ") or line.startswith("\t")) and bool(line.strip())
            out.append((line, indented))
            if indented:
                continue
        prev_blank = not line.strip() and fence is None
    return out


def strip_block_comments(text: str) -> str:
    """Remove HTML comments that start a line outside code; the line goes too when nothing else is left."""
    if "<!--" not in text:
        return text
    lines = _blocks(text)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, code = lines[i]
        if code or not line.lstrip().startswith("<!--"):
            out.append(line)
            i += 1
            continue
        chunk = line
        while "-->" not in chunk and i + 1 < len(lines):
            i += 1
            chunk += lines[i][0]
        rest = COMMENT_RE.sub("", chunk)
        if rest.strip():
            out.append(rest)
        i += 1
    return "".join(out)


def import_paths(text: str) -> tuple[str, ...]:
    """The `@path` imports outside code, in order, without duplicates."""
    found: list[str] = []
    for line, code in _blocks(text):
        if code:
            continue
        for m in IMPORT_RE.finditer(CODE_SPAN_RE.sub(" ", line)):
            path = m.group(1).split("#", 1)[0].replace("\\ ", " ")
            if not path or path in found:
                continue
            if path.startswith(("./", "~/")) or (path.startswith("/") and path != "/") or (
                not path.startswith("@") and not re.match(r"^[#%^&*()]+", path)
                and re.match(r"^[a-zA-Z0-9._-]", path)
            ):
                found.append(path)
    return tuple(found)


def parse(text: str) -> Parsed:
    body, globs = split_front_matter(text)
    content = strip_block_comments(body)
    return Parsed(content, globs, import_paths(content) if "@" in content else ())
