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
HISTORY_REPLACED_RECORD = "history_replaced"


@dataclass
class RetainMemo:
    """Stage 3's last cut, kept between calls so it never moves back (monotonic, like micro)."""

    cut: int
    head: int
    # The first history message the cut was made on: a replaced history (a summary) voids the memo.
    # None after a resume until the first call binds it to the loaded history.
    first: object = None


@dataclass
class ContentReplacementState:
    # ids that stage 1 has already judged (replaced or frozen whole).
    seen: set[str] = field(default_factory=set)
    # id -> exact replacement text of a spilled result (stage 1).
    replacements: dict[str, str] = field(default_factory=dict)
    # id -> exact placeholder of a cleared result (stage 2).
    cleared: dict[str, str] = field(default_factory=dict)
    # Stage 3's cut (how many history messages are omitted behind the kept task).
    retain_memo: RetainMemo | None = None

    def record(self, stage: str, tool_use_id: str, replacement: str | None) -> dict[str, Any]:
        """Apply one decision and return its transcript record."""
        self.apply_record(
            {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}
        )
        return {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}

    def record_retain(self, memo: RetainMemo) -> dict[str, Any]:
        """Set stage 3's cut and return its transcript record."""
        self.retain_memo = memo
        return {"type": DECISION_RECORD, "stage": "retain", "cut": memo.cut, "head": memo.head}

    def apply_record(self, rec: dict[str, Any]) -> None:
        stage, tid, replacement = rec.get("stage"), rec.get("id"), rec.get("replacement")
        if stage == "retain":
            cut, head = rec.get("cut"), rec.get("head")
            if isinstance(cut, int) and isinstance(head, int) and 0 <= head <= cut:
                self.retain_memo = RetainMemo(cut, head)
            return
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
            elif rec.get("type") == HISTORY_REPLACED_RECORD:
                state.retain_memo = None  # a cut counts messages of the history it was made on
        return state

    def reset(self) -> None:
        self.seen.clear()
        self.replacements.clear()
        self.cleared.clear()
        self.retain_memo = None
