"""The MCP client against unusual but valid servers (tests/mcp/servers/, real processes over stdio):
awkward names, a 6 MB image, binary content, a server that dies at start, one that never answers, one that
changes its tools, one that asks for roots / elicitation / sampling, one with templates, progress and
prompts that use both roles. One manager is shared by the module (servers are slow to start)."""

from __future__ import annotations

import asyncio
import base64
import io
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.loop.mcp_hooks import make_elicitation_handler, make_sampling_handler
from agent.slash.mcp import status_lines
from services.config import Settings
from services.events import NoticeEvent
from services.images import MAX_IMAGE_BYTES
from services.mcp.config import ServerConfig
from services.mcp.content import expand_mentions
from services.mcp.manager import McpManager
from services.mcp.names import is_valid_tool_name
from services.mcp.prompts import find_prompt, parse_args, prompt_messages
from services.messages import assistant_message, text_block
from services.model_types import ModelRequest, ModelResponse
from tools.base import SessionState, ToolContext
from tools.mcp_tool import mcp_tools, sync_mcp_tools

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVERS = Path(__file__).resolve().parent / "servers"
NAMES = ["awkward", "dies", "changing", "asks", "templates"]


def stdio(name: str, script: str = "") -> ServerConfig:
    return ServerConfig(name, "stdio", "test", command=sys.executable, args=[str(SERVERS / f"{script or name}.py")])


class Env:
    def __init__(self, root: Path, manager: McpManager):
        self.root = root
        self.manager = manager

    def ctx(self, tool_use_id: str = "toolu_1") -> ToolContext:
        return ToolContext(session=SessionState(cwd=self.root), project_root=self.root, tool_use_id=tool_use_id,
                           session_dir=self.root / "session")

    def tool(self, server: str, real: str) -> Any:
        public = self.manager.public_names()[(server, real)]
        return next(t for t in mcp_tools(self.manager) if t.name == public)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    root = tmp_path_factory.mktemp("mcp-client")
    extra = root / "added"
    extra.mkdir()
    configs = {n: stdio(n) for n in NAMES}
    environ = {"MCP_TIMEOUT": "90000", "MCP_TOOL_TIMEOUT": "60000"}
    manager = McpManager(configs, root, environ, log_dir=root / "logs", extra_roots=[extra])
    await manager.start()
    try:
        yield Env(root, manager)
    finally:
        await manager.close()


async def test_awkward_names_are_valid_unique_and_map_back(env: Env) -> None:
    s = env.manager.servers["awkward"]
    assert s.state == "connected", s.error
    names = env.manager.public_names()
    publics = [names[("awkward", t.name)] for t in s.tools]
    assert len(set(publics)) == len(publics) == len(s.tools)
    assert all(is_valid_tool_name(n) for n in publics)
    assert names[("awkward", "get/file")] == "mcp__awkward__get_file"
    out = await env.tool("awkward", "get/file").call({}, env.ctx())
    assert out.content == [{"type": "text", "text": "called get/file"}]
    out = await env.tool("awkward", "a b").call({}, env.ctx())
    assert out.content == [{"type": "text", "text": "called a b"}]
    # /mcp shows the real name next to a changed public one.
    text = "\n".join(line for line, _ in status_lines(env.manager))
    assert "(real name: get/file)" in text and "(real name: café)" in text


async def test_a_6_mb_image_is_scaled_to_the_read_limit(env: Env) -> None:
    out = await env.tool("awkward", "huge_image").call({}, env.ctx())
    first, image = out.content
    size = int(first["text"].split()[2])
    assert size > 6_000_000
    data = base64.b64decode(image["source"]["data"])
    assert len(data) <= MAX_IMAGE_BYTES and image["source"]["media_type"] == "image/jpeg"
    from PIL import Image

    assert max(Image.open(io.BytesIO(data)).size) <= 2000


async def test_audio_and_embedded_blobs_are_saved_with_a_pointer(env: Env) -> None:
    out = await env.tool("awkward", "sound").call({}, env.ctx("toolu_snd"))
    audio, blob = (b["text"] for b in out.content)
    assert "audio/wav" in audio and "saved to" in audio
    path = Path(audio.split("saved to ")[1].rstrip("]"))
    assert path.parent == env.root / "session" / "tool-results" and path.read_bytes().startswith(b"RIFF")
    assert path.stat().st_mode & 0o777 == 0o600
    blob_path = Path(blob.split("saved to ")[1].rstrip("]"))
    assert blob_path.read_bytes() == bytes(range(256)) and "file:///blob.bin" in blob


async def test_a_server_that_dies_at_start_says_why(env: Env) -> None:
    s = env.manager.servers["dies"]
    assert s.state == "failed"
    assert "fatal: DATABASE_URL is not set" in s.error
    assert s.log_path is not None and "fatal: DATABASE_URL is not set" in s.log_path.read_text()
    assert any('"dies" failed to connect' in w and "DATABASE_URL" in w for w in env.manager.warnings)


async def test_a_changed_tool_list_reaches_the_tool_list_at_the_end(env: Env) -> None:
    tools = mcp_tools(env.manager)
    before = [t.name for t in tools]
    version = env.manager.version
    out = await env.tool("changing", "grow").call({}, env.ctx())
    assert out.content[0]["text"] == "grown"
    for _ in range(200):
        if env.manager.version > version:
            break
        await asyncio.sleep(0.05)
    notices = [text for _, text in env.manager.take_notices()]
    assert any('"changing" changed its tools: +fresh' in n for n in notices), notices
    assert sync_mcp_tools(tools, env.manager)
    after = [t.name for t in tools]
    resource_tools = [n for n in before if not n.startswith("mcp__")]
    assert after[: len(before) - len(resource_tools)] == [n for n in before if n.startswith("mcp__")]
    assert "mcp__changing__fresh" in after[len(before) - len(resource_tools):]
    assert not sync_mcp_tools(tools, env.manager)  # nothing more to do


async def test_roots_are_the_working_directory_and_added_ones(env: Env) -> None:
    out = await env.tool("asks", "where").call({}, env.ctx())
    roots = out.content[0]["text"].splitlines()
    assert roots == [env.root.resolve().as_uri(), (env.root / "added").resolve().as_uri()]
    log = env.manager.servers["asks"].log_path.read_text()
    assert "log info" in log and "listed roots" in log


async def test_elicitation_asks_with_a_form_and_cancels_without_one(env: Env) -> None:
    out = await env.tool("asks", "ask_name").call({}, env.ctx())
    assert out.content[0]["text"] == "no answer: cancel"  # nobody to ask, as Claude Code 2.1.332 answers
    answers = iter(["Ada", "not a number", "41"])
    questions: list[str] = []
    said: list[str] = []

    async def ask_text(q: str) -> str | None:
        questions.append(q)
        return next(answers)

    env.manager.handlers.elicit = make_elicitation_handler(ask_text, said.append)
    try:
        out = await env.tool("asks", "ask_name").call({}, env.ctx())
    finally:
        env.manager.handlers.elicit = None
    assert out.content[0]["text"] == "hello Ada (41)"
    assert said[0] == 'MCP server "asks" asks: Who are you?' and any("Not accepted" in s for s in said)
    assert questions[0].startswith("Name") and "(integer)" in questions[1]


class _Engine:
    """What the sampling handler uses of an engine."""

    def __init__(self, model: Any, mode: str = "default"):
        from services.usage import Usage

        self.config = type("C", (), {"model": "claude-sonnet-4-5"})()
        self.deps = QueryDeps(call_model=model)
        self.usage = Usage()
        self.gate = type("G", (), {"mode": mode})()


async def test_sampling_asks_runs_the_session_model_and_counts_the_cost(env: Env) -> None:
    requests: list[ModelRequest] = []

    async def model(request: ModelRequest) -> AsyncIterator[Any]:
        requests.append(request)
        yield ModelResponse(assistant_message([text_block("short")],
                                              usage={"input_tokens": 1000, "output_tokens": 10}), "end_turn")

    said: list[str] = []
    engine = _Engine(model)
    # One-shot (nobody to ask): declined, the model never called.
    env.manager.handlers.sample = make_sampling_handler(engine, None, said.append)
    out = await env.tool("asks", "summarise").call({"text": "long text"}, env.ctx())
    assert "sampling refused" in out.content[0]["text"] and requests == []
    # The REPL asks; "no" refuses, "yes" runs the session's model and adds its usage.
    answers = iter([False, True])

    async def ask(q: str) -> bool:
        assert 'MCP server "asks" asks the model' in q and "Summarise: long text" in q
        return next(answers)

    env.manager.handlers.sample = make_sampling_handler(engine, ask, said.append)
    try:
        out = await env.tool("asks", "summarise").call({"text": "long text"}, env.ctx())
        assert "sampling refused" in out.content[0]["text"]
        out = await env.tool("asks", "summarise").call({"text": "long text"}, env.ctx())
    finally:
        env.manager.handlers.sample = None
    assert out.content[0]["text"] == "summary: short"
    assert requests[0].messages == [{"role": "user", "content": [text_block("Summarise: long text")]}]
    assert requests[0].model == "claude-sonnet-4-5" and requests[0].tools == []
    assert engine.usage.input_tokens == 1000
    assert any(s.startswith('MCP sampling for "asks": 1000 in / 10 out tokens, $0.') for s in said)


async def test_instructions_are_in_the_system_prompt_byte_for_byte(env: Env, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    text = env.manager.instructions()
    assert text.startswith("# MCP Server Instructions") and "## asks\nCall `where` before touching files." in text
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    opts = AppOptions(cwd=env.root, settings=Settings(model="claude-sonnet-4-5"))
    engine = build_engine(opts, deps=QueryDeps(call_model=None), mcp=env.manager)  # type: ignore[arg-type]
    try:
        first, second = engine.prompt_source(), engine.prompt_source()
        assert first == second and first.endswith(text)
    finally:
        engine.close()


async def test_templates_complete_and_mentions_read_them(env: Env) -> None:
    (t,) = env.manager.templates()
    assert (t.server, t.uri) == ("templates", "notes://{topic}")
    assert await env.manager.complete_resource("templates", "notes://{topic}", "topic", "al") == ["alpha", "alps"]
    out = await expand_mentions(env.manager, "see @templates:notes://beta please")
    assert "note about beta" in out.messages[0]["content"][0]["text"]
    assert out.notices == ["Mounted MCP resource @templates:notes://beta (15 chars)"]


async def test_progress_reaches_the_front_end_and_the_tool_line(env: Env) -> None:
    seen: list[tuple[str, str]] = []
    env.manager.handlers.progress = lambda tool_use_id, text: seen.append((tool_use_id, text))
    try:
        out = await env.tool("templates", "slow").call({"steps": 3}, env.ctx("toolu_prog"))
    finally:
        env.manager.handlers.progress = None
    assert out.content[0]["text"] == "done 3"
    assert ("toolu_prog", "3/3 step 3") in seen and len(seen) == 3
    assert out.summary.endswith("progress 3/3 step 3")


async def test_prompts_keep_roles_and_load_resources_and_mentions(env: Env) -> None:
    info = find_prompt(env.manager, "templates", "review")
    assert info.required == ["topic"]
    assert parse_args('"alpha release" very formal', info) == {"topic": "alpha release", "tone": "very formal"}
    args = parse_args('alpha tone="very formal"', info)
    assert args == {"topic": "alpha", "tone": "very formal"}
    out = await prompt_messages(env.manager, "templates", "review", args)
    roles = [m["role"] for m in out.messages]
    # The mentioned resource first, then the prompt's own turns with their roles.
    assert roles == ["user", "user", "assistant", "user"]
    assert "the intro document" in out.messages[0]["content"][0]["text"]
    assert out.messages[1]["content"][0]["text"] == "Review alpha in a very formal tone. See @templates:docs://intro"
    assert out.messages[2]["content"] == [text_block("I will start with the notes.")]
    assert out.messages[3]["content"][0]["text"] == "embedded note on alpha"
    assert out.notices == ["Mounted MCP resource @templates:docs://intro (18 chars)",
                           "Mounted MCP resource @templates:notes://alpha (22 chars)"]


async def test_tools_of_a_late_server_join_the_next_model_call(env: Env, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real loop: the first request goes out before a server is ready; the next one has its
    tools at the end of the list, and a notice says so."""
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    late = McpManager({"late": stdio("late", "changing")}, env.root, {"MCP_TIMEOUT": "90000"})
    late.start_background()
    seen: list[list[str]] = []

    async def model(request: ModelRequest) -> AsyncIterator[Any]:
        seen.append([t["name"] for t in request.tools])
        if len(seen) == 1:
            await late.wait_ready()  # the model "thinks" while the server starts
            yield ModelResponse(assistant_message([text_block("Looking."), {
                "type": "tool_use", "id": "toolu_a", "name": "Glob", "input": {"pattern": "*.nothing"}}]), "tool_use")
        else:
            yield ModelResponse(assistant_message([text_block("done")]), "end_turn")

    opts = AppOptions(cwd=env.root, settings=Settings(model="claude-sonnet-4-5"))
    engine = build_engine(opts, deps=QueryDeps(call_model=model), mcp=late)
    try:
        events = [ev async for ev in engine.run_turn("go")]
    finally:
        engine.close()
        await late.close()
    first, second = seen
    assert not [n for n in first if n.startswith("mcp__")]
    assert second[: len(first)] == first and second[len(first):] == ["mcp__late__grow", "mcp__late__grow_prompt", "ListMcpResources", "ReadMcpResource"]
    notices = [ev.text for ev in events if isinstance(ev, NoticeEvent)]
    assert 'MCP server "late" connected: 2 tools' in notices


async def test_mentions_complete_servers_resources_and_template_values(env: Env) -> None:
    from agent.slash.mcp import mention_completions

    servers = [t for t, _ in await mention_completions(env.manager, "t")]
    assert servers == ["templates:"]
    texts = [t for t, _ in await mention_completions(env.manager, "templates:")]
    assert "templates:docs://intro" in texts and "templates:notes://" in texts
    texts = [t for t, _ in await mention_completions(env.manager, "templates:notes://al")]
    assert texts == ["templates:notes://alpha", "templates:notes://alps"]
    assert await mention_completions(env.manager, "ghost:x") == []


async def test_progress_is_drawn_on_the_running_tool_line(env: Env) -> None:
    from agent.repl.render import Renderer, make_console
    from services.events import ToolEndEvent, ToolStartEvent

    buf = io.StringIO()
    renderer = Renderer(make_console(file=buf, width=100, force_terminal=False, color_system=None), {}, env.root)
    renderer.event(ToolStartEvent("toolu_p", "mcp__templates__slow", {"steps": 2}))
    env.manager.handlers.progress = renderer.progress
    try:
        out = await env.tool("templates", "slow").call({"steps": 2}, env.ctx("toolu_p"))
    finally:
        env.manager.handlers.progress = None
    renderer.event(ToolEndEvent("toolu_p", "mcp__templates__slow", True, out.summary))
    text = buf.getvalue()
    assert "· 1/2 step 1" in text and "· 2/2 step 2" in text
    assert text.strip().splitlines()[-1].startswith("● mcp__templates__slow")
    assert "progress 2/2 step 2" in text.strip().splitlines()[-1]


async def test_the_repl_completer_offers_mcp_mentions(env: Env) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from agent.repl.session import ReplCompleter
    from agent.slash.router import CommandRouter

    completer = ReplCompleter(CommandRouter(), env.root)
    completer.mcp = env.manager
    doc = Document("read @templates:notes://alp")
    got = [c.text async for c in completer.get_completions_async(doc, CompleteEvent())]
    assert got == ["@templates:notes://alpha", "@templates:notes://alps"]


async def test_no_tool_can_break_a_request(env: Env) -> None:
    essay = env.tool("awkward", "essay")
    assert len(essay.description) < 2100 and essay.description.endswith("… [truncated]")
    scalar = env.tool("awkward", "scalar")
    assert scalar.input_schema == {"type": "object", "properties": {}}


async def test_an_http_server_that_restarts_is_reconnected_once_on_the_next_call(tmp_path: Path) -> None:
    import subprocess

    from tests.mcp.test_mcp_servers import free_port, wait_for_port

    port = free_port()

    def serve() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(SERVERS / "tour.py"), "http", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import time

        wait_for_port(port, proc, time.monotonic() + 90)
        return proc

    proc = serve()
    cfg = ServerConfig("web", "http", "test", url=f"http://127.0.0.1:{port}/mcp")
    manager = McpManager({"web": cfg}, tmp_path, {"MCP_TIMEOUT": "60000"})
    try:
        await manager.start()
        assert (await manager.call_tool("web", "echo", {"message": "a"})).content[0].text == "got:a"
        proc.kill()
        proc.wait()
        proc = serve()  # a new process: the old session id means nothing to it
        manager.take_notices()
        out = await manager.call_tool("web", "echo", {"message": "b"})
        assert out.content[0].text == "got:b"
        assert any('"web" restarted after' in text for _, text in manager.take_notices())
    finally:
        await manager.close()
        proc.kill()
        proc.wait()


async def test_a_server_that_never_answers_times_out_and_closing_never_hangs(tmp_path: Path) -> None:
    silent = ServerConfig("silent", "stdio", "test", command=sys.executable, args=[str(SERVERS / "hang.py"), "silent"])
    manager = McpManager({"silent": silent}, tmp_path, {"MCP_TIMEOUT": "1000"})
    manager.start_background()
    assert manager.pending() == ["silent"]  # start_background returned at once
    await manager.wait_ready()  # settles at the timeout, before the transport is torn down
    s = manager.servers["silent"]
    assert s.state == "failed" and "timed out after 1 s connecting (MCP_TIMEOUT)" in s.error
    assert [k for k, _ in manager.take_notices()] == ["warning"]
    await asyncio.wait_for(manager.close(), 30)  # closing during the teardown (regression: it hung)
    # Closed while still starting: closed, not a failure, nothing to report.
    manager = McpManager({"silent": silent}, tmp_path, {"MCP_TIMEOUT": "60000"})
    manager.start_background()
    await asyncio.sleep(0.5)
    await asyncio.wait_for(manager.close(), 30)
    assert manager.servers["silent"].state == "closed" and manager.take_notices() == []


async def test_a_changed_prompt_list_registers_the_new_slash_command(env: Env) -> None:
    from agent.slash.mcp import register_mcp_commands
    from agent.slash.router import CommandRouter

    router = CommandRouter()
    register_mcp_commands(router, env.manager)
    assert router.get("changing:later") is None
    version = env.manager.version
    out = await env.tool("changing", "grow_prompt").call({}, env.ctx())
    assert out.content[0]["text"] == "prompt added"
    for _ in range(200):
        if env.manager.version > version and router.get("changing:later") is not None:
            break
        await asyncio.sleep(0.05)
    assert router.get("changing:later").help == "(MCP) Added later."


async def test_multiple_choice_fields_take_comma_separated_answers() -> None:
    from types import SimpleNamespace as NS

    answers = iter(["Rachel, Gunther", "Rachel, Joey"])
    said: list[str] = []

    async def ask_text(q: str) -> str | None:
        return next(answers)

    elicit = make_elicitation_handler(ask_text, said.append)
    schema = {"type": "object", "properties": {
        "friends": {"type": "array", "items": {"type": "string", "enum": ["Rachel", "Joey", "Ross"]}}}}
    result = await elicit("srv", NS(mode="form", message="Pick", requestedSchema=schema))
    assert (result.action, result.content) == ("accept", {"friends": ["Rachel", "Joey"]})
    assert "Not accepted: choose from Rachel, Joey, Ross" in said
