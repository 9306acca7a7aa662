"""`/output-style [style]`: list the output styles or switch to one, as Claude Code 2.1.332 does (its words,
recorded from the binary): the choice is saved to the project's `.claude/settings.local.json` and reaches
the next request's system prompt. Works in the REPL and as a `-p` prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.output_styles import DEFAULT, OutputStyle, discover_styles
from services.rule_store import RuleStoreError, set_setting
from services.settings_files import user_files

USAGE = "Usage: /output-style <style>"


def _styles(cwd: Path, home: Path) -> dict[str, OutputStyle]:
    return discover_styles(cwd, user_files(home)[0].parent)


def style_order(styles: dict[str, OutputStyle]) -> list[str]:
    """default, then the built-ins in Claude Code's order, then the files' styles (as discovered)."""
    return [DEFAULT, *(n for n in styles if n != DEFAULT)]


def listing(styles: dict[str, OutputStyle], current: str) -> str:
    """Claude Code 2.1.332's listing (recorded): default has no description here."""
    lines = []
    for name in style_order(styles):
        desc = styles[name].description if name in styles else ""
        mark = " (current)" if name == current else ""
        lines.append(f"- {name}{mark}: {desc}" if desc else f"- {name}{mark}")
    return f"Output style: {current}\n\nAvailable styles:\n" + "\n".join(lines) + f"\n\n{USAGE}"


def switch(cwd: Path, home: Path, builder: Any, arg: str) -> str:
    """The command's one answer; on a switch the style is saved and set on the prompt `builder`."""
    styles = _styles(cwd, home)
    current = builder.style.name if builder.style is not None else DEFAULT
    wanted = arg.strip()
    names = style_order(styles)
    match = next((n for n in names if n.lower() == wanted.lower()), None) if wanted else None
    if match is None:
        if wanted:
            return f'Unknown output style "{wanted}". Available styles: {", ".join(names)}'
        return listing(styles, current)
    if match == current:
        return f"Output style is already {match}"
    try:
        set_setting(cwd / ".claude" / "settings.local.json", "outputStyle", match)
    except RuleStoreError as exc:
        return f"Couldn't save output style: {exc}"
    builder.style = styles.get(match) if match != DEFAULT else None
    return f"Output style set to {match}"


def output_style_args(text: str) -> str | None:
    """The arguments when a prompt is `/output-style [style]`, else None."""
    text = text.strip()
    if text != "/output-style" and not text.startswith("/output-style "):
        return None
    return text[len("/output-style"):].strip()


def output_style_answer(engine: Any, inv: Any, args: str) -> str:
    """`/output-style [style]` as a prompt of `-p` or of an SDK session (Claude Code runs it there too)."""
    from services.config import agent_home

    return switch(inv.app.cwd, agent_home(), engine.prompt_builder, args)
