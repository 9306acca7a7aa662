"""ContentReplacementState: the recorded decisions that change what the model sees for good.

Stage 1 (spill) and stage 2 (clearing) decide per tool_use id; once a decision is shown to the model
it is re-applied byte for byte on every later call and never reversed, so consecutive requests share
their prefix and the prompt cache keeps hitting. Every new decision is also a transcript record, so
a resumed session rebuilds this state and sends the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DECISION_RECORD = "decision"


@dataclass
class ContentReplacementState:
    # ids that stage 1 has already judged (replaced or frozen whole).
    seen: set[str] = field(default_factory=set)
    # id -> exact replacement text of a spilled result (stage 1).
    replacements: dict[str, str] = field(default_factory=dict)
    # id -> exact placeholder of a cleared result (stage 2).
    cleared: dict[str, str] = field(default_factory=dict)

    def record(self, stage: str, tool_use_id: str, replacement: str | None) -> dict[str, Any]:
        """Apply one decision and return its transcript record."""
        self.apply_record(
            {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}
        )
        return {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}

    def apply_record(self, rec: dict[str, Any]) -> None:
        stage, tid, replacement = rec.get("stage"), rec.get("id"), rec.get("replacement")
        if not isinstance(tid, str):
            return
        if stage == "budget":
            self.seen.add(tid)
            if isinstance(replacement, str):
                self.replacements[tid] = replacement
        elif stage == "micro" and isinstance(replacement, str):
            self.cleared[tid] = replacement

    @classmethod
    def from_records(cls, records: list[dict[str, Any]]) -> ContentReplacementState:
        state = cls()
        for rec in records:
            if rec.get("type") == DECISION_RECORD:
                state.apply_record(rec)
        return state

    def reset(self) -> None:
        self.seen.clear()
        self.replacements.clear()
        self.cleared.clear()
