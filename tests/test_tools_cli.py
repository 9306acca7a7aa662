"""TodoWrite, WebFetch and Agent through the real CLI against the fake Anthropic server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fake_anthropic import tool_block


class Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = b"<html><body><h1>Release notes</h1><p>Version <b>2.0</b> ships today.</p></body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def results_of(request) -> dict[str, dict]:
    return {b["tool_use_id"]: b for b in request.messages[-1]["content"] if b.get("type") == "tool_result"}


def test_todo_webfetch_and_agent_through_the_cli(cli, fake_anthropic):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/notes"
    try:
        todos = [{"content": "Read notes", "status": "in_progress", "activeForm": "Reading notes"},
                 {"content": "Summarise", "status": "pending"}]
        fake_anthropic.reply(
            "Planning.",
            tool_block("TodoWrite", {"todos": todos}, id="toolu_todo"),
            tool_block("WebFetch", {"url": url}, id="toolu_web"),
            tool_block("Agent", {"description": "check", "prompt": "Say child done."}, id="toolu_agent"),
        )
        fake_anthropic.text("child done")  # the sub-agent's own model call
        fake_anthropic.text("All three worked.")
        # WebFetch asks per domain (Claude Code): the one-shot run allows this one by rule.
        result = cli("--output-format", "json", "do it", "--allowedTools", "WebFetch(domain:127.0.0.1)",
                     WEBFETCH_ALLOW_PRIVATE="1", timeout=120)
    finally:
        server.shutdown()
    assert result.code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["result"] == "All three worked." and out["is_error"] is False
    child = fake_anthropic.requests[1]
    assert [m["role"] for m in child.messages] == ["user"]
    assert "Say child done." in json.dumps(child.messages)
    assert "Agent" not in {t["name"] for t in child.body.get("tools", [])}
    res = results_of(fake_anthropic.requests[2])
    assert not any(r.get("is_error") for r in res.values()), res
    assert "Release notes" in json.dumps(res["toolu_web"]["content"]) and "2.0" in json.dumps(res["toolu_web"]["content"])
    assert json.dumps(res["toolu_agent"]["content"]).startswith('"[Agent: check]\\nchild done')
    assert "[>] Reading notes" in res["toolu_todo"]["content"] and "1 in progress" in res["toolu_todo"]["content"]
