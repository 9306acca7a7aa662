"""The loop guard through the real CLI: a model that Reads an unchanged file again and again is told on the
third repeat and stopped on the fifth (seven requests, within eight: the second Read of an unchanged file
already returns Claude Code's "unchanged" stub, so the repeats start there), in `-p` text, json and stream-json and
in the REPL; a model that polls a changing result, or reads twenty different files, runs to its end.
Thresholds come from settings' `loopGuard`; an untrusted folder may only make them stricter."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from services.loop_guard import LoopGuard, LoopGuardOptions, parse_options, stricter
from services.trust import trust
from tests.fake_anthropic import tool_block

NOTE = "Note: this exact Read call has returned the same result 4 times in this turn"
STOP = "Stopped: the model repeated the same call 6 times with the same result: Read("


def test_repeats_count_only_identical_results() -> None:
    g = LoopGuard(LoopGuardOptions(3, 5))
    verdicts = [g.observe("Read", {"file_path": "a"}, "same", False) for _ in range(6)]
    assert [bool(v.note) for v in verdicts] == [False, False, False, True, True, False]
    assert verdicts[-1].stop and "6 times" in verdicts[-1].stop and 'Read({"file_path": "a"})' in verdicts[-1].stop
    g = LoopGuard(LoopGuardOptions(3, 5))
    assert not any(g.observe("Bash", {"command": "date"}, str(i), False).stop for i in range(20))
    assert not any(g.observe("Read", {"file_path": str(i)}, "x", False).stop for i in range(20))
    # Same content but one an error: not the same result. Key order does not make a call different.
    g = LoopGuard(LoopGuardOptions(1, 2))
    g.observe("T", {"a": 1, "b": 2}, "r", False)
    assert g.observe("T", {"b": 2, "a": 1}, "r", False).note
    assert not g.observe("T", {"b": 2, "a": 1}, "r", True).note
    off = LoopGuard(LoopGuardOptions(0, 0))
    assert not any(off.observe("T", {}, "r", False).stop or off.observe("T", {}, "r", False).note for _ in range(50))


def test_settings_values() -> None:
    assert parse_options({"warnAfter": 2, "stopAfter": 4}) == (LoopGuardOptions(2, 4), None)
    assert parse_options({}) == (LoopGuardOptions(3, 5), None)
    for bad in ([], {"stopAfter": -1}, {"warnAfter": "3"}, {"stopAfter": True}, {"stopAfter": 1.5}):
        options, problem = parse_options(bad)
        assert options is None and problem
    base = LoopGuardOptions(3, 5)
    assert stricter(base, LoopGuardOptions(1, 2)) and not stricter(base, LoopGuardOptions(3, 0))
    assert not stricter(base, LoopGuardOptions(3, 50)) and stricter(LoopGuardOptions(0, 0), LoopGuardOptions(9, 9))


def script_same_read(fake, path: Path, times: int = 10) -> None:
    for i in range(times):
        fake.reply(tool_block("Read", {"file_path": str(path)}, id=f"r{i}"))


def test_p_json_stops_a_repeated_call_and_names_it(cli, fake_anthropic) -> None:
    target = Path(cli.cwd) / "a.txt"
    target.write_text("alpha\n")
    script_same_read(fake_anthropic, target, 7)
    r = cli("-p", "Read it.", "--output-format", "json")
    out = json.loads(r.stdout)
    assert r.code == 1 and out["subtype"] == "error_loop_detected" and out["is_error"] is True, r.stdout + r.stderr
    assert out["result"].startswith(STOP) and "a.txt" in out["result"]
    reqs = fake_anthropic.requests
    assert len(reqs) == 7  # the seventh reply's call ran; no eighth request
    # Told on the third repeat (the fifth call), in that call's result.
    def last_result(req) -> str:
        return json.dumps(req.messages[-1]["content"][0]["content"])
    assert NOTE not in last_result(reqs[4]) and NOTE in last_result(reqs[5])
    # The transcript is whole: --continue sends every call with its result.
    fake_anthropic.text("Done differently.")
    again = cli("-p", "Try another way.", "--continue", "--output-format", "json")
    assert json.loads(again.stdout)["subtype"] == "success", again.stderr
    sent = fake_anthropic.requests[-1].messages
    uses = [b["id"] for m in sent if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for m in sent if m["role"] == "user" for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert uses == results and len(uses) == 7


def test_p_text_and_stream_json(cli, fake_anthropic) -> None:
    target = Path(cli.cwd) / "a.txt"
    target.write_text("alpha\n")
    script_same_read(fake_anthropic, target, 7)
    r = cli("-p", "Read it.")
    assert r.code == 1 and r.stdout == ""
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("error:")] == [
        ln for ln in r.stderr.splitlines() if ln.startswith("error: " + STOP)]
    assert "Traceback" not in r.stderr
    script_same_read(fake_anthropic, target, 7)
    p = subprocess.run([sys.executable, "-m", "agent", "-p", "Read it.", "--output-format", "stream-json",
                        "--verbose"], capture_output=True, text=True, cwd=cli.cwd, env=cli.env(), timeout=60)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    (result,) = [e for e in events if e["type"] == "result"]
    assert p.returncode == 1 and result["subtype"] == "error_loop_detected" and result["result"].startswith(STOP)
    assert len(fake_anthropic.requests) == 14


def test_progress_is_never_stopped(cli, fake_anthropic) -> None:
    """Polling a command whose output changes, and reading twenty different files, run to their end."""
    counter = Path(cli.cwd) / "count"
    counter.write_text("0")
    poll = {"command": "n=$(cat count); echo $((n+1)) > count; cat count", "description": "Poll"}
    for i in range(8):
        fake_anthropic.reply(tool_block("Bash", poll, id=f"b{i}"))
    for i in range(20):
        (Path(cli.cwd) / f"f{i}.txt").write_text(f"file {i}\n")
        fake_anthropic.reply(tool_block("Read", {"file_path": str(Path(cli.cwd) / f"f{i}.txt")}, id=f"f{i}"))
    fake_anthropic.text("All done.")
    r = cli("-p", "Work.", "--output-format", "json", "--allowedTools", "Bash,Read", timeout=120)
    out = json.loads(r.stdout)
    assert r.code == 0 and out["result"] == "All done.", r.stdout + r.stderr
    assert len(fake_anthropic.requests) == 29 and counter.read_text().strip() == "8"


def test_settings_thresholds_and_untrusted_folders(cli, fake_anthropic, tmp_path) -> None:
    target = Path(cli.cwd) / "a.txt"
    target.write_text("alpha\n")
    settings = Path(cli.cwd) / ".claude" / "settings.json"
    settings.parent.mkdir()
    # An untrusted folder may not turn the guard off...
    settings.write_text(json.dumps({"loopGuard": {"warnAfter": 0, "stopAfter": 0}}))
    script_same_read(fake_anthropic, target, 7)
    r = cli("-p", "Read it.", "--output-format", "json")
    assert json.loads(r.stdout)["subtype"] == "error_loop_detected" and len(fake_anthropic.requests) == 7
    # ...but a stricter one holds, and a trusted folder may set any.
    settings.write_text(json.dumps({"loopGuard": {"warnAfter": 1, "stopAfter": 2}}))
    script_same_read(fake_anthropic, target, 4)
    r = cli("-p", "Read it.", "--output-format", "json")
    assert "3 times" in json.loads(r.stdout)["result"] and len(fake_anthropic.requests) == 11
    settings.write_text(json.dumps({"loopGuard": {"stopAfter": 0}}))
    trust(Path(cli.cwd), cli.agent_home)
    script_same_read(fake_anthropic, target, 8)
    fake_anthropic.text("Gave up reading.")
    r = cli("-p", "Read it.", "--output-format", "json", timeout=60)
    assert json.loads(r.stdout)["result"] == "Gave up reading.", r.stderr
    settings.write_text(json.dumps({"loopGuard": {"stopAfter": "many"}}))
    trust(Path(cli.cwd), cli.agent_home)
    fake_anthropic.text("ok")
    r = cli("-p", "hi")
    assert f"settings {settings}: field 'loopGuard': stopAfter must be a whole number" in r.stderr


pexpect = pytest.importorskip("pexpect")


def test_repl_shows_the_stop_line(cli, fake_anthropic) -> None:
    from tests.test_repl_pty import PROMPT_READY, finish, spawn

    target = Path(cli.cwd) / "a.txt"
    target.write_text("alpha\n")
    script_same_read(fake_anthropic, target, 7)
    fake_anthropic.text("Fine.")
    child = spawn(cli)
    child.send("read it\r")
    child.expect_exact("Stopped: the model repeated the same call 6 times")
    child.expect_exact(PROMPT_READY)
    assert len(fake_anthropic.requests) == 7
    child.send("next\r")
    child.expect_exact("Fine.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0


def test_sub_agent_spawns_are_capped_per_session(cli, fake_anthropic) -> None:
    spawn = {"description": "look", "prompt": "Say hi.", "subagent_type": "general-purpose"}
    fake_anthropic.reply(tool_block("Agent", spawn, id="a1"))
    fake_anthropic.text("hi from the sub-agent")
    fake_anthropic.reply(tool_block("Agent", spawn, id="a2"))
    fake_anthropic.text("Done.")
    r = cli("-p", "Delegate twice.", "--output-format", "json", CLAUDE_CODE_MAX_SUBAGENTS_PER_SESSION="1")
    assert json.loads(r.stdout)["result"] == "Done.", r.stderr
    reqs = fake_anthropic.requests
    assert len(reqs) == 4  # the second spawn never ran a sub-agent
    (second,) = [b for b in reqs[3].messages[-1]["content"] if b.get("tool_use_id") == "a2"]
    assert second["is_error"] is True
    assert second["content"] == ("Agent has reached its limit of 1 calls per session. Do not call it again "
                                 "this session.")
    first = [b for m in reqs[2].messages for b in m["content"] if isinstance(b, dict) and b.get("tool_use_id") == "a1"]
    assert first and not first[0].get("is_error")


def test_each_capped_tool_is_refused_at_its_default_and_others_are_not_counted() -> None:
    from services.session_caps import over_cap

    counts = {"WebSearch": 199, "Agent": 200}
    assert over_cap("WebSearch", counts) is None and counts["WebSearch"] == 200
    text, is_error = over_cap("WebSearch", counts, {"query": "q"}) or ("", True)
    assert not is_error and "this session's web search budget is used up (limit: 200 WebSearch calls, shared " \
        "by every agent in this session; it does not refill)" in text
    assert "If more searches are genuinely needed, ask the user to raise CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION." \
        in text
    assert over_cap("Agent", counts) == ("Agent has reached its limit of 200 calls per session. Do not call it "
                                         "again this session.", True)
    assert counts == {"WebSearch": 200, "Agent": 200}
    assert over_cap("Read", counts) is None and "Read" not in counts


def test_caps_read_as_claude_code_reads_them(monkeypatch) -> None:
    from services.session_caps import limit_for

    for bad in ("0", "-1", "1.5", "lots", "", "٣"):  # not a whole number of at least 1: the default
        monkeypatch.setenv("CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION", bad)
        assert limit_for("WebSearch") == 200, bad
    monkeypatch.setenv("CLAUDE_CODE_MAX_WEB_SEARCHES_PER_SESSION", " 3 ")
    assert limit_for("WebSearch") == 3


class _Search(BaseHTTPRequestHandler):
    """A loopback search endpoint in Brave's shape, counting its hits."""

    hits = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).hits += 1
        body = json.dumps({"web": {"results": [{"title": "Doc", "url": "https://example.com/doc",
                                                "description": "found"}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_web_search_over_the_cap_is_claude_codes_result(cli, fake_anthropic) -> None:
    """The words and the (not an error) result recorded from 2.1.332 in session_caps.json, same query and cap."""
    recorded = json.loads((Path(__file__).parent / "fixtures/claude_code/session_caps.json").read_text())
    over = recorded["web_search_over_cap"]
    assert recorded["version"] == "2.1.332"
    _Search.hits = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Search)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        fake_anthropic.reply(tool_block("WebSearch", {"query": "alpha news"}))
        fake_anthropic.reply(tool_block("WebSearch", {"query": over["query"]}))
        fake_anthropic.text("Went on with what I had.")
        r = cli("-p", "search", "--permission-mode", "bypassPermissions", BRAVE_API_KEY="k",
                BRAVE_ENDPOINT_URL=f"http://127.0.0.1:{server.server_address[1]}/res/v1/web/search", **over["env"])
    finally:
        server.shutdown()
        server.server_close()
    assert r.code == 0, r.stderr
    assert _Search.hits == 1  # the second search never left the machine
    second = fake_anthropic.requests[2].messages[-1]["content"][0]
    assert bool(second.get("is_error")) is over["is_error"] and second["content"] == over["content"]
