"""The output style a running engine uses, by name, for the front ends (status line, SDK init)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.config import agent_home
from services.output_styles import DEFAULT, discover_styles
from services.settings_files import user_files


def style_name(engine: Any) -> str:
    """The name of the engine's output style ("default" when none, or before an engine exists)."""
    style = getattr(getattr(engine, "prompt_builder", None), "style", None)
    return str(style.name) if style is not None else DEFAULT


def style_names(cwd: Path) -> list[str]:
    """Every style offered in `cwd`: default, the built-ins, the user's and the project's files."""
    return [DEFAULT, *sorted(discover_styles(cwd, user_files(agent_home())[0].parent))]
