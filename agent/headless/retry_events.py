"""Retried model calls in stream-json, as Claude Code 2.1.332 reports them (recorded:
tests/fixtures/claude_code/api_retry.json, by record_api_retry.py):

    {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "retry_delay_ms": 578,
     "error_status": 529, "error": "overloaded", "session_id": ..., "uuid": ...}

`error` is 429 "rate_limit", 529 "overloaded", any other status "server_error", no HTTP answer (refused,
dropped, timed out) `error_status: null` and "unknown". An `error` event inside an HTTP 200 stream is
retried without a record, as Claude Code does. The loop's own re-ask after a tool call cut by max_tokens
gets a record too (error "max_output_tokens", a value of Claude Code's enum), so that a reader of
`--include-partial-messages` knows where the discarded attempt's events end.
"""

from __future__ import annotations

import uuid
from typing import Any

from services.events import RetryEvent

# The loop's re-asks (attempt 0) that get a record, by RetryEvent.reason: the `error` it carries. (A full
# context window is compacted first, and says so in its own notice.)
REASK_ERRORS = {"max_tokens": "max_output_tokens"}


def error_category(status: int | None) -> str:
    if status is None:
        return "unknown"
    return {429: "rate_limit", 529: "overloaded"}.get(status, "server_error")


def api_retry_record(ev: RetryEvent, session_id: str) -> dict[str, Any] | None:
    """The record for one retry, keys in Claude Code's order; None when Claude Code writes none."""
    if ev.max_retries:  # an API retry
        if ev.status == 200:
            return None
        attempt, limit, error = ev.attempt, ev.max_retries, error_category(ev.status)
    elif ev.reason in REASK_ERRORS:
        attempt, limit, error = 1, 1, REASK_ERRORS[ev.reason]
    else:  # a fallback model takes over: no attempt of this model's is retried
        return None
    return {"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": limit,
            "retry_delay_ms": round(ev.delay * 1000), "error_status": None if not ev.max_retries else ev.status,
            "error": error, "session_id": session_id, "uuid": str(uuid.uuid4())}
