"""Stage 1, the tool-result budget: thresholds, per-message budget, spill files, persistent decisions."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pytest

from agent.loop.deps import QueryDeps
from agent.loop.engine import EngineConfig, QueryEngine
from agent.model.scripted import ScriptedModel, reply, tool_call
from services.compact.budget import MIN_AGGREGATE_SPILL_CHARS, apply_tool_result_budget, result_threshold
from services.compact.options import CompactOptions
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.messages import (
    assistant_message,
    image_block,
    text_block,
    to_api,
    tool_result_block,
    tool_results,
    tool_use_block,
    user_message,
)
from services.session import load_transcript
from services.spill_cleanup import cleanup_spill_dirs
from services.tokens import text_units
from services.tool_result_storage import (
    PERSISTED_OUTPUT_TAG,
    build_replacement,
    format_size,
    make_preview,
    spill_path,
    write_spill,
)
from tools.base import Tool, ToolContext, ToolOutput

LIMITS = {"Bash": 30_000, "Grep": 20_000, "Read": math.inf, "Echo": 50_000, "Big": 100_000}


def env(tmp_path: Path, **kw) -> PipelineEnv:
    return PipelineEnv(max_result_chars=dict(LIMITS), previewers=kw.get("previewers", {}),
                       spill_dir=tmp_path / "sess" / "tool-results")


def batch(*results: tuple[str, str, object], prefix: str = "t") -> list:
    """A user prompt, one assistant message with the tool_uses, one user message with all results."""
    uses, res = [], []
    for i, (name, tid, content) in enumerate(results):
        tid = tid or f"{prefix}{i}"
        uses.append(tool_use_block(tid, name, {"file_path": "x"}))
        res.append(tool_result_block(tid, content))  # type: ignore[arg-type]
    return [user_message("go"), assistant_message(uses), user_message(res)]


def contents(msgs: list) -> dict[str, object]:
    return {b["tool_use_id"]: b["content"] for m in msgs if m["role"] == "user" for b in m["content"]
            if b["type"] == "tool_result"}


def spilled(msgs: list) -> set[str]:
    return {k for k, v in contents(msgs).items() if isinstance(v, str) and v.startswith(PERSISTED_OUTPUT_TAG)}


def run(msgs, state=None, tmp_path=None, o=None, e=None):
    state = state if state is not None else ContentReplacementState()
    return apply_tool_result_budget(msgs, state, o or CompactOptions(), e or env(tmp_path)), state


# -- thresholds --------------------------------------------------------------------------------
def test_threshold_per_tool():
    o, e = CompactOptions(), PipelineEnv(max_result_chars=dict(LIMITS))
    assert result_threshold("Bash", o, e) == 30_000
    assert result_threshold("Grep", o, e) == 20_000
    assert result_threshold("Big", o, e) == 50_000  # clamped to the global cap
    assert result_threshold("mcp__x__y", o, e) == 50_000  # unknown -> the global cap
    assert result_threshold("Read", o, e) == math.inf
    assert result_threshold("Bash", CompactOptions(max_tool_result_chars=1000), e) == 1000


def test_per_result_spill_by_tool_threshold(tmp_path):
    msgs = batch(("Bash", "b", "x" * 30_001), ("Grep", "g", "y" * 20_000), ("Grep", "g2", "y" * 20_001),
                 ("mcp__x__y", "m", "z" * 50_001), ("Echo", "e", "w" * 49_000))
    res, state = run(msgs, tmp_path=tmp_path)
    assert spilled(res.messages) == {"b", "g2", "m"}
    assert state.seen == {"b", "g", "g2", "m", "e"}
    assert set(state.replacements) == {"b", "g2", "m"}
    # One record per new decision, frozen ones carry None.
    assert {(r["id"], r["replacement"] is None) for r in res.records} == {
        ("b", False), ("g2", False), ("m", False), ("g", True), ("e", True)}
    assert [k for k, _ in res.notices] == ["spill"] * 3
    assert any(t.startswith("Output of Bash (29.3KB) saved to ") for _, t in res.notices)


def test_read_never_spilled_for_its_own_size(tmp_path):
    msgs = batch(("Read", "r1", "a" * 150_000))  # over the 50k cap, under the per-message budget
    res, state = run(msgs, tmp_path=tmp_path)
    assert res.messages[-1]["content"][0]["content"] == "a" * 150_000 and not spilled(res.messages)


def test_fresh_batch_of_reads_over_the_message_budget_is_spilled(tmp_path):
    # Six 60k Reads in one parallel batch: the model has not seen them, so micro may not clear them;
    # the per-message budget spills the largest until the rest fits.
    msgs = batch(*(("Read", f"r{i}", str(i) * (60_000 + i)) for i in range(6)))
    res, _ = run(msgs, tmp_path=tmp_path)
    sent = sum(len(v) for v in contents(res.messages).values())
    assert sent <= 200_000
    assert spilled(res.messages) == {"r5", "r4", "r3"}  # largest first


def test_over_budget_trace_when_unspillable_remain(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRACE", "1")
    # 45 results under the 5000-char floor of the per-message pass: none may be spilled for the budget.
    msgs = batch(*(("Echo", f"e{i}", "c" * 4900) for i in range(45)))
    res, _ = run(msgs, tmp_path=tmp_path)
    assert not spilled(res.messages)
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "compact.run stage=budget" in x)
    assert line.startswith("[trace] compact.run stage=budget spilled=0 reapplied=0 frozen=0 total_before=220500")
    assert "compact.budget_over" in err


# -- per-message budget ----------------------------------------------------------------------------
def test_four_parallel_60k_results(tmp_path):
    sizes = {"p0": 60_000, "p1": 61_000, "p2": 59_000, "p3": 60_500}
    msgs = batch(*((("Big", tid, tid[1] * n)) for tid, n in sizes.items()))
    o = CompactOptions(max_tool_result_chars=100_000)  # each under its own threshold
    res, _ = run(msgs, tmp_path=tmp_path, o=o)
    sent = sum(len(v) for v in contents(res.messages).values())
    assert sent <= 200_000
    assert spilled(res.messages) == {"p1"}  # the largest one alone brings 240.5 KB under 200 KB
    # Smaller budget: largest first until it fits.
    res2, _ = run(batch(*((("Big", tid, "q" * n)) for tid, n in sizes.items())), tmp_path=tmp_path / "b",
                  o=CompactOptions(max_tool_result_chars=100_000, max_turn_tool_result_chars=125_000))
    assert spilled(res2.messages) == {"p1", "p3"}
    assert sum(len(v) for v in contents(res2.messages).values()) <= 125_000


def test_budget_counts_what_is_sent_and_respects_5000_floor(tmp_path):
    o = CompactOptions(max_turn_tool_result_chars=30_000)
    small = [("Echo", f"s{i}", "s" * 4_999) for i in range(8)]  # 40 KB of results each under the floor
    res, state = run(batch(*small), tmp_path=tmp_path, o=o)
    assert spilled(res.messages) == set() and len(state.seen) == 8
    # One large result among them: it goes, the small ones stay, the total now counts its preview.
    res2, _ = run(batch(*small, ("Echo", "big", "B" * 20_000), prefix="u"), tmp_path=tmp_path, o=o)
    assert spilled(res2.messages) == {"big"}
    assert MIN_AGGREGATE_SPILL_CHARS == 5000


def test_per_message_is_per_user_message(tmp_path):
    o = CompactOptions(max_tool_result_chars=100_000, max_turn_tool_result_chars=100_000)
    msgs = batch(("Big", "a", "a" * 60_000), prefix="a") + batch(("Big", "b", "b" * 60_000), prefix="b")
    res, _ = run(msgs, tmp_path=tmp_path, o=o)
    assert spilled(res.messages) == set()


# -- special results -----------------------------------------------------------------------------
def test_empty_results_get_marker(tmp_path):
    msgs = batch(("Bash", "e1", ""), ("Grep", "e2", []), ("Echo", "e3", [text_block("")]))
    res, state = run(msgs, tmp_path=tmp_path)
    c = contents(res.messages)
    assert c == {"e1": "(Bash completed with no output)", "e2": "(Grep completed with no output)",
                 "e3": "(Echo completed with no output)"}
    assert contents(msgs)["e1"] == ""  # history untouched
    assert res.records == []


def test_images_never_spilled_blocks_measured_by_text(tmp_path):
    img = [text_block("t" * 60_000), image_block("image/png", "A" * 500_000)]
    blocks = [text_block("u" * 40_000), text_block("v" * 40_000)]
    msgs = batch(("Echo", "img", img), ("Echo", "blk", blocks))
    res, _ = run(msgs, tmp_path=tmp_path)
    c = contents(res.messages)
    assert c["img"] is img
    assert spilled(res.messages) == {"blk"}  # 80 K of text > 50 K
    path = spill_path(tmp_path / "sess" / "tool-results", "blk")
    assert path.read_text() == "u" * 40_000 + "v" * 40_000


def test_unchanged_blocks_keep_identity(tmp_path):
    msgs = batch(("Echo", "k", "keep"), ("Bash", "s", "x" * 40_000))
    res, _ = run(msgs, tmp_path=tmp_path)
    assert res.messages is not msgs
    assert res.messages[0] is msgs[0] and res.messages[1] is msgs[1]
    assert res.messages[2]["content"][0] is msgs[2]["content"][0]
    assert res.messages[2]["content"][1] is not msgs[2]["content"][1]
    assert msgs[2]["content"][1]["content"] == "x" * 40_000


# -- preview and pointer -----------------------------------------------------------------------------
def test_preview_cjk_and_emoji_boundaries():
    # The preview is 2000 units (~500 tokens) in every script: a CJK character is 4 units, an emoji 5.
    text = ("中文字符😀" * 1000)
    pre, more = make_preview(text)
    assert more and pre == text[: len(pre)] and 1900 <= text_units(pre) <= 2000
    assert text_units(text[: len(pre) + 1]) > 2000
    pre.encode("utf-8")  # whole code points only
    assert make_preview("中" * 3000)[0] == "中" * 500
    emoji = "😀" * 3000
    pre2, _ = make_preview(emoji)
    assert pre2 == "😀" * 400


def test_preview_newline_cut():
    text = "a" * 1500 + "\n" + "b" * 1000
    assert make_preview(text) == ("a" * 1500, True)
    text2 = "a" * 900 + "\n" + "b" * 3000  # newline before half: hard cut
    assert make_preview(text2) == (text2[:2000], True)
    assert make_preview("short\n") == ("short\n", False)


def test_replacement_format(tmp_path):
    text = "line\n" * 3000
    path, n = write_spill(tmp_path / "d", "toolu_1", text)
    rep = build_replacement(path, n, text)
    lines = rep.split("\n")
    assert lines[0] == "<persisted-output>"
    assert lines[1] == f"Output too large ({format_size(15000)}). Full output saved to: {path}"
    assert path.is_absolute() and lines[2] == "" and lines[3] == "Preview (first 2KB):"  # Claude Code's wording
    assert rep.endswith("\n...\n</persisted-output>")
    assert format_size(900) == "900 bytes" and format_size(15000) == "14.6KB" and format_size(3 << 20) == "3MB"
    assert format_size(38894) == "38KB" and format_size(1288895) == "1.2MB"


def test_tool_previewer_used(tmp_path):
    e = env(tmp_path, previewers={"Bash": lambda t: t[:5] + "|" + t[-5:]})
    res, _ = run(batch(("Bash", "b", "H" * 20_000 + "T" * 20_000)), tmp_path=tmp_path, e=e)
    assert "Preview:\nHHHHH|TTTTT\n" in contents(res.messages)["b"]


# -- files ---------------------------------------------------------------------------------------------
def test_exclusive_create_idempotent(tmp_path):
    d = tmp_path / "tool-results"
    p1, n1 = write_spill(d, "toolu_x", "first")
    p2, n2 = write_spill(d, "toolu_x", "second")
    assert p1 == p2 and n1 == n2 == 5 and p1.read_text() == "first"


def test_file_permissions(tmp_path):
    res, _ = run(batch(("Bash", "perm", "x" * 40_000)), tmp_path=tmp_path)
    d = tmp_path / "sess" / "tool-results"
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE(spill_path(d, "perm").stat().st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_failed_write_keeps_content_and_freezes(tmp_path):
    d = tmp_path / "sess" / "tool-results"
    d.mkdir(parents=True)
    d.chmod(0o500)
    try:
        msgs = batch(("Bash", "ro", "x" * 40_000))
        res, state = run(msgs, tmp_path=tmp_path)
        assert contents(res.messages)["ro"] == "x" * 40_000
        assert "ro" in state.seen and "ro" not in state.replacements
        assert [k for k, _ in res.notices] == ["warning"]
        assert res.records == [{"type": "decision", "stage": "budget", "id": "ro", "replacement": None}]
        d.chmod(0o700)
        res2, _ = run(msgs, state, tmp_path=tmp_path)  # frozen: not retried
        assert contents(res2.messages)["ro"] == "x" * 40_000 and res2.records == []
    finally:
        d.chmod(0o700)


def test_failed_write_unusable_dir_keeps_content(tmp_path):
    blocker = tmp_path / "sess"
    blocker.write_text("a file where the session directory should be")  # fails even for root
    msgs = batch(("Bash", "nd", "x" * 40_000))
    res, state = run(msgs, tmp_path=tmp_path)
    assert res.messages is msgs and "nd" in state.seen and not state.replacements
    assert res.notices[0][0] == "warning" and "Bash" in res.notices[0][1]


def test_no_spill_dir_no_decisions():
    msgs = batch(("Bash", "b", "x" * 40_000))
    res = apply_tool_result_budget(msgs, ContentReplacementState(), CompactOptions(), PipelineEnv())
    assert res.messages is msgs and res.records == []


# -- persistent decisions -------------------------------------------------------------------------------
def test_frozen_never_replaced_later(tmp_path):
    msgs = batch(("Echo", "f", "x" * 40_000))
    res, state = run(msgs, tmp_path=tmp_path)
    assert spilled(res.messages) == set() and "f" in state.seen
    tight = CompactOptions(max_tool_result_chars=1000, max_turn_tool_result_chars=5000)
    res2, _ = run(msgs, state, tmp_path=tmp_path, o=tight)
    assert res2.messages is msgs and res2.records == []


def test_reapplication_byte_identical_over_ten_calls(tmp_path):
    msgs = batch(("Bash", "r", "x" * 40_000), ("Echo", "k", "small"))
    state = ContentReplacementState()
    first = apply_tool_result_budget(msgs, state, CompactOptions(), env(tmp_path))
    want = json.dumps(to_api(first.messages))
    spill = spill_path(tmp_path / "sess" / "tool-results", "r")
    spill.unlink()  # re-application does no I/O: it would not notice
    for _ in range(10):
        again = apply_tool_result_budget(msgs, state, CompactOptions(), env(tmp_path))
        assert json.dumps(to_api(again.messages)) == want
        assert again.records == [] and again.notices == []
    assert not spill.exists()


def test_state_from_records_reapplies(tmp_path):
    msgs = batch(("Bash", "r", "x" * 40_000), ("Echo", "k", "y" * 30_000))
    first, _ = run(msgs, tmp_path=tmp_path)
    rebuilt = ContentReplacementState.from_records(json.loads(json.dumps(first.records)))
    again, _ = run(json.loads(json.dumps(msgs)), rebuilt, tmp_path=tmp_path,
                   o=CompactOptions(max_turn_tool_result_chars=1000))
    assert json.dumps(to_api(again.messages)) == json.dumps(to_api(first.messages))
    assert again.records == []


class BigOut(Tool):
    name = "BigOut"
    description = "Returns n characters."
    input_schema = {"type": "object", "properties": {"n": {"type": "integer"}, "c": {"type": "string"}}}
    max_result_chars = 100_000

    def is_read_only(self, input):
        return True

    async def call(self, input, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(input.get("c", "o") * input["n"])


async def test_resume_from_transcript_reproduces_outbound_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    compact = CompactOptions(autocompact=False, max_tool_result_chars=100_000)
    calls = [tool_call("BigOut", {"n": 60_000 + i, "c": "abcd"[i]}) for i in range(4)]
    model = ScriptedModel([reply(*calls), reply("done")])
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=compact), [BigOut()], QueryDeps(model))
    async for _ in engine.run_turn("four big outputs"):
        pass
    engine.close()
    last = json.dumps(model.requests[-1].messages)
    assert last.count(PERSISTED_OUTPUT_TAG) == 1
    spill_dir = engine.session_dir / "tool-results"
    assert spill_dir.is_dir() and str(spill_dir).startswith(str(tmp_path / "home"))
    assert not any(p.name == "tool-results" for p in tmp_path.glob("*"))  # nothing in the project

    model2 = ScriptedModel([reply("again")])
    engine2 = QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=compact), [BigOut()], QueryDeps(model2))
    engine2.resume(load_transcript(engine.paths.transcript))
    async for _ in engine2.run_turn("next"):
        pass
    engine2.close()
    resumed = model2.requests[0].messages
    prefix = json.loads(last)
    assert json.dumps(resumed[: len(prefix)]) == last
    lines = [json.loads(x) for x in engine.paths.transcript.read_text().splitlines()]
    assert len([x for x in lines if x.get("type") == "decision" and x.get("stage") == "budget"]) == 4


async def one_big_output(tmp_path: Path, n: int, c: str) -> tuple[QueryEngine, ScriptedModel]:
    """A finished session whose one tool call returned `c * n` (spilled above 50000 chars)."""
    compact = CompactOptions(autocompact=False, max_tool_result_chars=50_000)
    model = ScriptedModel([reply(tool_call("BigOut", {"n": n, "c": c})), reply("done")])
    engine = QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=compact), [BigOut()], QueryDeps(model))
    async for _ in engine.run_turn("one big output"):
        pass
    engine.close()
    return engine, model


async def test_transcript_and_history_keep_the_pointer_not_the_original(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    engine, model = await one_big_output(tmp_path, 300_000, "q")
    transcript = engine.paths.transcript.read_text()
    assert "q" * 3000 not in transcript  # the 300 KB original is only in the spill file
    assert len(transcript) < 20_000
    spilled = next((engine.session_dir / "tool-results").glob("*.txt"))
    assert spilled.read_text() == "q" * 300_000
    held = [r["content"] for m in engine.messages for r in tool_results(m)]
    assert len(held) == 1 and held[0].startswith(PERSISTED_OUTPUT_TAG)
    # What the model was sent is exactly what the history and the transcript hold.
    sent = [r["content"] for m in model.requests[-1].messages for r in tool_results(m)]
    assert sent == held
    loaded = load_transcript(engine.paths.transcript)
    assert [r["content"] for m in loaded.messages for r in tool_results(m)] == held


async def test_old_transcript_with_the_original_resumes_to_the_same_bytes(tmp_path, monkeypatch):
    """Transcripts written before decisions were taken on arrival stored the original: still fine."""
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    engine, model = await one_big_output(tmp_path, 80_000, "z")
    last = json.dumps(model.requests[-1].messages)
    # Rewrite the transcript the old way: the message record carries the whole original.
    lines = [json.loads(x) for x in engine.paths.transcript.read_text().splitlines()]
    for rec in lines:
        for r in tool_results(rec.get("message") or {"content": []}):
            r["content"] = "z" * 80_000
    engine.paths.transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    model2 = ScriptedModel([reply("again")])
    engine2 = QueryEngine(EngineConfig(cwd=tmp_path, model="test", compact=engine.config.compact), [BigOut()], QueryDeps(model2))
    engine2.resume(load_transcript(engine.paths.transcript))
    async for _ in engine2.run_turn("next"):
        pass
    engine2.close()
    assert json.dumps(model2.requests[0].messages[: len(json.loads(last))]) == last


# -- cleanup ---------------------------------------------------------------------------------------------
def test_cleanup_old_spill_dirs(tmp_path, monkeypatch):
    home = tmp_path / "home"
    proj = home / "projects" / "p"
    for sid, age_days in (("old", 40), ("new", 1)):
        d = proj / sid / "tool-results"
        d.mkdir(parents=True)
        (d / "x.txt").write_text("x")
        t = proj / f"{sid}.jsonl"
        t.write_text("{}\n")
        when = 1_000_000_000 - age_days * 86400
        os.utime(t, (when, when))
    removed = cleanup_spill_dirs(home=home, now=1_000_000_000)
    assert removed == [proj / "old" / "tool-results"]
    assert (proj / "new" / "tool-results" / "x.txt").exists() and (proj / "old.jsonl").exists()
    monkeypatch.setenv("SPILL_MAX_AGE_DAYS", "0.5")
    assert cleanup_spill_dirs(home=home, now=1_000_000_000) == [proj / "new" / "tool-results"]
