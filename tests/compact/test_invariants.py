"""Generated long sessions through the real pipeline: the invariants hold on every outbound request.

Each example is a session of random steps, driven the way the loop drives the stages:
a user prompt (sometimes behind injected @resource / hook context), a model turn with a parallel batch
of tool calls whose results are huge, small, empty, whitespace-only or CJK, a final answer, `/compact`,
an autocompact attempt, and a resume (the replacement state rebuilt from the transcript records alone).

Checked on every request (see CONTEXT.md, "Invariants"):
1. the request passes `check_request` (pairing both ways, roles, no empty content);
2. the task (the user's own first message) is sent verbatim, and no user message is omitted while a
   clearable, already-seen tool result still holds its content (micro before retain);
3. no result is cleared before the model has answered with it in view;
4. a resumed session sends byte for byte what the live one sends;
5. the request is within the threshold unless the irreducible part alone (the head and the newest
   round) is over it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from services.compact.autocompact import AutocompactContext, autocompact, compact_conversation
from services.compact.budget import decide_new_results, mark_empty_results
from services.compact.estimate import estimate_outbound_chars, result_chars
from services.compact.micro import MICROCOMPACT_NOTE, is_compactable_tool_name
from services.compact.options import CompactOptions
from services.compact.pipeline import run_outbound_pipeline
from services.compact.retain import head_indices, is_user_own
from services.compact.state import HISTORY_REPLACED_RECORD, ContentReplacementState
from services.compact.types import PipelineEnv
from services.messages import (
    assistant_message,
    text_block,
    to_api,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.model_types import ModelResponse
from services.request_check import check_request
from services.tool_result_storage import is_persisted

CJK = "上下文管道的不变量在每个请求上都成立。"
TOOLS = ("Read", "Bash", "Grep", "Echo", "mcp__srv__get")


def body(kind: str, n: int, seed: int) -> str:
    if kind == "empty":
        return ""
    if kind == "blank":
        return " \n\t " * (n % 4 + 1)
    if kind == "cjk":
        return (CJK * (n // len(CJK) + 1))[:n]
    return (f"line {seed} " + "x" * 60 + "\n") * max(1, n // 68)


result_st = st.tuples(
    st.sampled_from(TOOLS),
    st.sampled_from(["text", "text", "cjk", "empty", "blank"]),
    st.integers(min_value=10, max_value=14_000),
)
step_st = st.one_of(
    st.tuples(st.just("prompt"), st.sampled_from(["", "hook", "resource"]), st.integers(5, 3000)),
    st.tuples(st.just("tools"), st.lists(result_st, min_size=1, max_size=12)),
    st.tuples(st.just("answer"), st.integers(5, 4000)),
    st.tuples(st.just("compact")),
    st.tuples(st.just("autocompact")),
    st.tuples(st.just("resume")),
)


class Summariser:
    """The model as the summary request sees it."""

    def __init__(self):
        self.calls = 0

    async def __call__(self, request):
        self.calls += 1
        yield ModelResponse(assistant_message([text_block(f"summary #{self.calls}")]), "end_turn")


class Session:
    def __init__(self, tmp: Path, opts: CompactOptions):
        self.opts = opts
        self.env = PipelineEnv(
            max_result_chars={"Read": math.inf, "Bash": 30_000, "Grep": 20_000},
            spill_dir=tmp / "tool-results",
        )
        self.history: list = []
        self.state = ContentReplacementState()
        self.records: list[dict] = []
        self.summariser = Summariser()
        self.auto_state: dict = {}
        self.n = 0
        self.requests = 0

    # -- what the loop does ------------------------------------------------------------------
    def ctx(self) -> AutocompactContext:
        return AutocompactContext("sys", "m", self.summariser, self.opts, self.auto_state, keep_recent=4)

    def replace(self, messages: list) -> None:
        self.history = list(messages)
        self.state.history_replaced()
        self.records.append({"type": HISTORY_REPLACED_RECORD})

    def call(self) -> list:
        """One model call: the pipeline's outbound copy, checked."""
        # The reference: a full pass from a cold copy of the state (no reuse of the previous call).
        cold = self.state.preview_copy()
        reference = run_outbound_pipeline(self.history, cold, self.opts, self.env)
        piped = run_outbound_pipeline(self.history, self.state, self.opts, self.env)
        assert json.dumps(to_api(piped.messages)) == json.dumps(to_api(reference.messages)), "incremental != full"
        self.records.extend(piped.records)
        out = piped.messages
        self.requests += 1
        self.check(out, cut_now=any(r.get("stage") == "retain" for r in piped.records))
        return out

    def check(self, out: list, cut_now: bool = False) -> None:
        api = to_api(out)
        assert check_request(api) == [], check_request(api)
        # The task is sent verbatim.
        task = [self.history[i] for i in head_indices(self.history) if is_user_own(self.history[i])]
        if task:
            assert any(m is task[0] for m in out), "the task was not sent"
        # Seen before cleared: the results of the newest round (no answer after them) are never cleared.
        last_answer = max((i for i, m in enumerate(out) if m["role"] == "assistant"), default=-1)
        for m in out[last_answer + 1 :]:
            for b in m["content"]:
                if b["type"] == "tool_result":
                    assert not str(b["content"]).startswith(MICROCOMPACT_NOTE), "cleared unseen"
        # Micro before retain: when this call omitted messages, no clearable result still holds content
        # (clearable: seen, compactable, outside the keep_recent newest, over micro_min_chars). A cut
        # is never undone, so results the model saw only later may stay whole behind an older cut.
        if cut_now:
            uses = {b["id"]: b for m in out if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"}
            seen = [
                b
                for m in out[: last_answer + 1]
                if m["role"] == "user"
                for b in m["content"]
                if b["type"] == "tool_result"
                and b["tool_use_id"] in uses
                and is_compactable_tool_name(uses[b["tool_use_id"]]["name"])
            ]
            for b in seen[: max(0, len(seen) - self.opts.micro_keep_recent)]:
                c = b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
                if result_chars(b["content"]) > self.opts.micro_min_chars:
                    assert c.startswith(MICROCOMPACT_NOTE) or is_persisted(c), "retain dropped the diary before micro cleared"
        # Within retain's level (the request fits the window), unless the irreducible part alone is over it.
        est = estimate_outbound_chars(out)
        limit = self.opts.retain_limit
        if est > limit:
            head = [self.history[i] for i in head_indices(self.history)]
            last_prompt = max((i for i, m in enumerate(self.history) if is_user_own(m)), default=0)
            irreducible = estimate_outbound_chars(head) + estimate_outbound_chars(self.history[last_prompt:])
            assert irreducible > limit // 2, f"request over retain's level: {est} > {limit}"

    def resume_check(self) -> None:
        """A resumed session (state from the records only) sends the same bytes as the live one."""
        live = run_outbound_pipeline(self.history, self.state, self.opts, self.env)
        self.records.extend(live.records)
        resumed_state = ContentReplacementState.from_records(self.records)
        resumed = run_outbound_pipeline(
            json.loads(json.dumps(self.history)), resumed_state, self.opts, self.env
        )
        assert json.dumps(to_api(resumed.messages)) == json.dumps(to_api(live.messages))
        assert resumed.records == []
        self.state = resumed_state

    # -- steps -------------------------------------------------------------------------------
    def prompt(self, inject: str, size: int) -> None:
        if inject == "hook":
            self.history.append(user_message("UserPromptSubmit hook context:\n" + "h" * size, meta={"hook": "UserPromptSubmit"}))
        elif inject == "resource":
            self.history.append(user_message("The following material comes from an MCP resource:\n" + "r" * size,
                                             meta={"mcp_resource": "srv:doc"}))
        self.history.append(user_message(f"task {self.n}: " + "p" * (size // 10)))
        self.n += 1
        self.call()

    def tools(self, results: list) -> None:
        if not self.history or self.history[-1]["role"] == "assistant":
            self.prompt("", 20)
        self.call()
        uses, blocks = [], []
        for name, kind, size in results:
            tid = f"call:{self.n}" if self.n % 2 else f"call_{self.n}"  # ids that sanitise alike
            self.n += 1
            uses.append(tool_use_block(tid, name, {"file_path": f"f{self.n}.py"}))
            blocks.append(tool_result_block(tid, body(kind, size, self.n)))
        assistant = assistant_message([text_block("working"), *uses])
        self.history.append(assistant)
        results_msg = mark_empty_results(assistant, user_message(blocks))
        decided = decide_new_results(assistant, results_msg, self.state, self.opts, self.env)
        self.records.extend(decided.records)
        self.history.append(decided.messages[0])
        self.call()

    def answer(self, size: int) -> None:
        if not self.history or self.history[-1]["role"] == "assistant":
            self.prompt("", 20)
        self.history.append(assistant_message([text_block("a" * size)]))

    def compact(self) -> None:
        if len(self.history) < 3 or self.history[-1]["role"] == "assistant":
            return
        res = asyncio.run(compact_conversation(self.history, self.ctx()))
        self.replace(res.messages)
        self.call()

    def try_autocompact(self) -> None:
        if not self.history or self.history[-1]["role"] == "assistant":
            return
        res = asyncio.run(autocompact(self.history, self.ctx()))
        if res is not None:
            self.replace(res.messages)
            # Never twice in a row without new content.
            before = self.summariser.calls
            assert asyncio.run(autocompact(self.history, self.ctx())) is None
            assert self.summariser.calls == before
            self.call()


# INVARIANT_EXAMPLES=2000 for a longer hunt (the suite runs 150).
@settings(max_examples=int(os.environ.get("INVARIANT_EXAMPLES", "150")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                 HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step_st, min_size=10, max_size=60), threshold=st.sampled_from([12_000, 30_000, 80_000]))
def test_generated_sessions_keep_every_invariant(tmp_path_factory, steps, threshold):
    tmp = tmp_path_factory.mktemp("s")
    opts = CompactOptions(
        threshold=threshold, micro_keep_recent=2, context_window_tokens=threshold // 2,
        max_turn_tool_result_chars=threshold,
    ).derive()
    s = Session(tmp, opts)
    for step in steps:
        kind = step[0]
        if kind == "prompt":
            s.prompt(step[1], step[2])
        elif kind == "tools":
            s.tools(step[1])
        elif kind == "answer":
            s.answer(step[1])
        elif kind == "compact":
            s.compact()
        elif kind == "autocompact":
            s.try_autocompact()
        else:
            s.resume_check()
    s.resume_check()
    # What the session exercised (shown with --hypothesis-show-statistics).
    kinds = {r.get("stage") for r in s.records if r.get("type") == "decision" and r.get("replacement") is not None}
    kinds |= {"retain"} if any(r.get("stage") == "retain" for r in s.records) else set()
    kinds |= {"compaction"} if any(r.get("type") == HISTORY_REPLACED_RECORD for r in s.records) else set()
    for k in sorted(k for k in kinds if k):
        event(k)
