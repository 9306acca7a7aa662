"""Finding skills on disk and reading their SKILL.md (frontmatter + body)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from services.skills.safe_read import ScopedReader

MAX_SKILL_BYTES = 32 * 1024
SKILL_TRUNCATED_NOTE = "\n\n[skill truncated at 32KB]"
SKILL_FILE = "SKILL.md"
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Skill:
    name: str  # the id: the directory name, also the `/<name>` slash command
    display_name: str
    description: str
    body: str
    path: Path  # the SKILL.md file
    source: str = "project"  # "project" | "user"

    @property
    def directory(self) -> Path:
        return self.path.parent


def cap_bytes(text: str, limit: int, note: str) -> str:
    """`text` cut so that it plus `note` fits in `limit` UTF-8 bytes (never splitting a character)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = max(0, limit - len(note.encode("utf-8")))
    return data[:room].decode("utf-8", errors="ignore") + note


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        if value[0] == '"':
            return inner.replace('\\"', '"').replace("\\\\", "\\")
        return inner.replace("''", "'")
    # A plain scalar may carry a trailing comment.
    return re.sub(r"\s+#.*$", "", value)


def parse_frontmatter(text: str) -> tuple[dict[str, str], str]:
    """(fields, body) from a `---`-delimited YAML header of simple `key: value` lines.

    Handles quoted scalars and `|` / `>` block scalars; lists and nested maps are skipped. Without
    a header the whole text is the body.
    """
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, text
    header = [ln.rstrip("\r\n") for ln in lines[1:end]]
    body = "".join(lines[end + 1 :])
    fields: dict[str, str] = {}
    i = 0
    while i < len(header):
        line = header[i]
        i += 1
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:(.*)$", line)
        if not m:
            continue
        key, raw = m.group(1), m.group(2).strip()
        if raw[:1] in ("|", ">"):
            block: list[str] = []
            while i < len(header) and (not header[i].strip() or header[i][:1] in (" ", "\t")):
                block.append(header[i].strip())
                i += 1
            while block and not block[-1]:
                block.pop()
            fields[key] = "\n".join(block) if raw[0] == "|" else " ".join(b for b in block if b)
        elif raw:
            # A plain scalar may continue on more-indented lines.
            parts = [raw]
            while (
                i < len(header)
                and header[i][:1] in (" ", "\t")
                and header[i].strip()
                and raw[0] not in "'\"[{"
            ):
                parts.append(header[i].strip())
                i += 1
            fields[key] = _unquote(" ".join(parts))
    return fields, body


def skill_roots(cwd: Path, home: Path | None) -> list[tuple[Path, str]]:
    roots = [(cwd / ".agents" / "skills", "project"), (cwd / ".claude" / "skills", "project")]
    if home is not None:
        roots.append((home / "skills", "user"))
    return roots


def load_skill(path: Path, source: str = "project", reader: ScopedReader | None = None) -> Skill | None:
    """The skill in `path`; with a reader, None (and its notice) when the file links out of its scope."""
    if reader is not None:
        text = reader.read(path)
        if text is None:
            return None
    else:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    fields, body = parse_frontmatter(text)
    name = path.parent.name
    body = cap_bytes(body.strip(), MAX_SKILL_BYTES, SKILL_TRUNCATED_NOTE)
    display = fields.get("name", "").strip() or name
    description = " ".join(fields.get("description", "").split())
    return Skill(name, display, description, body, path.resolve(), source)


def discover_skills(cwd: Path, home: Path | None = None, reader: ScopedReader | None = None) -> list[Skill]:
    """Every skill under the project's and the user's skill roots; the first one with an id wins.
    SKILL.md files are read through `reader` (default: scoped to the project and the home)."""
    if reader is None:
        reader = ScopedReader([cwd, *([home] if home is not None else [])])
    found: dict[str, Skill] = {}
    for root, source in skill_roots(cwd, home):
        try:
            entries = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for d in entries:
            if d.name in found or not _ID_RE.match(d.name):
                continue
            skill_file = d / SKILL_FILE
            if not skill_file.is_file():
                continue
            skill = load_skill(skill_file, source, reader)
            if skill is not None:
                found[d.name] = skill
    return list(found.values())
