"""WebFetch: GET one URL and return its text; HTML is converted to Markdown.

The SSRF guard runs before every request, the first and each redirect hop: only http(s); the host is
resolved and every address it resolves to must be public (no loopback, private, link-local,
cloud-metadata, unspecified, multicast or otherwise reserved address). The connection then goes to
the checked address itself (Host header and TLS SNI keep the name), so a second DNS answer cannot
slip an internal address in between the check and the connect (DNS rebinding). The guard is relaxed
by `allow_private=True` or `WEBFETCH_ALLOW_PRIVATE=1` (for tests and local use).

Limits: 30 s for the whole fetch, 512 KB of body (streamed; the rest is cut with a note), 5
redirects. Read-only, abortable; long pages are spilled by the tool-result budget like any result.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from services.config import getenv
from services.trace import trace
from tools.base import DEFAULT_MAX_RESULT_CHARS, Tool, ToolContext, ToolError, ToolOutput
from tools.web_domains import domain_target, same_site

if TYPE_CHECKING:  # httpx is imported when a request is made: start-up stays light
    import httpx

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 512 * 1024
DEFAULT_MAX_REDIRECTS = 5
USER_AGENT = "react-agent-webfetch/0.1 (+https://pypi.org/project/react-agent/)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,*/*;q=0.5"
METADATA_ADDRESSES = {"169.254.169.254", "fd00:ec2::254", "100.100.100.200"}
BLOCKED_HOSTNAMES = {"localhost", "metadata.google.internal", "metadata.goog", "metadata"}
REDIRECT_CODES = {301, 302, 303, 307, 308}
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript",
              "application/x-javascript", "application/ld+json", "application/rss+xml", "application/atom+xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")

Resolver = Callable[[str, int], Awaitable[list[str]]]

DESCRIPTION = """Fetches a web page by URL and returns its content as text; HTML pages are converted to Markdown.

Usage:
- `url` must be a full http:// or https:// URL. Redirects within the same host are followed (at most 5); a redirect to another host is reported, and you fetch the new URL with another call.
- Use it to read documentation, an issue, a changelog, an API reference the user points to or that a search found.
- `prompt` (optional) says what you are looking for in the page; it is shown above the content.
- Pages are cut at 512 KB; very long results are saved to a file with a preview, which you can Read or Grep.
- It refuses local and internal addresses (localhost, private networks, link-local, cloud metadata) and non-http(s) schemes: it is for the public web only.
- It does not run JavaScript: a page that builds its content in the browser may come back nearly empty.
- It cannot log in: pages behind authentication fail or show a login page. Prefer an API or raw URL (e.g. raw.githubusercontent.com) when one exists."""


def redirect_notice(r: FetchResult, prompt: Any) -> str:
    """Claude Code's answer for a redirect to another host: the model fetches the target itself."""
    lines = [
        "REDIRECT DETECTED: The URL redirects to a location that was not fetched automatically.", "",
        f"Original URL: {r.url}", f"Redirect URL: {r.redirect_to}", f"Status: {r.status} {r.reason}".rstrip(), "",
        "To complete your request, I need to fetch content from the redirected URL. Please use WebFetch again "
        "with these parameters:", f'- url: "{r.redirect_to}"',
    ]
    if isinstance(prompt, str) and prompt:
        lines.append(f'- prompt: "{prompt}"')
    return "\n".join(lines)


class UrlRefused(ToolError):
    """The SSRF guard refused a URL (scheme, host or resolved address)."""


def _env_allows_private() -> bool:
    return (getenv("WEBFETCH_ALLOW_PRIVATE") or "").strip().lower() in ("1", "true", "yes", "on")


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_COMPAT = ipaddress.ip_network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, with the form's name: IPv4-mapped, IPv4-compatible,
    6to4 (2002::/16), Teredo (2001::/32: server and client), NAT64 (64:ff9b::/96 and 64:ff9b:1::/48)."""
    out: list[tuple[str, ipaddress.IPv4Address]] = []
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        out.append(("IPv4-mapped", ip.ipv4_mapped))
    elif ip in _COMPAT and int(ip) > 1:
        out.append(("IPv4-compatible", low32))
    if ip.sixtofour is not None:
        out.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        out.extend([("Teredo server", ip.teredo[0]), ("Teredo client", ip.teredo[1])])
    if ip in _NAT64 or ip in _NAT64_LOCAL:
        out.append(("NAT64", low32))
    return out


def address_refusal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why a resolved address may not be fetched, or None when it is a public address. An IPv6 address
    that carries an IPv4 one is judged by that address too (6to4 2002:7f00:1:: is 127.0.0.1)."""
    if isinstance(ip, ipaddress.IPv6Address):
        for form, v4 in embedded_ipv4(ip):
            why = address_refusal(v4)
            if why:
                return f"{why} ({form} form of {v4})"
        if ip in _NAT64_LOCAL:
            return "a local-use NAT64 address"
        if ip in _NAT64:  # inside ::/8 (reserved), but it is the public IPv4 address just checked
            return None
    text = str(ip)
    if text in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private network address"
    if ip.is_reserved or not ip.is_global:
        return "a reserved, non-public address"
    return None


_LEGACY_V4 = re.compile(r"(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}", re.I)


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host literal names, the legacy IPv4 forms included (`2130706433`, `0x7f.1`,
    `0177.0.0.1`: what inet_aton and so every resolver accepts), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        pass
    if _LEGACY_V4.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_url_syntax(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a fetchable URL, or UrlRefused that says why not."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"WebFetch refused {url!r}: not a valid URL ({exc}).") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = f"{scheme}://" if scheme else "no scheme"
        raise UrlRefused(
            f"WebFetch refused {url!r}: only http:// and https:// URLs can be fetched ({shown} is not allowed)."
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UrlRefused(f"WebFetch refused {url!r}: the URL has no host.")
    return scheme, host, port or (443 if scheme == "https" else 80)


def hostname_refusal(host: str) -> str | None:
    if host in BLOCKED_HOSTNAMES or host.endswith(".localhost"):
        return "a local host name" if "localhost" in host else "a cloud metadata host name"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0]).split("%", 1)[0]
        if addr not in seen:
            seen.append(addr)
    return seen


# -- HTML to Markdown ---------------------------------------------------------------------------

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "form",
              "button", "select", "input", "textarea", "link", "meta")


def html_to_markdown(html: str | bytes, base_url: str = "") -> tuple[str, str]:
    """(title, Markdown text) of an HTML document: scripts, styles and embedded objects dropped;
    relative links and images made absolute against `base_url`."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    class _Converter(MarkdownConverter):
        def convert_img(self, el: Any, text: str, parent_tags: Any = None, **kwargs: Any) -> str:
            alt = (el.attrs.get("alt") or "").strip()
            src = (el.attrs.get("src") or "").strip()
            if not src or src.startswith("data:"):
                return alt
            return f"![{alt}]({urljoin(base_url, src) if base_url else src})"

        def convert_a(self, el: Any, text: str, parent_tags: Any = None, **kwargs: Any) -> str:
            href = (el.get("href") or "").strip()
            if href.startswith(("javascript:", "data:")) or not href or href.startswith("#"):
                return text
            if base_url:
                el["href"] = urljoin(base_url, href)
            return str(super().convert_a(el, text, parent_tags=parent_tags, **kwargs))  # type: ignore[misc]

    soup = BeautifulSoup(html, "html.parser")
    title = ""
    if soup.title and soup.title.get_text():
        title = " ".join(soup.title.get_text().split())
    for tag in soup(_DROP_TAGS):
        tag.decompose()
    if soup.head is not None:
        soup.head.decompose()
    root = soup.body or soup
    text = _Converter(heading_style="ATX", bullets="-", escape_underscores=False, escape_asterisks=False).convert_soup(root)
    return title, tidy_text(text)


def tidy_text(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    out = "\n".join(lines)
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out.strip()


def _looks_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or (head.startswith(b"<") and b"<body" in body[:8192].lower())


# -- the fetch ----------------------------------------------------------------------------------


@dataclass
class FetchResult:
    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    truncated: bool
    charset: str | None
    redirects: list[str]
    redirect_to: str | None = None  # a redirect to another host, not followed


class WebFetchTool(Tool):
    name = "WebFetch"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1, "description": "The http(s) URL to fetch."},
            "prompt": {"type": "string", "description": "Optional: what to look for in the page."},
        },
        "required": ["url"],
        "additionalProperties": False,
    }
    max_result_chars = DEFAULT_MAX_RESULT_CHARS

    def __init__(
        self,
        *,
        allow_private: bool | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
    ):
        self._allow_private = allow_private
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.transport = transport
        self.resolver = resolver or system_resolver

    @property
    def allow_private(self) -> bool:
        return self._allow_private if self._allow_private is not None else _env_allows_private()

    read_only = True

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        """The domain (tools/web_domains.py): the gate asks per domain, "always" stores the domain rule."""
        target = domain_target(input.get("url"))
        return ("domain", target) if target else None

    def describe(self, input: dict[str, Any]) -> str:
        url = input.get("url")
        return f"WebFetch {url}" if isinstance(url, str) and url else "WebFetch"

    # The guard; a test may override `refusal_for_address` to let exactly its own server through.
    def refusal_for_address(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address, host: str, port: int) -> str | None:
        return None if self.allow_private else address_refusal(ip)

    async def check(self, url: str) -> tuple[str, str, int, str]:
        """Checks one hop; returns (scheme, host, port, address to connect to)."""
        scheme, host, port = check_url_syntax(url)
        if not self.allow_private:
            why = hostname_refusal(host)
            if why:
                raise UrlRefused(f"WebFetch refused {url}: {host} is {why}; only public web addresses can be fetched.")
        literal = literal_address(host)
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = await self.resolver(host, port)
            except (OSError, UnicodeError) as exc:
                raise ToolError(f"WebFetch could not resolve {host}: {exc}. Check the URL.") from None
            if not addresses:
                raise ToolError(f"WebFetch could not resolve {host}: no addresses. Check the URL.")
        for addr in addresses:
            ip = ipaddress.ip_address(addr)
            why = self.refusal_for_address(ip, host, port)
            if why:
                shown = host if literal is not None else f"{host} (resolves to {addr})"
                raise UrlRefused(
                    f"WebFetch refused {url}: {shown} is {why}; only public web addresses can be fetched."
                )
        return scheme, host, port, addresses[0]

    async def fetch(self, url: str, client: httpx.AsyncClient) -> FetchResult:
        redirects: list[str] = []
        current = url.strip()
        while True:
            scheme, host, port, addr = await self.check(current)
            request_url, headers, extensions = _pinned(current, scheme, host, port, addr)
            trace("webfetch.request", url=current, address=addr, hop=len(redirects))
            async with client.stream("GET", request_url, headers=headers, extensions=extensions) as resp:
                location = resp.headers.get("location")
                if resp.status_code in REDIRECT_CODES and location:
                    if len(redirects) >= self.max_redirects:
                        raise ToolError(
                            f"WebFetch stopped at {current}: more than {self.max_redirects} redirects "
                            f"({' -> '.join([*redirects, current])})."
                        )
                    target = urljoin(current, location)
                    if not same_site(current, target):  # another domain: another question, asked by a new call
                        return FetchResult(current, resp.status_code, resp.reason_phrase, "", b"", False, None,
                                           redirects, redirect_to=target)
                    redirects.append(current)
                    current = target
                    continue
                body = bytearray()
                truncated = False
                async for chunk in resp.aiter_bytes():
                    room = self.max_bytes - len(body)
                    if len(chunk) > room:
                        body += chunk[:room]
                        truncated = True
                        break
                    body += chunk
                return FetchResult(
                    url=current,
                    status=resp.status_code,
                    reason=resp.reason_phrase,
                    content_type=resp.headers.get("content-type", ""),
                    body=bytes(body),
                    truncated=truncated,
                    charset=resp.charset_encoding,
                    redirects=redirects,
                )

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        import httpx

        url = input["url"].strip()
        check_url_syntax(url)  # a bad scheme is refused before anything else happens
        async with httpx.AsyncClient(
            transport=self.transport,
            follow_redirects=False,
            timeout=httpx.Timeout(self.timeout),
            headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
            trust_env=False,
        ) as client:
            try:
                result = await abortable(asyncio.wait_for(self.fetch(url, client), self.timeout), ctx.abort,
                                         "WebFetch aborted.")
            except (TimeoutError, httpx.TimeoutException):
                raise ToolError(
                    f"WebFetch timed out after {self.timeout:g} s fetching {url}. The site may be slow or down; "
                    "try again later or another source."
                ) from None
            except httpx.HTTPError as exc:
                raise ToolError(f"WebFetch failed for {url}: {type(exc).__name__}: {exc or 'connection failed'}.") from None
        trace("webfetch.done", url=result.url, status=result.status, bytes=len(result.body), truncated=result.truncated)
        if result.redirect_to is not None:
            return ToolOutput(redirect_notice(result, input.get("prompt")))
        return self._render(result, input.get("prompt"))

    def _render(self, r: FetchResult, prompt: Any) -> ToolOutput:
        ctype = r.content_type.split(";", 1)[0].strip().lower()
        is_html = ctype in HTML_TYPES or ((not ctype or ctype == "text/plain") and _looks_html(r.body))
        is_text = is_html or not ctype or ctype.startswith(TEXT_TYPES) or ctype.endswith(("+json", "+xml"))
        size = f"{len(r.body):,} bytes" + (" (truncated)" if r.truncated else "")
        if not is_text:
            raise ToolError(
                f"WebFetch: {r.url} returned {ctype} ({size}), which is not text. WebFetch reads HTML and text "
                "pages only."
            )
        title = ""
        if is_html:
            data: str | bytes = r.body.decode(r.charset, errors="replace") if r.charset else r.body
            try:
                title, text = html_to_markdown(data, r.url)
            except Exception:  # a parser failure still returns the raw text
                text = tidy_text(r.body.decode(r.charset or "utf-8", errors="replace"))
        else:
            text = tidy_text(r.body.decode(_codec(r.charset), errors="replace"))
        head = [f"URL: {r.url}"]
        if r.redirects:
            head.append(f"Redirected from: {r.redirects[0]}")
        head.append(f"Status: {r.status} {r.reason}".rstrip())
        head.append(f"Content-Type: {ctype or 'unknown'}")
        if title:
            head.append(f"Title: {title}")
        if isinstance(prompt, str) and prompt.strip():
            head.append(f"Looking for: {prompt.strip()}")
        body = text or "(the page has no text content)"
        if r.truncated:
            body += f"\n\n[WebFetch: the page is larger than {self.max_bytes // 1024} KB; only the first {self.max_bytes // 1024} KB were read.]"
        out = "\n".join(head) + "\n\n" + body
        if r.status >= 400:
            return ToolOutput(f"WebFetch: HTTP {r.status} {r.reason} for {r.url}.\n\n" + out, is_error=True,
                              summary=f"HTTP {r.status}")
        return ToolOutput(out, summary=f"{r.status}, {size}")


async def abortable(coro: Awaitable[Any], abort: asyncio.Event, message: str) -> Any:
    """Awaits `coro` unless `abort` is set first: then cancels it and raises ToolError(message)."""
    task = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(abort.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise ToolError(message)
    return task.result()


def _codec(charset: str | None) -> str:
    if not charset:
        return "utf-8"
    try:
        "".encode(charset)
        return charset
    except LookupError:
        return "utf-8"


def _pinned(url: str, scheme: str, host: str, port: int, addr: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The request for `url` sent to the checked address: the IP in the URL, the name in Host and SNI."""
    parts = urlsplit(url)
    ip = ipaddress.ip_address(addr)
    netloc_ip = f"[{addr}]" if ip.version == 6 else addr
    default = 443 if scheme == "https" else 80
    netloc = netloc_ip if port == default else f"{netloc_ip}:{port}"
    path = parts.path or "/"
    target = f"{scheme}://{netloc}{path}" + (f"?{parts.query}" if parts.query else "")
    host_header = (f"[{host}]" if ":" in host else host) + ("" if port == default else f":{port}")
    extensions: dict[str, Any] = {}
    if scheme == "https":
        extensions["sni_hostname"] = host
    return target, {"Host": host_header}, extensions
