"""The shared slash-command router and its built-in commands, without a REPL around them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from agent.loop.deps import QueryDeps
from agent.loop.factory import AppOptions, build_engine
from agent.model.scripted import ScriptedModel, reply
from agent.repl.render import make_console
from agent.repl.session import ReplCompleter
from agent.slash.router import CommandContext, CommandResult, CommandRouter, context_percent, default_router
from services.config import Settings
from services.messages import assistant_message, text_block, user_message


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from services import models

    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(models, "_learned", {})  # limits /model learns last for the process only
    proj = tmp_path / "proj"
    proj.mkdir()

    def make(model: Any = None) -> tuple[CommandContext, io.StringIO]:
        opts = AppOptions(cwd=proj, settings=Settings(model="claude-sonnet-4-5"), allowed_tools=["Bash(git status:*)"])
        engine = build_engine(opts, deps=QueryDeps(call_model=model or ScriptedModel([])))
        buf = io.StringIO()
        console = make_console(file=buf, width=120, force_terminal=False, color_system=None)
        return CommandContext(engine, console, proj, default_router(), opts=opts), buf

    return make


def test_register_aliases_and_names() -> None:
    router = CommandRouter()
    calls = []
    router.register("deploy", lambda ctx, args: calls.append(args), "ship it", aliases=("ship",))
    router.register("/srv:review", lambda ctx, args: None, "an MCP prompt")
    assert router.get("ship") is router.get("deploy")
    assert router.get("/srv:review") is not None
    assert {"deploy", "ship", "srv:review"} <= set(router.names())
    router.unregister("deploy")
    assert router.get("ship") is None


def test_split_and_is_command() -> None:
    assert CommandRouter.is_command("/help")
    assert CommandRouter.is_command("  /compact keep the API notes")
    assert not CommandRouter.is_command("/")
    assert not CommandRouter.is_command("hello /help")
    assert CommandRouter.split("/compact keep the API notes ") == ("compact", "keep the API notes")
    assert CommandRouter.split("/model") == ("model", "")


async def test_custom_command_runs_sync_and_async(env) -> None:
    ctx, buf = env()
    seen = []

    async def skill(c: CommandContext, args: str) -> CommandResult:
        seen.append(args)
        return CommandResult(run_turn=(args, [user_message("skill body")]))

    ctx.router.register("my-skill", skill, "a skill")
    result = await ctx.router.dispatch("/my-skill do the thing", ctx)
    assert seen == ["do the thing"]
    assert result.run_turn is not None and result.run_turn[0] == "do the thing"
    await ctx.router.dispatch("/help", ctx)
    assert "/my-skill" in buf.getvalue() and "a skill" in buf.getvalue()


async def test_unknown_commands(env) -> None:
    ctx, buf = env()
    r1 = await ctx.router.dispatch("/frobnicate now", ctx)
    r2 = await ctx.router.dispatch("/github:review 12", ctx)
    assert not r1.exit and r1.run_turn is None and r2.run_turn is None
    out = buf.getvalue()
    assert "Unknown command: /frobnicate. Type /help" in out
    assert "Unknown command: /github:review (no MCP prompt by that name)" in out


async def test_exit_and_quit(env) -> None:
    ctx, _ = env()
    assert (await ctx.router.dispatch("/exit", ctx)).exit
    assert (await ctx.router.dispatch("/quit", ctx)).exit


async def test_model_show_and_set(env) -> None:
    ctx, buf = env()
    await ctx.router.dispatch("/model", ctx)
    assert "Current model: Sonnet 4.5 (claude-sonnet-4-5)" in buf.getvalue()
    assert "Known models: opus, sonnet, haiku" in buf.getvalue()
    await ctx.router.dispatch("/model claude-haiku-4-5", ctx)
    assert ctx.engine.config.model == "claude-haiku-4-5"
    assert ctx.opts.settings.model == "claude-haiku-4-5"
    assert "Set model to Haiku 4.5 (claude-haiku-4-5)" in buf.getvalue()


async def test_model_aliases_retirement_and_the_window_that_follows(env, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_DEFAULT_OPUS_MODEL", raising=False)
    monkeypatch.delenv("CONTEXT_WINDOW_TOKENS", raising=False)
    ctx, buf = env()
    assert ctx.engine.config.compact.context_window_tokens == 200_000  # Sonnet 4.5's window
    await ctx.router.dispatch("/model opus", ctx)
    assert ctx.engine.config.model == "claude-opus-5-5"
    assert ctx.engine.config.compact.context_window_tokens == 1_000_000
    await ctx.router.dispatch("/model claude-sonnet-4-5", ctx)  # retired: said, and still taken
    assert ctx.engine.config.model == "claude-sonnet-4-5"
    out = buf.getvalue()
    assert out.count("⚠ Claude Sonnet 4.5 was retired on November 30, 2026. Consider switching to a newer "
                     "model.") == 1


async def test_model_outside_the_catalog_is_checked_against_the_endpoint(env, fake_env) -> None:
    fake_env.serve_models({"my-gateway-model": {"max_input_tokens": 300_000, "max_tokens": 16_000}})
    ctx, buf = env()
    await ctx.router.dispatch("/model claude-opuss-5-5", ctx)  # a typo: the Models API does not list it
    assert ctx.engine.config.model == "claude-sonnet-4-5"
    assert ("Model \"claude-opuss-5-5\" is not a recognized model id. Did you mean 'claude-opus-5-5'?"
            in buf.getvalue())
    assert "Known models:" in buf.getvalue()
    await ctx.router.dispatch("/model my-gateway-model", ctx)  # the gateway's own name, with its limits
    assert ctx.engine.config.model == "my-gateway-model"
    assert ctx.engine.config.compact.context_window_tokens == 300_000
    from services.models import default_max_tokens

    assert default_max_tokens("my-gateway-model") == 16_000
    assert [r.path for r in fake_env.get_requests] == ["/v1/models/claude-opuss-5-5", "/v1/models",
                                                        "/v1/models/my-gateway-model"]
    assert fake_env.requests == []  # no model call was spent on the check


async def test_model_check_probes_an_endpoint_without_a_models_api(env, fake_env) -> None:
    fake_env.http_error(404, "not_found_error", "model: no-such-model")
    fake_env.text("")  # the probe for a name the endpoint serves
    ctx, buf = env()
    await ctx.router.dispatch("/model no-such-model", ctx)
    assert ctx.engine.config.model == "claude-sonnet-4-5" and "is not a recognized model id" in buf.getvalue()
    await ctx.router.dispatch("/model gw-llama", ctx)
    assert ctx.engine.config.model == "gw-llama"
    probe = fake_env.requests[-1].body
    assert probe["model"] == "gw-llama" and probe["max_tokens"] == 1
    assert "doesn't recognize the model \"gw-llama\"" in buf.getvalue()  # the window is still assumed


async def test_model_check_that_cannot_tell_takes_the_name_with_a_caution(env, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    ctx, buf = env()
    await ctx.router.dispatch("/model unreachable-gw-model", ctx)
    assert ctx.engine.config.model == "unreachable-gw-model"
    assert "Could not check unreachable-gw-model against the endpoint" in buf.getvalue()


async def test_permissions_show_and_switch(env) -> None:
    ctx, buf = env()
    ctx.engine.gate.session_rules.append(("Write", "a.txt"))
    await ctx.router.dispatch("/permissions", ctx)
    out = buf.getvalue()
    assert "Permission mode: default" in out
    assert "allow  Bash(git status:*)  [cliArg: command line]" in out
    assert "allow  Write(a.txt)  [session: this session]" in out
    await ctx.router.dispatch("/permissions acceptEdits", ctx)
    assert ctx.engine.gate.mode == "acceptEdits"
    await ctx.router.dispatch("/permissions yolo", ctx)
    assert ctx.engine.gate.mode == "acceptEdits"
    assert "Unknown mode 'yolo'" in buf.getvalue()


async def test_cost_reports_usage(env) -> None:
    ctx, buf = env()
    ctx.engine.usage.add(
        {"input_tokens": 1000, "output_tokens": 500, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 300}
    )
    await ctx.router.dispatch("/cost", ctx)
    out = buf.getvalue()
    assert "Tokens in: 1000  out: 500" in out
    assert "Cache read: 2000  cache write: 300" in out
    expected = ctx.engine.usage.cost("claude-sonnet-4-5")
    assert f"Estimated cost: ${expected:.4f}" in out


async def test_context_and_status(env) -> None:
    ctx, buf = env()
    ctx.engine.append_message(user_message("x" * 4000))
    ctx.engine.append_message(assistant_message([text_block("ok")], usage={"input_tokens": 20_000}))
    ctx.engine.last_usage = {"input_tokens": 20_000}
    assert context_percent(ctx.engine) == 10
    await ctx.router.dispatch("/context", ctx)
    await ctx.router.dispatch("/status", ctx)
    out = buf.getvalue()
    assert "10%" in out
    assert "system prompt" in out
    assert "Messages: 2" in out


async def test_clear_keeps_session_rules(env) -> None:
    ctx, buf = env()
    ctx.engine.append_message(user_message("hi"))
    ctx.engine.gate.session_rules.append(("Write", "a.txt"))
    old = ctx.engine.session_id
    await ctx.router.dispatch("/clear", ctx)
    assert ctx.engine.messages == [] and ctx.engine.session_id != old
    assert ctx.engine.gate.session_rules == [("Write", "a.txt")]


async def test_compact_summarises_with_the_model(env) -> None:
    model = ScriptedModel([reply("The user asked about X; we did Y.")])
    ctx, buf = env(model)
    for i in range(3):
        ctx.engine.append_message(user_message(f"question {i}"))
        ctx.engine.append_message(assistant_message([text_block(f"answer {i}")]))
    await ctx.router.dispatch("/compact keep the numbers", ctx)
    out = buf.getvalue()
    if "not available" in out:
        pytest.skip("compaction service not in this build")
    assert "Compacted the conversation" in out, out
    model.assert_done()
    assert "keep the numbers" in str(model.requests[0].messages)
    texts = [b.get("text", "") for m in ctx.engine.messages for b in m["content"]]
    assert any("The user asked about X" in t for t in texts)


async def test_init_asks_for_a_turn(env, tmp_path: Path) -> None:
    ctx, _ = env()
    result = await ctx.router.dispatch("/init focus on tests", ctx)
    assert result.run_turn is not None
    text, inject = result.run_turn
    assert "AGENTS.md" in text and "focus on tests" in text
    (ctx.cwd / "CLAUDE.md").write_text("# notes\n")
    result = await ctx.router.dispatch("/init", ctx)
    assert "CLAUDE.md" in result.run_turn[0]


async def test_memory_lists_files(env) -> None:
    ctx, buf = env()
    await ctx.router.dispatch("/memory", ctx)
    assert "Instruction files: none loaded" in buf.getvalue()
    assert "not trusted" in buf.getvalue()
    (ctx.cwd / "CLAUDE.md").write_text("be nice\n@docs/x.md\n")
    (ctx.cwd / "docs").mkdir()
    (ctx.cwd / "docs" / "x.md").write_text("x rules\n")
    (ctx.cwd / ".claude" / "rules").mkdir(parents=True)
    (ctx.cwd / ".claude" / "rules" / "py.md").write_text("---\npaths: src/*.py\n---\npython rules\n")
    ctx.engine.prompt_builder.trusted = True
    ctx.engine.prompt_builder.tracker.trusted = True
    ctx.engine.prompt_builder.loaded = None  # trust does not change inside a session: force the reload
    ctx.engine.prompt_builder.build(ctx.engine.session_id)
    await ctx.router.dispatch("/memory", ctx)
    out = buf.getvalue()
    assert "project  CLAUDE.md (19 chars)" in out
    assert "project  docs/x.md (8 chars; imported by CLAUDE.md)" in out
    assert "project  .claude/rules/py.md (13 chars; paths: src/*.py; waiting for a matching file)" in out
    assert "Agent memory:" in out and "not created yet" in out
    assert f"1. {ctx.cwd / 'CLAUDE.md'}  (19 bytes)" in out  # where `# note` goes, Enter first
    assert f"3. {ctx.cwd / 'CLAUDE.local.md'}  (not created yet)" in out


async def test_resume_without_picker_lists_sessions(env) -> None:
    ctx, buf = env()
    ctx.engine.append_message(user_message("the first prompt"))
    old = ctx.engine.session_id
    ctx.engine.clear()
    await ctx.router.dispatch("/resume", ctx)
    out = buf.getvalue()
    assert old in out and "the first prompt" in out
    await ctx.router.dispatch("/resume 1", ctx)
    assert ctx.engine.session_id == old
    assert ctx.engine.messages[0]["content"][0]["text"] == "the first prompt"


def _complete(completer: ReplCompleter, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_completer_slash_and_paths(tmp_path: Path) -> None:
    router = default_router()
    router.register("review-pr", lambda c, a: None, "a skill")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    (tmp_path / "setup.cfg").write_text("")
    c = ReplCompleter(router, tmp_path)
    assert _complete(c, "/co") == ["/compact", "/config", "/context", "/cost"]
    assert "/review-pr" in _complete(c, "/re")
    assert _complete(c, "/compact now") == []
    assert _complete(c, "look at @s") == ["setup.cfg", "src/"]
    assert _complete(c, "look at @src/a") == ["app.py"]
    assert _complete(c, "no mention") == []


async def test_help_keeps_the_argument_hints(env) -> None:
    ctx, buf = env()
    await ctx.router.dispatch("/help", ctx)
    out = buf.getvalue()
    assert "the conversation now [instructions]" in out and "[number|id]" in out and "[kill ID]" in out
    assert "Shift+Tab" in out and "!command" in out


async def test_claude_code_commands_todos_hooks_config_export_add_dir_doctor(env, tmp_path: Path) -> None:
    ctx, buf = env()
    ctx.engine.state.todos = [{"content": "write tests", "status": "in_progress", "activeForm": "Writing"}]
    ctx.engine.messages += [{"role": "user", "content": [{"type": "text", "text": "first prompt"}]},
                            {"role": "assistant", "content": [{"type": "text", "text": "an answer"},
                                                              {"type": "tool_use", "id": "t", "name": "Read",
                                                               "input": {"file_path": "a.py"}}]}]
    for line in ("/todos", "/hooks", "/config", "/export out.md", "/add-dir sub", "/add-dir nope", "/doctor",
                 "/agents"):
        if line == "/add-dir sub":
            (ctx.cwd / "sub").mkdir()
        await ctx.router.dispatch(line, ctx)
    out = buf.getvalue()
    assert "[>] Writing" in out and "No hooks configured" in out and "permission mode:" in out
    exported = (ctx.cwd / "out.md").read_text()
    assert "## User\n\nfirst prompt" in exported and "## Assistant\n\nan answer" in exported
    assert "> tool: Read" in exported
    assert f"Added {ctx.cwd / 'sub'}" in out and "nope: not a directory" in out
    assert (ctx.cwd / "sub").resolve() in ctx.engine.gate.additional_dirs
    assert "ripgrep:" in out
