"""WebFetch against a stdlib HTTP server on loopback (guard relaxed, or opened for exactly that server),
the SSRF guard cases, limits, HTML conversion; WebSearch adapters against httpx.MockTransport."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from agent.model.scripted import tool_call
from tools.base import SessionState, ToolContext, ToolError, ToolOutput
from tools.orchestration import ToolRunner
from tools.permissions import PermissionGate, PermissionRequest
from tools.registry import default_tools
from tools.web_fetch import UrlRefused, WebFetchTool, html_to_markdown
from tools.web_search import (
    BraveAdapter,
    SearchConfigError,
    TavilyAdapter,
    WebSearchTool,
    adapter_from_env,
    adapter_name,
)

HTML = b"""<!doctype html><html><head><title>Test  Page</title><style>body{color:red}</style>
<script>document.write('no')</script></head><body><h1>Hello</h1><p>Hello <b>world</b>, see
<a href="/docs/intro">the intro</a>.</p><ul><li>one</li><li>two</li></ul></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    """The canned routes; `server.owner` is the `Server` that counts the hits."""

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/plain", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        owner: Server = self.server.owner  # type: ignore[attr-defined]
        owner.hits.append((self.path, dict(self.headers)))
        route = _ROUTES.get(url.path)
        if route is None:
            self._send(404, b"no such page")
        else:
            route(self, parse_qs(url.query), owner)

    def _page(self, q: dict[str, list[str]], owner: Server) -> None:
        self._send(200, HTML, "text/html; charset=utf-8")

    def _plain(self, q: dict[str, list[str]], owner: Server) -> None:
        self._send(200, "plain text — ünïcode\n".encode(), "text/plain; charset=utf-8")

    def _big(self, q: dict[str, list[str]], owner: Server) -> None:
        size = int(q.get("n", ["1048576"])[0])
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < size:
                self.wfile.write(chunk[: size - sent])
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _slow(self, q: dict[str, list[str]], owner: Server) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not owner.stop.is_set():
            time.sleep(0.02)
        try:
            self._send(200, b"late")
        except OSError:
            pass

    def _redirect(self, q: dict[str, list[str]], owner: Server) -> None:
        self._send(302, b"", Location=q["to"][0])

    def _loop(self, q: dict[str, list[str]], owner: Server) -> None:
        n = int(q.get("n", ["0"])[0])
        self._send(302, b"", Location=f"/loop?n={n + 1}")

    def _image(self, q: dict[str, list[str]], owner: Server) -> None:
        self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png")

    def _host(self, q: dict[str, list[str]], owner: Server) -> None:
        self._send(200, (self.headers.get("Host") or "").encode())


_ROUTES = {"/page.html": _Handler._page, "/plain": _Handler._plain, "/big": _Handler._big,
           "/slow": _Handler._slow, "/redirect": _Handler._redirect, "/loop": _Handler._loop,
           "/image": _Handler._image, "/host": _Handler._host}


class Server:
    """A loopback HTTP server with a few canned routes; counts the requests it served."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, dict[str, str]]] = []
        self.stop = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def internal() -> Iterator[Server]:
    """A second loopback server standing for an internal service that must never be reached."""
    s = Server()
    yield s
    s.close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session=SessionState(cwd=tmp_path), project_root=tmp_path)


class OneServerOpen(WebFetchTool):
    """The guard on, except for exactly one loopback test server (standing for a public site)."""

    def __init__(self, port: int, **kw: Any):
        super().__init__(allow_private=False, **kw)
        self.open_port = port

    def refusal_for_address(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address, host: str, port: int) -> str | None:
        if str(ip) == "127.0.0.1" and port == self.open_port:
            return None
        return super().refusal_for_address(ip, host, port)


async def fetch(tool: WebFetchTool, ctx: ToolContext, url: str, **extra: Any) -> ToolOutput:
    try:
        return await tool.call({"url": url, **extra}, ctx)
    except ToolError as exc:
        return ToolOutput(str(exc), is_error=True)


# -- fetching -----------------------------------------------------------------------------------


async def test_html_page_is_converted_to_markdown(server: Server, ctx: ToolContext) -> None:
    out = await fetch(WebFetchTool(allow_private=True), ctx, f"{server.url}/page.html", prompt="the greeting")
    assert not out.is_error, out.content
    text = out.content
    assert f"URL: {server.url}/page.html" in text
    assert "Title: Test Page" in text and "Looking for: the greeting" in text
    assert "# Hello" in text and "Hello **world**" in text
    assert f"[the intro]({server.url}/docs/intro)" in text
    assert "- one\n- two" in text
    assert "document.write" not in text and "color:red" not in text
    assert out.summary.startswith("200")


def test_html_to_markdown_unit() -> None:
    title, text = html_to_markdown("<p>Hello <b>world</b></p>")
    assert title == "" and "Hello **world**" in text
    _, text = html_to_markdown("<div>a<script>x()</script><noscript>n</noscript><img src='data:xx' alt='pic'></div>")
    assert text == "apic"


async def test_plain_text_is_returned_as_is(server: Server, ctx: ToolContext) -> None:
    out = await fetch(WebFetchTool(allow_private=True), ctx, f"{server.url}/plain")
    assert not out.is_error and "plain text — ünïcode" in out.content and "Content-Type: text/plain" in out.content


async def test_body_is_capped_at_512_kb(server: Server, ctx: ToolContext) -> None:
    tool = WebFetchTool(allow_private=True)
    out = await fetch(tool, ctx, f"{server.url}/big?n=2000000")
    assert not out.is_error
    assert out.content.split("\n\n")[1] == "x" * (512 * 1024)
    assert "larger than 512 KB" in out.content and "(truncated)" in out.summary
    small = await fetch(WebFetchTool(allow_private=True, max_bytes=1000), ctx, f"{server.url}/big?n=5000")
    assert small.content.split("\n\n")[1] == "x" * 1000


async def test_timeout(server: Server, ctx: ToolContext) -> None:
    out = await fetch(WebFetchTool(allow_private=True, timeout=0.3), ctx, f"{server.url}/slow")
    assert out.is_error and "timed out after 0.3 s" in out.content


async def test_abort_stops_a_fetch(server: Server, ctx: ToolContext) -> None:
    async def later() -> None:
        await asyncio.sleep(0.2)
        ctx.abort.set()

    setter = asyncio.ensure_future(later())
    out = await fetch(WebFetchTool(allow_private=True), ctx, f"{server.url}/slow")
    await setter
    assert out.is_error and "aborted" in out.content.lower()


async def test_http_error_and_non_text(server: Server, ctx: ToolContext) -> None:
    tool = WebFetchTool(allow_private=True)
    missing = await fetch(tool, ctx, f"{server.url}/nope")
    assert missing.is_error and "HTTP 404" in missing.content and "no such page" in missing.content
    image = await fetch(tool, ctx, f"{server.url}/image")
    assert image.is_error and "image/png" in image.content and "not text" in image.content


async def test_redirects_followed_up_to_the_limit(server: Server, ctx: ToolContext) -> None:
    tool = WebFetchTool(allow_private=True)
    out = await fetch(tool, ctx, f"{server.url}/redirect?to=/plain")
    assert not out.is_error and f"URL: {server.url}/plain" in out.content and "Redirected from:" in out.content
    looped = await fetch(tool, ctx, f"{server.url}/loop")
    assert looped.is_error and "more than 5 redirects" in looped.content
    assert len([h for h in server.hits if h[0].startswith("/loop")]) == 6


async def test_env_relaxes_the_guard(server: Server, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBFETCH_ALLOW_PRIVATE", "1")
    out = await fetch(WebFetchTool(), ctx, f"{server.url}/plain")
    assert not out.is_error
    monkeypatch.setenv("WEBFETCH_ALLOW_PRIVATE", "0")
    out = await fetch(WebFetchTool(), ctx, f"{server.url}/plain")
    assert out.is_error and "loopback" in out.content


# -- the SSRF guard -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:{port}/plain", "loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        ("http://169.254.10.1/", "link-local address"),
        ("http://10.1.2.3/", "private network address"),
        ("http://192.168.1.1/", "private network address"),
        ("http://[::1]:{port}/", "loopback address"),
        ("http://[::ffff:127.0.0.1]:{port}/", "loopback address"),
        ("http://0.0.0.0:{port}/", "unspecified address"),
        ("http://224.0.0.1/", "multicast address"),
        ("http://localhost:{port}/plain", "local host name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata host name"),
        ("file:///etc/passwd", "only http:// and https://"),
        ("ftp://example.com/file", "only http:// and https://"),
        # IPv6 forms that carry an IPv4 address, judged by that address.
        ("http://[2002:7f00:1::]:{port}/", "loopback address (6to4 form of 127.0.0.1)"),
        ("http://[2002:a9fe:a9fe::1]/", "cloud metadata address (6to4"),
        ("http://[2002:c0a8:101::]/", "private network address (6to4"),
        ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "loopback address (Teredo client form of 127.0.0.1)"),
        ("http://[64:ff9b::7f00:1]:{port}/", "loopback address (NAT64 form of 127.0.0.1)"),
        ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata address (NAT64"),
        ("http://[64:ff9b:1::808:808]/", "local-use NAT64 address"),
        ("http://[::127.0.0.1]:{port}/", "loopback address (IPv4-compatible form of 127.0.0.1)"),
        ("http://[::ffff:7f00:1]:{port}/", "loopback address (IPv4-mapped"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata address (IPv4-mapped"),
        ("http://[fe80::1%25eth0]/", "link-local address"),
        # inet_aton's legacy IPv4 spellings: decimal, octal, hex, short forms.
        ("http://2130706433:{port}/", "loopback address"),
        ("http://0177.0.0.1:{port}/", "loopback address"),
        ("http://0x7f.1:{port}/", "loopback address"),
        ("http://0x7f000001:{port}/", "loopback address"),
        ("http://127.1:{port}/", "loopback address"),
        ("http://2852039166/", "cloud metadata address"),
        ("http://012.1/", "private network address"),
    ],
)
async def test_guard_refuses(url: str, why: str, server: Server, monkeypatch: pytest.MonkeyPatch, ctx: ToolContext) -> None:
    monkeypatch.delenv("WEBFETCH_ALLOW_PRIVATE", raising=False)
    out = await fetch(WebFetchTool(), ctx, url.format(port=server.port))
    assert out.is_error and "WebFetch refused" in out.content and why in out.content, out.content
    assert server.hits == []


async def test_guard_checks_resolved_addresses(server: Server, ctx: ToolContext) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return {"evil.test": ["93.184.216.34", "127.0.0.1"]}.get(host, [])

    with pytest.raises(UrlRefused, match=r"evil\.test \(resolves to 127\.0\.0\.1\) is a loopback address"):
        await WebFetchTool(allow_private=False, resolver=resolver).call({"url": f"http://evil.test:{server.port}/"}, ctx)
    assert server.hits == []


async def test_guard_judges_every_dns_answer_after_decoding(server: Server, ctx: ToolContext) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return {"six.test": ["2002:7f00:1::"], "nat.test": ["93.184.216.34", "64:ff9b::a00:1"]}.get(host, [])

    tool = WebFetchTool(allow_private=False, resolver=resolver)
    with pytest.raises(UrlRefused, match=r"resolves to 2002:7f00:1::\) is a loopback address \(6to4"):
        await tool.call({"url": f"http://six.test:{server.port}/"}, ctx)
    with pytest.raises(UrlRefused, match=r"private network address \(NAT64 form of 10\.0\.0\.1\)"):
        await tool.call({"url": f"http://nat.test:{server.port}/"}, ctx)
    assert server.hits == []


def test_public_addresses_in_ipv6_forms_stay_fetchable() -> None:
    from ipaddress import ip_address

    from tools.web_fetch import address_refusal

    for addr in ("2002:808:808::", "64:ff9b::808:808", "2606:4700::1111", "93.184.216.34"):
        assert address_refusal(ip_address(addr)) is None, addr


async def test_connection_goes_to_the_checked_address_with_the_name_kept(server: Server, ctx: ToolContext) -> None:
    """DNS rebinding: the request is sent to the address that was checked; Host keeps the name."""
    calls: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["10.0.0.1"]  # a second answer would differ

    tool = OneServerOpen(server.port, resolver=resolver)
    out = await fetch(tool, ctx, f"http://docs.test:{server.port}/host")
    assert not out.is_error, out.content
    assert out.content.endswith(f"docs.test:{server.port}")
    assert calls == ["docs.test"]


async def test_redirect_to_a_private_address_is_refused(server: Server, internal: Server, ctx: ToolContext) -> None:
    tool = OneServerOpen(server.port)
    ok = await fetch(tool, ctx, f"{server.url}/plain")
    assert not ok.is_error  # the open server itself is fetched with the guard on
    # Another host: never followed, the model is told (and its next call is checked and asked about anew).
    for target in (f"{internal.url}/secret", "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd",
                   f"http://[2002:7f00:1::]:{internal.port}/secret", f"http://2130706433:{internal.port}/secret"):
        out = await fetch(tool, ctx, f"{server.url}/redirect?to={target}")
        assert not out.is_error and out.content.startswith("REDIRECT DETECTED"), out.content
        assert f'- url: "{target}"' in out.content
    # The same host: followed, every hop checked by the guard.
    same = f"http://127.0.0.1:{server.port}/plain"
    out = await fetch(tool, ctx, f"{server.url}/redirect?to={same}")
    assert not out.is_error and "REDIRECT" not in out.content, out.content
    assert internal.hits == []


async def test_refusal_is_an_error_result_through_the_orchestrator(ctx: ToolContext) -> None:
    use = tool_call("WebFetch", {"url": "http://127.0.0.1/"})
    gate = PermissionGate(allowed_tools=["WebFetch(domain:127.0.0.1)"])
    runner = ToolRunner({"WebFetch": WebFetchTool(allow_private=False)}, ctx, gate)
    outcome = [item async for item in runner.run([use])][-1]
    (result,) = outcome.results
    assert result["is_error"] and "loopback" in result["content"]


# -- WebFetch asks per domain (Claude Code) ------------------------------------------------------


async def test_webfetch_asks_per_domain_and_always_stores_the_domain_rule(ctx: ToolContext) -> None:
    asked: list[PermissionRequest] = []

    async def ask(req: PermissionRequest) -> str:
        asked.append(req)
        return "always"

    tool = WebFetchTool()
    gate = PermissionGate(ask=ask)
    assert (await gate.authorize(tool, {"url": "https://Evil.example.com/x?d=secret"}, ctx)).allowed
    assert len(asked) == 1 and asked[0].always_rule == "WebFetch(domain:evil.example.com)"
    assert "evil.example.com" in asked[0].reason
    assert (await gate.authorize(tool, {"url": "https://evil.example.com/other"}, ctx)).allowed
    assert len(asked) == 1  # the stored domain rule answers
    assert (await gate.authorize(tool, {"url": "https://another.example.org/"}, ctx)).allowed
    assert len(asked) == 2  # a new domain is a new question
    for url in ("https://docs.python.org/3/library/os.html", "https://github.com/anthropics/claude-code"):
        assert (await gate.authorize(tool, {"url": url}, ctx)).allowed  # Claude Code's preapproved hosts
    assert len(asked) == 2
    await gate.authorize(tool, {"url": "https://github.com/anthropics-evil/x"}, ctx)
    await gate.authorize(tool, {"url": "https://docs.python.org.evil.test/"}, ctx)
    assert len(asked) == 4  # a path prefix by whole segments, a host by its whole name


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_webfetch_without_a_rule_is_denied_when_nobody_can_be_asked(ctx: ToolContext, mode: str) -> None:
    tool = WebFetchTool()
    gate = PermissionGate(mode=mode, headless=True)
    verdict = await gate.authorize(tool, {"url": "https://exfil.example.com/?k=v"}, ctx)
    assert not verdict.allowed and "WebFetch" in verdict.message
    for rules in (["WebFetch(domain:exfil.example.com)"], ["WebFetch(domain:*.example.com)"], ["WebFetch"]):
        gate = PermissionGate(mode=mode, headless=True, allowed_tools=rules)
        url = "https://exfil.example.com/" if "*" not in rules[0] else "https://a.example.com/"
        assert (await gate.authorize(tool, {"url": url}, ctx)).allowed, rules
    gate = PermissionGate(headless=True, allowed_tools=["WebFetch(domain:example.com)"])
    assert not (await gate.authorize(tool, {"url": "https://example.com.evil.test/"}, ctx)).allowed


def test_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY", "TAVILY_API_KEY", "WEB_SEARCH_ADAPTER"):
        monkeypatch.delenv(var, raising=False)
    names = [t.name for t in default_tools()]
    assert "WebFetch" in names and "TodoWrite" in names and "WebSearch" not in names
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    assert "WebSearch" in [t.name for t in default_tools()]
    fetch_tool = WebFetchTool()
    assert fetch_tool.is_read_only({"url": "x"}) and fetch_tool.is_concurrency_safe({"url": "x"})
    assert fetch_tool.max_result_chars == 50_000  # spillable


# -- WebSearch ----------------------------------------------------------------------------------

BRAVE_BODY = {
    "web": {
        "results": [
            {"title": "Bun docs", "url": "https://bun.sh/docs", "description": "bun runtime docs"},
            {"title": "Bun on GitHub", "url": "https://github.com/oven-sh/bun", "description": "source"},
            {"title": "Blog", "url": "https://blog.bun.sh/post", "description": "news"},
        ]
    }
}


def test_adapter_choice() -> None:
    assert adapter_name({}) == "brave"
    assert adapter_name({"TAVILY_API_KEY": "t"}) == "tavily"
    assert adapter_name({"TAVILY_API_KEY": "t", "BRAVE_API_KEY": "b"}) == "brave"
    assert adapter_name({"WEB_SEARCH_ADAPTER": "tavily", "BRAVE_API_KEY": "b"}) == "tavily"
    assert adapter_name({"WEB_SEARCH_ADAPTER": "Brave", "TAVILY_API_KEY": "t"}) == "brave"
    assert isinstance(adapter_from_env({"BRAVE_SEARCH_API_KEY": "b"}), BraveAdapter)
    with pytest.raises(SearchConfigError, match="BRAVE_API_KEY"):
        adapter_from_env({})
    with pytest.raises(SearchConfigError, match="TAVILY_API_KEY"):
        adapter_from_env({"WEB_SEARCH_ADAPTER": "tavily", "BRAVE_API_KEY": "b"})
    with pytest.raises(SearchConfigError, match="not a known search adapter"):
        adapter_from_env({"WEB_SEARCH_ADAPTER": "bing"})
    assert not WebSearchTool(env={}).is_enabled()
    assert WebSearchTool(env={"BRAVE_API_KEY": "b"}).is_enabled()


async def test_brave_adapter(ctx: ToolContext) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=BRAVE_BODY)

    tool = WebSearchTool(env={"BRAVE_API_KEY": "brave-key"}, transport=httpx.MockTransport(handler))
    out = await tool.call({"query": "bun runtime", "num_results": 2}, ctx)
    (req,) = seen
    assert req.method == "GET" and req.url.host == "api.search.brave.com" and req.url.path == "/res/v1/web/search"
    assert req.url.params["q"] == "bun runtime" and req.url.params["count"] == "2"
    assert req.headers["X-Subscription-Token"] == "brave-key"
    assert out.content.startswith('Web search results for "bun runtime":')
    assert "1. Bun docs\n   https://bun.sh/docs\n   bun runtime docs" in out.content
    assert "2. Bun on GitHub" in out.content and "Blog" not in out.content
    assert out.summary == "2 results"


async def test_domain_filters(ctx: ToolContext) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=BRAVE_BODY)

    tool = WebSearchTool(env={"BRAVE_API_KEY": "k"}, transport=httpx.MockTransport(handler))
    out = await tool.call({"query": "bun", "allowed_domains": ["bun.sh"]}, ctx)
    assert "https://bun.sh/docs" in out.content and "https://blog.bun.sh/post" in out.content
    assert "github.com" not in out.content
    assert "site:bun.sh" in seen[0].url.params["q"]
    out = await tool.call({"query": "bun", "blocked_domains": ["https://www.github.com/"]}, ctx)
    assert "github.com" not in out.content and "bun.sh/docs" in out.content


async def test_tavily_adapter(ctx: ToolContext) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [{"title": "T", "url": "https://docs.python.org/3/", "content": "py"}]})

    env = {"TAVILY_API_KEY": "tvly-key", "TAVILY_ENDPOINT_URL": "https://tavily.test/search"}
    tool = WebSearchTool(env=env, transport=httpx.MockTransport(handler))
    assert isinstance(tool.adapter, TavilyAdapter)
    out = await tool.call(
        {"query": "python", "num_results": 50, "allowed_domains": ["python.org"], "blocked_domains": ["x.com"]}, ctx
    )
    (req,) = seen
    assert req.method == "POST" and str(req.url) == "https://tavily.test/search"
    assert req.headers["Authorization"] == "Bearer tvly-key"
    body = json.loads(req.content)
    assert body == {
        "query": "python",
        "search_depth": "basic",
        "max_results": 20,
        "include_domains": ["python.org"],
        "exclude_domains": ["x.com"],
    }
    assert "1. T\n   https://docs.python.org/3/\n   py" in out.content


async def test_no_results_and_http_errors(ctx: ToolContext) -> None:
    empty = WebSearchTool(env={"BRAVE_API_KEY": "k"}, transport=httpx.MockTransport(lambda r: httpx.Response(200, json={})))
    assert (await empty.call({"query": "zzz"}, ctx)).content == "No results for: zzz"
    denied = WebSearchTool(
        env={"BRAVE_API_KEY": "k"}, transport=httpx.MockTransport(lambda r: httpx.Response(401, text="bad token"))
    )
    with pytest.raises(ToolError, match="Brave Search HTTP 401. Check the API key. bad token"):
        await denied.call({"query": "q"}, ctx)
    tavily = WebSearchTool(env={"TAVILY_API_KEY": "k"}, transport=httpx.MockTransport(lambda r: httpx.Response(429)))
    with pytest.raises(ToolError, match="Tavily Search HTTP 429. Rate limited"):
        await tavily.call({"query": "q"}, ctx)


async def test_search_abort_and_timeout(ctx: ToolContext) -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200, json={})

    tool = WebSearchTool(env={"BRAVE_API_KEY": "k"}, transport=httpx.MockTransport(hang))
    asyncio.get_running_loop().call_later(0.1, ctx.abort.set)
    with pytest.raises(ToolError, match="WebSearch aborted"):
        await tool.call({"query": "q"}, ctx)
    ctx.abort.clear()
    slow = WebSearchTool(env={"BRAVE_API_KEY": "k"}, transport=httpx.MockTransport(hang), timeout=0.2)
    with pytest.raises(ToolError, match="timed out after 0.2 s"):
        await slow.call({"query": "q"}, ctx)


async def test_https_request_is_pinned_with_sni(ctx: ToolContext) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="<p>pinned</p>", headers={"Content-Type": "text/html"})

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    tool = WebFetchTool(allow_private=False, resolver=resolver, transport=httpx.MockTransport(handler))
    out = await tool.call({"url": "https://example.com/a?b=1"}, ctx)
    (req,) = seen
    assert str(req.url) == "https://93.184.216.34/a?b=1"
    assert req.headers["Host"] == "example.com" and req.extensions["sni_hostname"] == "example.com"
    assert "URL: https://example.com/a?b=1" in out.content and "pinned" in out.content
