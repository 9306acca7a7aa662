"""`agent -p` against recorded Claude Code output: same flags, same scripted model, same shapes.

Each fixture in tests/fixtures/claude_code/cli_outputs/ is one run of the real `claude` binary (2.1) against a
local fake API: its flags, exit code, the scripted model turns and its stdout. Here the same script is
played to this agent with the same flags, and the outputs are compared by shape: exit code, the sequence of
events (type, subtype, content block types), every key Claude Code emits (less the product-specific ones
listed below, each with its reason), and the result's subtype, is_error, num_turns and denials. Text mode
is compared by its text. Values that differ by run (ids, timings, paths, costs) are not compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRunner
from tests.fake_anthropic import FakeAnthropic, tool_block

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "cli_outputs"
RECORDED_CWD = "/tmp/ccproj"

# Keys Claude Code emits that this agent does not, and why.
NOT_EMITTED = {
    "init": {"analytics_disabled", "product_feedback_disabled", "fast_mode_state", "memory_paths",
             "terminal_slash_commands", "capabilities", "plugins_dir"},  # Claude Code products: telemetry,
    # fast mode, its auto-memory directory; none exists here.
    "result": {"ttft_ms", "ttft_stream_ms", "time_to_request_ms",  # latency probes of Claude Code's own
               "fast_mode_state", "fast_mode_disabled_reason", "subagent_stats", "safety_stops"},
    "usage": {"inference_geo", "iterations", "speed", "output_tokens_details", "fallback_credit"},  # API
    # fields of newer models that the Messages API returns only to Claude Code's beta headers.
    "assistant": {"request_id", "timestamp"},
    "stream_event": {"ttft_ms"},
    "user": {"timestamp", "tool_use_result", "tool_result_meta"},  # Claude Code's per-tool structured
    # results (its own UI data); the API content is the same.
}
# Deliberate differences in outcome, by fixture.
DIFFERENT = {
    # Claude Code reports an API error as subtype "success" with is_error true; this agent says
    # error_during_execution (the outcome is an error; is_error and the exit code agree).
    "fmt_json_api_error": "subtype",
}


def fixtures() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def _script(fake: FakeAnthropic, script: list[dict[str, Any]], cwd: Path) -> None:
    for i, turn in enumerate(script):
        if "http_error" in turn:
            e = turn["http_error"]
            fake.http_error(e["status"], e["type"], e["message"])
            continue
        parts: list[Any] = [turn["text"]] if turn.get("text") else []
        for j, use in enumerate(turn.get("tool_use") or []):
            raw = json.dumps(use["input"]).replace(RECORDED_CWD, str(cwd))
            parts.append(tool_block(use["name"], json.loads(raw), id=f"toolu_rec_t{i}_{j}"))
        fake.reply(*parts)


def _signature(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    sig: list[Any] = [obj.get("type"), obj.get("subtype")]
    if obj.get("type") == "stream_event":
        sig.append(obj["event"].get("type"))
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, list):
        sig.append([b.get("type") for b in content])
    return tuple(sig) if not isinstance(sig[-1], list) else (*sig[:-1], tuple(sig[-1]))


def _events(lines: list[Any]) -> list[Any]:
    """The event sequence without what is timing-dependent: stream events (compared on their own), status
    frames, pings."""
    return [_signature(o) for o in lines if not (isinstance(o, dict) and (
        o.get("type") == "stream_event" or (o.get("type") == "system" and o.get("subtype") == "status")))]


def _stream_events(lines: list[Any]) -> list[Any]:
    """Stream event types, pings left out and runs of deltas counted once (servers split text freely)."""
    out: list[str] = []
    for o in lines:
        if isinstance(o, dict) and o.get("type") == "stream_event" and o["event"]["type"] != "ping":
            kind = o["event"]["type"]
            if not (kind == "content_block_delta" and out and out[-1] == kind):
                out.append(kind)
    return out


def _kind(obj: dict[str, Any]) -> str:
    return "init" if obj.get("subtype") == "init" else obj["type"]


def _missing_keys(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    kind = _kind(theirs)
    missing = sorted(set(theirs) - set(ours) - NOT_EMITTED.get(kind, set()))
    if kind == "result" and isinstance(theirs.get("usage"), dict):
        missing += [f"usage.{k}" for k in sorted(set(theirs["usage"]) - set(ours.get("usage", {}))
                                                 - NOT_EMITTED["usage"])]
    if kind in ("assistant",):
        missing += [f"message.{k}" for k in sorted(set(theirs["message"]) - set(ours["message"]))]
    return missing


@pytest.mark.parametrize("name", fixtures())
def test_same_shapes_as_claude_code(name: str, agent_home: Path, workdir: Path, fake_anthropic: FakeAnthropic) -> None:
    rec = json.loads((FIXTURES / f"{name}.json").read_text())
    (workdir / "a.txt").write_text("alpha\nbeta\ngamma\n")
    if rec["rc"] == 0 or rec["stdout"]:
        _script(fake_anthropic, rec["script"], workdir)
    r = CliRunner(agent_home, workdir, fake_anthropic)(*rec["cmd"], timeout=60)
    if not rec["stdout"]:  # a usage error: same exit code, the same message
        assert r.code == rec["rc"], r.stderr
        assert r.stderr.strip().lower().removeprefix("error: ") == rec["stderr"].strip().lower().removeprefix("error: ")
        fake_anthropic.steps.clear()
        return
    assert r.code == rec["rc"], r.stderr
    fake_anthropic.steps.clear()  # a turn limit leaves the script's later turns unused, as it did for Claude Code
    theirs = rec["stdout"]
    if isinstance(theirs[0], str):  # text mode: the final answer alone
        assert r.stdout.splitlines() == theirs
        return
    ours = [json.loads(line) for line in r.stdout.splitlines()]
    assert _events(ours) == _events(theirs) or DIFFERENT.get(name) == "subtype", (
        f"event sequence differs:\nours   {_events(ours)}\ntheirs {_events(theirs)}")
    assert _stream_events(ours) == _stream_events(theirs)
    by_kind: dict[str, dict[str, Any]] = {}
    for o in ours:
        by_kind.setdefault(_kind(o), o)
    for t in theirs:
        if _kind(t) in by_kind:
            assert _missing_keys(t, by_kind[_kind(t)]) == [], f"keys Claude Code has in {_kind(t)}"
    mine, recorded = ours[-1], theirs[-1]
    if DIFFERENT.get(name) != "subtype":
        assert mine["subtype"] == recorded["subtype"]
    assert mine["is_error"] == recorded["is_error"]
    assert mine["num_turns"] == recorded["num_turns"]
    assert [d["tool_name"] for d in mine["permission_denials"]] == [
        d["tool_name"] for d in recorded["permission_denials"]]
