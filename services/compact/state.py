"""ContentReplacementState: the recorded decisions that change what the model sees for good.

Stage 1 (spill) and stage 2 (clearing) decide per tool_use id; once a decision is shown to the model
it is re-applied byte for byte on every later call and never reversed, so consecutive requests share
their prefix and the prompt cache keeps hitting. Every new decision is also a transcript record, so
a resumed session rebuilds this state and sends the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DECISION_RECORD = "decision"
HISTORY_REPLACED_RECORD = "history_replaced"


def message_key(message: Mapping[str, Any]) -> str:
    """A stable identity for a history message: the same on every call and after a resume.

    Messages carry no ids of their own, so the key is a hash of what the API sees of it (bookkeeping
    keys excluded); with the message's position it tells "the history this cut was made on" from a
    replaced one (every compaction starts with the same boundary text, so comparing first messages
    could not)."""
    api = {k: v for k, v in message.items() if k not in ("usage", "meta")}
    raw = json.dumps(api, sort_keys=True, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:24]


@dataclass
class RetainMemo:
    """Stage 3's last cut, kept between calls so it never moves back (monotonic, like micro).

    `keep` are the history indices sent before the omitted marker (the boundary and summary after a
    compaction, and the user's own first message: the task); the messages from `cut` on are sent.
    `anchor` is `message_key(history[cut])`: the memo applies only while that message is still there,
    and any compaction (a new history) voids it explicitly too (`history_replaced`)."""

    cut: int
    keep: tuple[int, ...]
    anchor: str | None = None

    @property
    def head(self) -> int:
        return len(self.keep)


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
    # Stage 2's last pass ended here (units) without reaching its low-water mark: the next pass waits until
    # the request grew by a batch past it (`micro.next_pass_at`). 0: no such pass since the last compaction.
    micro_floor: int = 0
    # The pipeline's previous call, reused by a call whose history only grew (transient, never a record).
    last_call: Any = field(default=None, repr=False, compare=False)

    def record(self, stage: str, tool_use_id: str, replacement: str | None) -> dict[str, Any]:
        """Apply one decision and return its transcript record."""
        self.apply_record(
            {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}
        )
        return {"type": DECISION_RECORD, "stage": stage, "id": tool_use_id, "replacement": replacement}

    def record_micro_floor(self, floor: int) -> dict[str, Any]:
        """Set stage 2's floor and return its transcript record."""
        self.micro_floor = floor
        return {"type": DECISION_RECORD, "stage": "micro_floor", "floor": floor}

    def record_retain(self, memo: RetainMemo) -> dict[str, Any]:
        """Set stage 3's cut and return its transcript record."""
        self.retain_memo = memo
        return {
            "type": DECISION_RECORD,
            "stage": "retain",
            "cut": memo.cut,
            "keep": list(memo.keep),
            "anchor": memo.anchor,
        }

    def history_replaced(self) -> None:
        """A compaction boundary: the history is new, so a cut counted on the old one is void.
        (Per-id decisions stay: tool_use ids are unique, a stale one matches nothing.)"""
        self.retain_memo = None
        self.micro_floor = 0
        self.last_call = None

    def apply_record(self, rec: dict[str, Any]) -> None:
        stage, tid, replacement = rec.get("stage"), rec.get("id"), rec.get("replacement")
        if stage == "micro_floor":
            floor = rec.get("floor")
            self.micro_floor = floor if isinstance(floor, int) and floor >= 0 else 0
            return
        if stage == "retain":
            cut, keep, anchor = rec.get("cut"), rec.get("keep"), rec.get("anchor")
            if keep is None and isinstance(rec.get("head"), int):  # records written before `keep`
                keep = list(range(rec["head"]))
            if (
                isinstance(cut, int)
                and isinstance(keep, list)
                and all(isinstance(k, int) and 0 <= k < cut for k in keep)
                and (anchor is None or isinstance(anchor, str))
            ):
                self.retain_memo = RetainMemo(cut, tuple(keep), anchor)
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
                state.history_replaced()  # a cut counts messages of the history it was made on
        return state

    def preview_copy(self) -> ContentReplacementState:
        """A copy whose new decisions stay in it (a request that is never stored, such as the summary's)."""
        memo = self.retain_memo
        return ContentReplacementState(set(self.seen), dict(self.replacements), dict(self.cleared),
                                       RetainMemo(memo.cut, memo.keep, memo.anchor) if memo else None,
                                       self.micro_floor)

    def reset(self) -> None:
        self.seen.clear()
        self.replacements.clear()
        self.cleared.clear()
        self.retain_memo = None
        self.micro_floor = 0
        self.last_call = None
