"""What a summary keeps and costs: the re-attached files and todo list, /compact's instructions on the same
path, the breaker's notice through the loop, micro's floor (no clearing pass on every call), and the cache
anchors that let the request after a pass read the prefix before it."""

from __future__ import annotations

import io
import json
from pathlib import Path

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import FunctionModel, ScriptedModel, reply, tool_call
from agent.repl.render import make_console
from agent.slash.router import CommandContext, default_router
from services.cache_breakpoints import LOOKBACK_BLOCKS, place_breakpoints
from services.compact.autocompact import AutocompactContext, compact_conversation
from services.compact.cc_texts import INSTRUCTIONS_TEMPLATE, compact_prompt
from services.compact.micro import MICROCOMPACT_NOTE
from services.compact.options import CompactOptions
from services.compact.pipeline import run_outbound_pipeline
from services.compact.state import ContentReplacementState
from services.compact.types import PipelineEnv
from services.config import Settings
from services.events import NoticeEvent
from services.messages import assistant_message, text_block, tool_result_block, tool_use_block, user_message
from services.model_types import ModelError
from services.request_check import count_breakpoints


def reads(paths: list[str], body: str = "x" * 50) -> list:
    msgs = [user_message("the task")]
    for i, p in enumerate(paths):
        msgs.append(assistant_message([text_block(f"reading {i}"), tool_use_block(f"r{i}", "Read", {"file_path": p})]))
        msgs.append(user_message([tool_result_block(f"r{i}", body)]))
    msgs.append(assistant_message([text_block("done reading")]))
    return msgs


def _texts(messages: list) -> list[str]:
    return [b["text"] for m in messages for b in m["content"] if b.get("type") == "text"]


async def test_recent_files_come_back_from_disk_bounded_and_only_if_read(tmp_path: Path) -> None:
    files = {}
    for name in ("a.py", "b.py", "gone.py", "secret.py", "huge.py"):
        files[name] = tmp_path / name
        files[name].write_text(f"# {name}\nvalue = 1\n")
    files["huge.py"].write_text("y = 2\n" * 20_000)  # over the per-file cap
    files["a.py"].write_text("# a.py, edited since it was read\n")
    msgs = reads([str(files[n]) for n in ("b.py", "gone.py", "secret.py", "huge.py", "a.py")]) + reads([])[1:]
    files["gone.py"].unlink()
    allowed = {str(files[n].resolve()) for n in ("a.py", "b.py", "gone.py", "huge.py")}  # secret.py: never Read
    ctx = AutocompactContext("sys", "m", ScriptedModel([reply("S")]), CompactOptions.for_window(200_000), {}, 1,
                             cwd=tmp_path, read_paths=allowed, todos=[{"content": "Fix f", "status": "in_progress"}])
    out = (await compact_conversation(msgs, ctx)).messages
    attached = [m for m in out if (m.get("meta") or {}).get("post_compact") == "file"]
    assert [Path(m["meta"]["path"]).name for m in attached] == ["a.py", "b.py"]  # newest first, from disk
    called, result = attached[0]["content"]
    assert called["text"] == ('<system-reminder>\nCalled the Read tool with the following input: '
                              f'{{"file_path":"{files["a.py"].resolve()}"}}\n</system-reminder>')
    assert result["text"] == "<system-reminder>\nResult of calling the Read tool:\n1\t# a.py, edited since it was read\n2\t\n</system-reminder>"
    todo = [m for m in out if (m.get("meta") or {}).get("post_compact") == "todos"]
    assert todo and "- [in_progress] Fix f" in todo[0]["content"][0]["text"]
    assert out[-1]["meta"]["compact_end"]


async def test_no_read_state_no_files(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    ctx = AutocompactContext("sys", "m", ScriptedModel([reply("S")]), CompactOptions.for_window(200_000), {}, 1,
                             cwd=tmp_path, read_paths=None)
    out = (await compact_conversation(reads([str(f)]), ctx)).messages
    assert not any((m.get("meta") or {}).get("post_compact") for m in out)


async def test_slash_compact_takes_the_same_path_with_its_instructions(proj: Path) -> None:
    model = ScriptedModel([reply("<summary>kept</summary>", usage={"input_tokens": 1234, "output_tokens": 56})])
    engine = build_engine(AppOptions(cwd=proj, settings=Settings()), deps=QueryDeps(call_model=model))
    buf = io.StringIO()
    ctx = CommandContext(engine, make_console(file=buf, width=120, force_terminal=False, color_system=None), proj,
                         default_router())
    for i in range(4):
        engine.append_message(user_message(f"question {i}"))
        engine.append_message(assistant_message([text_block(f"answer {i}")]))
    before = engine.usage.as_dict().get("input_tokens", 0)
    await ctx.router.dispatch("/compact keep the file names", ctx)
    req = model.requests[0]
    assert req.system == engine.config.system_prompt and len(req.tools) == len(engine.tools)
    assert req.messages[-1]["content"][-1]["text"] == compact_prompt("keep the file names")
    assert INSTRUCTIONS_TEMPLATE.format(instructions="keep the file names") in compact_prompt("keep the file names")
    assert engine.usage.as_dict()["input_tokens"] - before == 1234  # the summary's cost is the session's
    records = [json.loads(x) for x in engine.paths.transcript.read_text().splitlines()]
    assert any(r.get("type") == "agent_usage" and r.get("source") == "compact" for r in records)
    assert any("Summary:\nkept" in t for t in _texts(engine.messages))
    engine.close()


async def test_a_failing_summary_is_announced_and_retain_takes_over(proj: Path, monkeypatch) -> None:
    monkeypatch.setenv("CONTEXT_WINDOW_TOKENS", "8000")
    calls = []

    def fn(req):
        calls.append(req)
        if req.messages[-1]["content"][-1].get("text") == compact_prompt():
            raise ModelError("summary service down")
        n = len(calls)
        if n > 12:
            return reply("finished")
        return reply("w" * 6000, tool_call("Echo", {"text": str(n)}, id=f"e{n}"))

    monkeypatch.setenv("AGENT_ECHO_TOOL", "1")
    engine = build_engine(AppOptions(cwd=proj, settings=Settings.from_env(), permission_mode="bypassPermissions"),
                          deps=QueryDeps(call_model=FunctionModel(fn)))
    notices = []
    async for ev in engine.run_turn("keep going"):
        if isinstance(ev, NoticeEvent):
            notices.append((ev.kind, ev.text))
    engine.close()
    kinds = [k for k, _ in notices]
    assert kinds.count("compact_failed") == 1  # the breaker opened once; no summary retried per turn
    assert "omitted" in kinds  # and the oldest turns were dropped, announced, only after that
    assert kinds.index("compact_failed") < kinds.index("omitted")
    summaries = [c for c in calls if c.messages[-1]["content"][-1].get("text") == compact_prompt()]
    assert len(summaries) == 1


def _session(rounds: int, size: int, words: int) -> list:
    msgs = [user_message("task")]
    for i in range(rounds):
        msgs.append(assistant_message([text_block("w" * words), tool_use_block(f"t{i}", "Read", {"file_path": f"f{i}"})]))
        msgs.append(user_message([tool_result_block(f"t{i}", "r" * size)]))
    return msgs


def test_micro_waits_a_batch_after_a_pass_that_fell_short() -> None:
    """The model's words keep the request over the low-water mark: a pass cannot get there. Without the
    floor every later call would clear one result (a cache miss each); with it, passes are far apart."""
    opts = CompactOptions.for_window(40_000)  # threshold 48,000 units, low-water 14,400
    state, env = ContentReplacementState(), PipelineEnv()
    history = _session(1, 3000, 4000)
    passes = []
    for i in range(1, 27):  # up to the autocompact level (30k tokens): a summary is the next stage
        history += _session(1, 3000, 4000)[1:]
        history[-2]["content"][1]["id"] = history[-1]["content"][0]["tool_use_id"] = f"x{i}"
        res = run_outbound_pipeline(history, state, opts, env)
        if any(r.get("stage") == "micro" for r in res.records):
            passes.append(i)
    assert state.micro_floor > 0
    gaps = [b - a for a, b in zip(passes, passes[1:], strict=False)]
    assert passes and all(g >= 3 for g in gaps), passes
    # A resumed state (records only) knows the floor too: the same next request.
    records = []
    state2 = ContentReplacementState()
    h2 = _session(1, 3000, 4000)
    for i in range(1, 27):
        h2 += _session(1, 3000, 4000)[1:]
        h2[-2]["content"][1]["id"] = h2[-1]["content"][0]["tool_use_id"] = f"x{i}"
        records += run_outbound_pipeline(h2, state2, opts, env).records
    resumed = ContentReplacementState.from_records(records)
    assert resumed.micro_floor == state2.micro_floor and resumed.cleared == state2.cleared


def _blocks(n_rounds: int, cleared: int) -> list:
    msgs = [{"role": "user", "content": [{"type": "text", "text": "task"}]}]
    for i in range(n_rounds):
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": "t"},
                                                      {"type": "tool_use", "id": f"u{i}", "name": "Read", "input": {}}]})
        body = f"{MICROCOMPACT_NOTE} tool=Read f{i}" if i < cleared else "z" * 900
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"u{i}", "content": body}]})
    return msgs


def marked(messages: list) -> list:
    return [(mi, bi) for mi, m in enumerate(messages) for bi, b in enumerate(m["content"]) if "cache_control" in b]


def test_the_pass_anchor_sits_before_the_oldest_clearable_result() -> None:
    msgs = _blocks(20, cleared=5)  # 3 blocks a round: the first clearable result is 45 blocks from the end
    system, tools, out = place_breakpoints("sys", [{"name": "A"}], msgs)
    assert marked(out) == [(11, 1), (len(out) - 1, 0)]
    assert count_breakpoints(system, tools, out) == 4
    # Close to the end it is left to the last block's lookback.
    _, _, near = place_breakpoints("sys", [{"name": "A"}], _blocks(20, cleared=17))
    assert marked(near) == [(len(near) - 1, 0)]
    assert LOOKBACK_BLOCKS == 20


def test_after_a_pass_the_old_anchor_is_read_and_the_tools_mark_gives_way() -> None:
    msgs = _blocks(20, cleared=12)  # a pass cleared u5..u11: the request marks the block before u5
    system, tools, out = place_breakpoints("sys", [{"name": "A"}], msgs, ("u5",))
    assert (11, 1) in marked(out) and (25, 1) in marked(out) and (len(out) - 1, 0) in marked(out)
    assert "cache_control" not in tools[-1] and count_breakpoints(system, tools, out) == 4
