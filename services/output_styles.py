"""Output styles, as Claude Code 2.1.332 has them: the built-ins, `.claude/output-styles/*.md` files, and
the `outputStyle` setting that picks one.

Built-ins (names, descriptions, prompts) were recorded from the real binary
(services/output_styles_builtin.json; tests/fixtures/claude_code/output_styles.json). Files come from
`~/.claude/output-styles/` and then `<project>/.claude/output-styles/`, a later one replacing an earlier one
of the same name (project over user over built-in). A file's front matter: `name` (default: the file name
without `.md`), `description` (default: the body's first line, or "Custom <name> output style") and
`keep-coding-instructions`; its body, trimmed, is the prompt. Files are read through a ScopedReader, so a link
out of the folder it was found in is ignored with a notice. Names are case-sensitive, as in Claude Code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from services.skills.discover import parse_frontmatter
from services.skills.safe_read import ScopedReader

DEFAULT = "default"
_BUILTIN_FILE = Path(__file__).with_name("output_styles_builtin.json")


@dataclass(frozen=True)
class OutputStyle:
    name: str
    description: str
    prompt: str
    source: str  # built-in, user, project
    keep_coding_instructions: bool = False
    path: str = ""


def builtin_styles() -> list[OutputStyle]:
    data = json.loads(_BUILTIN_FILE.read_text(encoding="utf-8"))
    return [OutputStyle(s["name"], s["description"], s["prompt"], "built-in", bool(s["keep_coding_instructions"]))
            for s in data["styles"]]


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "yes", "on", "1")


def _first_line(body: str, fallback: str) -> str:
    """Claude Code's default description: the first non-empty line, a heading's text, 100 characters."""
    for line in body.splitlines():
        text = line.strip()
        if text:
            m = re.match(r"^#+\s+(\S.*)$", text)
            text = m.group(1) if m else text
            return text[:97] + "..." if len(text) > 100 else text
    return fallback


def load_style(path: Path, source: str, reader: ScopedReader) -> OutputStyle | None:
    text = reader.read(path)
    if text is None:
        return None
    fields, body = parse_frontmatter(text)
    base = path.name[:-3] if path.name.endswith(".md") else path.name
    name = fields.get("name", "").strip() or base
    description = " ".join(fields.get("description", "").split()) or _first_line(body, f"Custom {base} output style")
    return OutputStyle(name, description, body.strip(), source, _flag(fields.get("keep-coding-instructions")),
                       str(path))


def style_dirs(cwd: Path, claude_dir: Path | None) -> list[tuple[Path, str]]:
    """Lowest precedence first: the user's folder (`~/.claude/output-styles`), then the project's."""
    dirs = [] if claude_dir is None else [(claude_dir / "output-styles", "user")]
    return dirs + [(cwd / ".claude" / "output-styles", "project")]


def discover_styles(cwd: Path, claude_dir: Path | None, reader: ScopedReader | None = None) -> dict[str, OutputStyle]:
    """name -> style: built-ins, then user files, then project files (a later one wins on a name)."""
    reader = reader or ScopedReader([cwd, *([claude_dir] if claude_dir is not None else [])])
    styles = {s.name: s for s in builtin_styles()}
    for folder, source in style_dirs(cwd, claude_dir):
        try:
            paths = sorted(p for p in folder.iterdir() if p.name.endswith(".md"))
        except OSError:
            continue
        for path in paths:
            style = load_style(path, source, reader)
            if style is not None:
                styles[style.name] = style
    return styles


def resolve_style(name: str | None, styles: dict[str, OutputStyle], where: str = "settings") -> tuple[
        OutputStyle | None, str | None]:
    """(the style, or None for default; a one-line warning for a name no style has)."""
    if not name or name == DEFAULT:
        return None, None
    if name in styles:
        return styles[name], None
    known = ", ".join([DEFAULT, *sorted(styles)])
    return None, f"{where}: field 'outputStyle': no output style named {name!r} (known: {known}); using default"


def style_section(style: OutputStyle) -> str:
    """The system prompt section Claude Code adds for a style (recorded: heading, then the prompt)."""
    return f"# Output Style: {style.name}\n{style.prompt}"


def style_reminder(style: OutputStyle) -> str:
    """Claude Code's line near the end of its context block while a style is active."""
    return f"{style.name} output style is active. Remember to follow the specific guidelines for this style."
