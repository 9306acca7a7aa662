"""Shared shapes of the outbound pipeline's stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.messages import Message


@dataclass
class StageResult:
    messages: list[Message]
    # New decisions to append to the transcript (stage 1 and stage 2 only).
    records: list[dict[str, Any]] = field(default_factory=list)
    # One-line notices for the front end ("3 results cleared", "12 earlier messages omitted").
    notices: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class PipelineEnv:
    """What the stages need to know about the world: tools' limits and where spill files go."""

    # tool name -> declared max_result_chars (math.inf for self-bounded tools)
    max_result_chars: dict[str, float] = field(default_factory=dict)
    # tool name -> a function shaping the spill preview, when the tool has its own
    previewers: dict[str, Any] = field(default_factory=dict)
    spill_dir: Path | None = None
    # Units of what every request carries beside the messages (system prompt, tool schemas): stage 3's
    # level is the whole request's.
    fixed_units: int = 0
