"""WebSearch: a web search through Brave Search or Tavily, returning titles, URLs and snippets.

The adapter is `WEB_SEARCH_ADAPTER` (`brave` | `tavily`) when set, otherwise the one whose key is
present (`BRAVE_API_KEY` / `BRAVE_SEARCH_API_KEY`, then `TAVILY_API_KEY`). With no usable key the
tool is not enabled, so it is never offered to the model (rather than failing when called).
Domain filters match a host name and its subdomains. Read-only, abortable, 30 s per search; the
HTTP transport is injectable (tests use `httpx.MockTransport`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from services.config import agent_environ
from services.trace import trace
from tools.base import Tool, ToolContext, ToolError, ToolOutput

if TYPE_CHECKING:  # httpx is imported when a request is made: start-up stays light
    import httpx
from tools.web_fetch import abortable

DEFAULT_RESULTS = 8
MAX_RESULTS = 20
DEFAULT_TIMEOUT = 30.0
BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
TAVILY_ENDPOINT = "https://api.tavily.com/search"
MAX_SNIPPET_CHARS = 500

DESCRIPTION = """Searches the web and returns the top results: title, URL and a snippet each.

Usage:
- Use it for information beyond your knowledge or that may have changed: current versions, recent releases, error messages, documentation you do not know by heart.
- Then use WebFetch on the most relevant URLs to read them; snippets are short and may be stale.
- `allowed_domains` keeps only results from those sites (subdomains included); `blocked_domains` drops results from them.
- `num_results` is 1 to 20 (default 8).
- When you use results in your answer, cite the URLs you relied on."""


@dataclass
class SearchResult:
    title: str
    url: str
    snippet: str = ""


class SearchConfigError(ToolError):
    """The search adapter cannot run (unknown adapter, no key)."""


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def _norm_domain(d: str) -> str:
    d = d.strip().lower()
    if "://" in d:
        d = _host(d)
    return d.split("/", 1)[0].lstrip("*.").rstrip(".").removeprefix("www.") if d else ""


def domain_matches(url: str, domains: list[str]) -> bool:
    host = _host(url)
    for d in domains:
        d = _norm_domain(d)
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


def filter_results(
    results: list[SearchResult], allowed: list[str], blocked: list[str], limit: int
) -> list[SearchResult]:
    out: list[SearchResult] = []
    seen: set[str] = set()
    for r in results:
        if not r.url or r.url in seen:
            continue
        if allowed and not domain_matches(r.url, allowed):
            continue
        if blocked and domain_matches(r.url, blocked):
            continue
        seen.add(r.url)
        out.append(r)
        if len(out) >= limit:
            break
    return out


class SearchAdapter:
    name = ""
    key_vars: tuple[str, ...] = ()

    def __init__(self, api_key: str, env: Mapping[str, str] | None = None):
        self.api_key = api_key
        self.env = env if env is not None else agent_environ()

    async def search(
        self, client: httpx.AsyncClient, query: str, count: int, allowed: list[str], blocked: list[str]
    ) -> list[SearchResult]:
        raise NotImplementedError


def _str(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _http_error(service: str, resp: httpx.Response) -> ToolError:
    detail = _str(resp.text)[:300]
    hint = ""
    if resp.status_code in (401, 403):
        hint = " Check the API key."
    elif resp.status_code == 429:
        hint = " Rate limited: wait before searching again."
    return ToolError(f"{service} HTTP {resp.status_code}.{hint}" + (f" {detail}" if detail else ""))


class BraveAdapter(SearchAdapter):
    name = "brave"
    key_vars = ("BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY")

    async def search(
        self, client: httpx.AsyncClient, query: str, count: int, allowed: list[str], blocked: list[str]
    ) -> list[SearchResult]:
        q = query
        sites = [_norm_domain(d) for d in allowed if _norm_domain(d)]
        if sites:
            q += " " + " OR ".join(f"site:{d}" for d in sites)
        # Ask for more when filtering client-side, so that the filter still leaves enough.
        want = min(MAX_RESULTS, count * 2) if (allowed or blocked) else count
        resp = await client.get(
            self.env.get("BRAVE_ENDPOINT_URL") or BRAVE_ENDPOINT,
            params={"q": q, "count": want},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        if resp.status_code != 200:
            raise _http_error("Brave Search", resp)
        data = resp.json()
        items = ((data or {}).get("web") or {}).get("results") or []
        return [
            SearchResult(_str(i.get("title")), str(i.get("url") or ""), _str(i.get("description")))
            for i in items
            if isinstance(i, dict)
        ]


class TavilyAdapter(SearchAdapter):
    name = "tavily"
    key_vars = ("TAVILY_API_KEY",)

    async def search(
        self, client: httpx.AsyncClient, query: str, count: int, allowed: list[str], blocked: list[str]
    ) -> list[SearchResult]:
        body: dict[str, Any] = {"query": query, "search_depth": "basic", "max_results": count}
        if allowed:
            body["include_domains"] = [_norm_domain(d) for d in allowed if _norm_domain(d)]
        if blocked:
            body["exclude_domains"] = [_norm_domain(d) for d in blocked if _norm_domain(d)]
        resp = await client.post(
            self.env.get("TAVILY_ENDPOINT_URL") or TAVILY_ENDPOINT,
            json=body,
            headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
        )
        if resp.status_code != 200:
            raise _http_error("Tavily Search", resp)
        data = resp.json()
        items = (data or {}).get("results") or []
        return [
            SearchResult(_str(i.get("title")), str(i.get("url") or ""), _str(i.get("content")))
            for i in items
            if isinstance(i, dict)
        ]


ADAPTERS: dict[str, type[SearchAdapter]] = {"brave": BraveAdapter, "tavily": TavilyAdapter}


def _key(cls: type[SearchAdapter], env: Mapping[str, str]) -> str:
    for var in cls.key_vars:
        value = (env.get(var) or "").strip()
        if value:
            return value
    return ""


def adapter_name(env: Mapping[str, str]) -> str:
    """The adapter to use: WEB_SEARCH_ADAPTER when set, else the one whose key is present (brave first)."""
    explicit = (env.get("WEB_SEARCH_ADAPTER") or "").strip().lower()
    if explicit:
        return explicit
    if not _key(BraveAdapter, env) and _key(TavilyAdapter, env):
        return "tavily"
    return "brave"


def adapter_from_env(env: Mapping[str, str] | None = None) -> SearchAdapter:
    """The configured adapter, or SearchConfigError saying which variable is missing."""
    env = env if env is not None else agent_environ()
    name = adapter_name(env)
    cls = ADAPTERS.get(name)
    if cls is None:
        raise SearchConfigError(
            f"WEB_SEARCH_ADAPTER={name!r} is not a known search adapter; use one of {', '.join(ADAPTERS)}."
        )
    key = _key(cls, env)
    if not key:
        raise SearchConfigError(
            f"WebSearch ({name}) needs {' or '.join(cls.key_vars)} in the environment or .env."
        )
    return cls(key, env)


def format_results(query: str, results: list[SearchResult]) -> str:
    if not results:
        return f"No results for: {query}"
    lines = [f'Web search results for "{query}":', ""]
    for n, r in enumerate(results, 1):
        lines.append(f"{n}. {r.title or r.url}")
        lines.append(f"   {r.url}")
        if r.snippet:
            snippet = r.snippet if len(r.snippet) <= MAX_SNIPPET_CHARS else r.snippet[: MAX_SNIPPET_CHARS - 1] + "…"
            lines.append(f"   {snippet}")
        lines.append("")
    return "\n".join(lines).rstrip()


class WebSearchTool(Tool):
    name = "WebSearch"
    description = DESCRIPTION
    input_schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "The search query."},
            "allowed_domains": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only return results from these domains (subdomains included).",
            },
            "blocked_domains": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Never return results from these domains.",
            },
            "num_results": {
                "type": "integer",
                "minimum": 1,
                "description": f"How many results (1 to {MAX_RESULTS}, default {DEFAULT_RESULTS}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    max_result_chars = 30_000

    def __init__(
        self,
        adapter: SearchAdapter | None = None,
        *,
        env: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ):
        self.transport = transport
        self.timeout = timeout
        self.config_error = ""
        if adapter is None:
            try:
                adapter = adapter_from_env(env)
            except SearchConfigError as exc:
                self.config_error = str(exc)
        self.adapter = adapter

    def is_enabled(self) -> bool:
        return self.adapter is not None

    read_only = True

    def permission_target(self, input: dict[str, Any]) -> tuple[str, str] | None:
        return None

    async def call(self, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if self.adapter is None:
            raise SearchConfigError(self.config_error or "WebSearch is not configured.")
        query = input["query"].strip()
        if not query:
            raise ToolError("query is empty. Pass what to search for.")
        count = max(1, min(MAX_RESULTS, int(input.get("num_results") or DEFAULT_RESULTS)))
        allowed = [d for d in input.get("allowed_domains") or [] if isinstance(d, str) and d.strip()]
        blocked = [d for d in input.get("blocked_domains") or [] if isinstance(d, str) and d.strip()]
        trace("websearch.request", adapter=self.adapter.name, query_len=len(query), count=count)
        import httpx

        async with httpx.AsyncClient(transport=self.transport, timeout=httpx.Timeout(self.timeout)) as client:
            try:
                raw = await abortable(
                    asyncio.wait_for(self.adapter.search(client, query, count, allowed, blocked), self.timeout),
                    ctx.abort,
                    "WebSearch aborted.",
                )
            except (TimeoutError, httpx.TimeoutException):
                raise ToolError(f"WebSearch timed out after {self.timeout:g} s. Try again or rephrase.") from None
            except httpx.HTTPError as exc:
                raise ToolError(f"WebSearch failed: {type(exc).__name__}: {exc or 'connection failed'}.") from None
            except ValueError as exc:  # a body that is not JSON
                raise ToolError(f"WebSearch failed: the {self.adapter.name} response was not JSON ({exc}).") from None
        results = filter_results(raw, allowed, blocked, count)
        trace("websearch.done", adapter=self.adapter.name, results=len(results))
        return ToolOutput(format_results(query, results), summary=f"{len(results)} results")
