"""Summarise before dropping, through the real CLI and the fake API: a long session at a 40k-token window
whose every reply carries ~3000 characters of the model's reasoning. No word of it is dropped before a
summary; a summary request is made (Claude Code's prompt, the same system prompt and tools, the user's task
verbatim); the summary persists through resume (-c sends the same bytes); every request is valid and fits;
the summary call's usage is in the session's."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from services.compact.cc_texts import COMPACT_PROMPT_BODY
from services.request_check import check_request
from tests.fake_anthropic import FakeAnthropic, Recorded, Step, text_block, tool_block

WINDOW = 40_000
CALLS = 50
TASK = "TASK-7731: rename parse_header to read_header everywhere in this project, keep the tests green."
SUMMARY = "<analysis>notes</analysis>\n<summary>SUMMARY-MARK-1: the user asked for TASK-7731.</summary>"


def reasoning(i: int) -> str:
    rng = random.Random(i)
    words = " ".join(rng.choice(["parser", "header", "rename", "tests", "module", "call", "site", "check"])
                     for _ in range(480))
    return f"REASON-{i:03d}: {words}"[:3000]


def _texts(req: Recorded) -> list[str]:
    out = []
    for m in req.messages:
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        for b in content:
            if b.get("type") == "text":
                out.append(b["text"])
            elif b.get("type") == "tool_result" and isinstance(b.get("content"), str):
                out.append(b["content"])
    return out


def _is_summary(req: Recorded) -> bool:
    last = req.messages[-1]["content"]
    return isinstance(last, list) and last[-1].get("type") == "text" and last[-1]["text"].startswith(COMPACT_PROMPT_BODY[:40])


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _serve(fake: FakeAnthropic, handed: list[int]):
    def before(rec: Recorded) -> Step | None:
        if rec.path != "/v1/messages":
            return None
        tokens = len(rec.raw) // 4  # what the request costs: its size, as usage reports it
        handed.append(tokens)
        if _is_summary(rec):
            return Step("stream", blocks=[text_block(SUMMARY)], usage={"input_tokens": tokens})
        if fake.steps:
            fake.steps[0].usage = {"input_tokens": tokens}
        return None
    return before


def _cleared_as(messages: list[dict[str, Any]], placeholders: dict[str, str]) -> list[dict[str, Any]]:
    """The messages with the results of `placeholders` (id -> text) as those texts."""
    out = json.loads(json.dumps(messages))
    for m in out:
        if isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result" and b["tool_use_id"] in placeholders:
                    b["content"] = placeholders[b["tool_use_id"]]
    return out


def test_long_session_summarises_before_dropping_and_resumes(cli, fake_anthropic: FakeAnthropic, workdir: Path,
                                                            agent_home: Path):
    for k in range(8):
        (workdir / f"mod{k}.py").write_text(f"def parse_header_{k}(x):\n    return x\n" + "# filler line\n" * 40)
    for i in range(CALLS):
        fake_anthropic.reply(reasoning(i), tool_block("Read", {"file_path": str(workdir / f"mod{i % 8}.py")}))
    fake_anthropic.reply("All done.")
    handed: list[int] = []
    fake_anthropic.before = _serve(fake_anthropic, handed)

    env = {"CONTEXT_WINDOW_TOKENS": str(WINDOW)}
    first = cli("-p", TASK, "--output-format", "json", timeout=240, **env)
    assert first.code == 0, first.stderr[-3000:]
    run1 = list(fake_anthropic.requests)
    summaries = [i for i, r in enumerate(run1) if _is_summary(r)]
    assert summaries, "no summary request was made"
    s = summaries[0]

    # Before the first summary, every request carries every word the model wrote so far.
    for i, req in enumerate(run1[:s]):
        texts = set(_texts(req))
        assert all(reasoning(k) in texts for k in range(i)), f"request {i} dropped the model's words"
    # The summary request: the conversation as sent, the task verbatim, Claude Code's prompt, the same prefix.
    summary_req = run1[s]
    assert TASK in _texts(summary_req)
    assert summary_req.body["system"] == run1[s - 1].body["system"]
    assert _plain(summary_req.body["tools"]) == _plain(run1[s - 1].body["tools"])
    after = run1[s + 1]
    assert TASK in _texts(after) and any("SUMMARY-MARK-1" in t for t in _texts(after))
    # Recently read files come back re-read from disk, marked as Claude Code marks them.
    assert any(t.startswith("<system-reminder>\nCalled the Read tool with the following input:") for t in _texts(after))
    # Nothing was ever dropped by retain, and every request is valid and fits the window.
    for req in run1:
        assert not any("earlier messages omitted" in t for t in _texts(req))
        assert check_request(req.messages, req.body.get("system"), req.body.get("tools")) == []
        assert len(req.raw) // 4 + 0 <= WINDOW
    # The summary call's cost is the session's: every request's usage is in the result.
    result = json.loads(first.stdout)
    assert result["usage"]["input_tokens"] == sum(handed)

    # Resume: the history after the summary is sent byte for byte, then the new prompt. The one change
    # allowed is a decision the resumed call makes anew (and records): results cleared by micro now.
    fake_anthropic.before = None
    fake_anthropic.reply("Resumed.")
    [transcript] = list((agent_home / "projects").glob("*/*.jsonl"))
    lines_before = len(transcript.read_text().splitlines())
    second = cli("-p", "-c", "What is left?", timeout=120, **env)
    assert second.code == 0, second.stderr[-3000:]
    new = [json.loads(x) for x in transcript.read_text().splitlines()[lines_before:]]
    cleared_now = {r["id"]: r["replacement"] for r in new if r.get("type") == "decision" and r.get("stage") == "micro"}
    assert not any(r.get("type") == "decision" and r.get("stage") == "retain" for r in new)
    resumed = fake_anthropic.requests[len(run1)]
    last = run1[-1]
    assert _plain(resumed.messages[: len(last.messages)]) == _plain(_cleared_as(last.messages, cleared_now))
    assert _plain(resumed.body["system"]) == _plain(last.body["system"])
    assert resumed.messages[len(last.messages)]["content"][0]["text"] == "All done."
    fake_anthropic.check()
