"""Stage 1 cost: the tool-result budget on a 2000-message history with 500 tool results (20 MB),
against serialising the same request to JSON (which every model call pays anyway).

Three states are timed: the first call (decisions and spill writes), steady state (every decision
re-applied from the map or frozen, no I/O: the per-call cost in a long session), and the JSON dump.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

from common import best_of, header  # noqa: F401 - common also puts the project root on sys.path

from services.compact.budget import apply_tool_result_budget
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)

N_MESSAGES = 2000
N_RESULTS = 500
TOTAL_CHARS = 20_000_000
LIMITS = {"Bash": 30_000, "Grep": 20_000, "Read": math.inf, "Echo": 50_000}


def build_history() -> list:
    msgs: list = []
    tools = ["Bash", "Grep", "Read", "Echo"]
    per = TOTAL_CHARS // N_RESULTS  # 40 KB each: Bash ones spill, Grep ones spill, Read exempt, Echo kept
    i = 0
    while len(msgs) < N_MESSAGES:
        if i < N_RESULTS and len(msgs) % 4 == 0:
            tid = f"toolu_{i:05d}"
            name = tools[i % 4]
            msgs.append(assistant_message([tool_use_block(tid, name, {"command": f"step {i}"})]))
            msgs.append(user_message([tool_result_block(tid, (f"line {i}\n" * (per // 8))[:per])]))
            i += 1
        else:
            msgs.append(user_message(f"prompt {len(msgs)}") if len(msgs) % 2 == 0 else
                        assistant_message([text_block(f"answer {len(msgs)}")]))
    return msgs[:N_MESSAGES]


def main() -> int:
    header("bench_budget: stage 1 vs json.dumps of the request")
    history = build_history()
    n_results = sum(1 for m in history for b in m["content"] if b.get("type") == "tool_result")
    chars = sum(len(b["content"]) for m in history for b in m["content"] if b.get("type") == "tool_result")
    opts = CompactOptions()
    with tempfile.TemporaryDirectory() as tmp:
        env = PipelineEnv(max_result_chars=LIMITS, spill_dir=Path(tmp) / "tool-results")
        state = ContentReplacementState()
        t0 = time.perf_counter()
        first = apply_tool_result_budget(history, state, opts, env)
        first_s = time.perf_counter() - t0
        steady_s = best_of(lambda: apply_tool_result_budget(history, state, opts, env), repeat=7)
        out = apply_tool_result_budget(history, state, opts, env).messages
        dumps_full_s = best_of(lambda: json.dumps(to_api(history)), repeat=5)
        dumps_out_s = best_of(lambda: json.dumps(to_api(out)), repeat=5)
    spilled = len(state.replacements)
    print(f"history: {len(history)} messages, {n_results} tool results, {chars / 1e6:.1f} M chars; "
          f"{spilled} spilled, {len(state.seen) - spilled} frozen, records {len(first.records)}")
    print("| what | time (ms) |")
    print("|---|---|")
    print(f"| budget, first call (decisions + {spilled} spill writes) | {first_s * 1000:.1f} |")
    print(f"| budget, steady state (re-apply, no I/O) | {steady_s * 1000:.2f} |")
    print(f"| json.dumps of the full history request | {dumps_full_s * 1000:.1f} |")
    print(f"| json.dumps of the outbound request | {dumps_out_s * 1000:.1f} |")
    ratio = steady_s / dumps_full_s
    print(f"ratio budget(steady) / json.dumps(history) = {ratio:.4f}; "
          f"budget(steady) / json.dumps(outbound) = {steady_s / dumps_out_s:.4f}")
    return 0 if ratio < 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
