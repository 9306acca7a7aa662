"""MCP slash commands: `/mcp` (each server's state, tools with their real names, last error, log file)
and `/<server>:<prompt> [args]`, registered as servers become ready; and the same prompt expansion for
one-shot runs (`agent -p "/srv:greet Ada"`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent.slash.router import CommandContext, CommandResult, CommandRouter
from services.mcp.content import Expanded
from services.mcp.manager import McpError

AskText = Callable[[str], Awaitable[str | None]]

MCP_MARKER = "(MCP)"


def status_lines(mcp: Any) -> list[tuple[str, str]]:
    """(text, style) lines for `/mcp`."""
    if mcp is None or not mcp.servers:
        return [("No MCP servers configured (agent mcp add, .mcp.json or MCP_CONFIG).", "dim")]
    names = mcp.public_names()
    out: list[tuple[str, str]] = []
    for s in mcp.servers.values():
        style = {"connected": "green", "failed": "red", "pending": "yellow"}.get(s.state, "dim")
        where = s.config.url if s.config.transport == "http" else " ".join([s.config.command, *s.config.args])
        head = f"{s.name} ({s.config.transport}, {s.config.scope}): {s.state}"
        out.append((head, f"bold {style}"))
        out.append((f"  {where}", "dim"))
        if s.state == "connected":
            for t in s.tools:
                public = names.get((s.name, t.name), t.name)
                label = public if public.endswith(t.name) else f"{public}  (real name: {t.name})"
                out.append((f"  · {label}", ""))
            extras = [f"{len(s.prompts)} prompts" if s.prompts else "", f"{len(s.resources)} resources"
                      if s.has_resources else "", f"{len(s.templates)} templates" if s.templates else ""]
            if any(extras):
                out.append(("  " + ", ".join(e for e in extras if e), "dim"))
        if s.error:
            out.append((f"  last error: {s.error}", "red"))
        if s.log_path is not None:
            out.append((f"  log: {s.log_path}", "dim"))
    return out


async def mention_completions(mcp: Any, fragment: str, limit: int = 50) -> list[tuple[str, str]]:
    """Completions of `@<fragment>` as (text without the @, description): server names, resource URIs,
    and resource templates (their fixed head, then the server's own completion of the first variable)."""
    if mcp is None:
        return []
    server, colon, rest = fragment.partition(":")
    if not colon:
        return [(f"{s.name}:", "MCP server") for s in mcp.connected()
                if s.has_resources and s.name.startswith(server)][:limit]
    s = mcp.servers.get(server)
    if s is None or s.state != "connected":
        return []
    out = [(f"{server}:{r.uri}", r.name) for r in s.resources if r.uri.startswith(rest)]
    for t in s.templates:
        head, brace, tail = t.uri.partition("{")
        if not brace:
            continue
        variable = tail.split("}", 1)[0].lstrip("+#./;?&").split(",")[0].rstrip("*")
        if head.startswith(rest) and head != rest:
            out.append((f"{server}:{head}", f"template {t.uri}"))
        elif rest.startswith(head) and variable:
            for value in await mcp.complete_resource(server, t.uri, variable, rest[len(head):]):
                out.append((f"{server}:{head}{value}", t.name))
    return out[:limit]


def parse_prompt_command(mcp: Any, line: str) -> tuple[str, str, str] | None:
    """`/server:prompt args` naming a configured server -> (server, prompt, args); else None."""
    text = line.strip()
    if mcp is None or not text.startswith("/"):
        return None
    name, _, args = text[1:].partition(" ")
    server, colon, prompt = name.partition(":")
    if not colon or not prompt or server not in mcp.servers:
        return None
    return server, prompt, args.strip()


async def expand_prompt(mcp: Any, server: str, prompt: str, args: str, spill_dir: Path | None,
                        ask: AskText | None = None) -> Expanded:
    """The prompt's messages. A server still starting is waited for; a required argument left out is
    asked for (`ask`), or an McpError that names it (one-shot)."""
    from services.mcp.prompts import (
        describe_missing,
        find_prompt,
        missing_required,
        parse_args,
        prompt_messages,
    )

    s = mcp.server(server)
    if s.state == "pending":
        await s.wait_started()
    if s.state != "connected":
        raise McpError(f'MCP server "{server}" is not connected ({s.error or s.state})')
    info = find_prompt(mcp, server, prompt)
    arguments = parse_args(args, info)
    for name in missing_required(info, arguments):
        if ask is None:
            raise McpError(describe_missing(info, missing_required(info, arguments)))
        value = await ask(f"{name} (required for /{server}:{prompt}): ")
        if value is None or not value.strip():
            raise McpError(describe_missing(info, [name]))
        arguments[name] = value.strip()
    out = await prompt_messages(mcp, server, prompt, arguments, spill_dir)
    if not out.messages:
        raise McpError(f"MCP prompt /{server}:{prompt} returned nothing")
    return out


async def wait_for_prompt_server(router: CommandRouter, mcp: Any, line: str) -> None:
    """`/server:prompt` typed before that server is ready: wait for it (its prompts then register)."""
    found = parse_prompt_command(mcp, line)
    if found is not None and router.get(f"{found[0]}:{found[1]}") is None:
        s = mcp.servers[found[0]]
        if s.state == "pending":
            await s.wait_started()


def register_mcp_commands(router: CommandRouter, mcp: Any, ask: AskText | None = None) -> list[str]:
    """Register `/mcp` now and one command per MCP prompt whenever a server becomes ready (a listener on
    the manager keeps them in step). Returns the names registered so far."""

    def cmd_mcp(ctx: CommandContext, args: str) -> None:
        for text, style in status_lines(mcp):
            ctx.say(text, style)

    router.register("mcp", cmd_mcp, "MCP servers: state, tools (with real names), last error")
    added = ["mcp"]
    if mcp is None:
        return added
    mine: set[str] = set()

    def sync() -> None:
        wanted = {f"{p.server}:{p.name}": p for p in mcp.prompts()}
        for name in list(mine - set(wanted)):
            router.unregister(name)
            mine.discard(name)
        for name, p in wanted.items():
            if name in mine or router.get(name) is not None:
                continue

            async def handler(ctx: CommandContext, args: str, _p: Any = p) -> CommandResult | None:
                # `/server:prompt (MCP) args`: the marker the help shows belongs to the command, not the arguments.
                args = args.removeprefix(MCP_MARKER).lstrip() if args.split(" ", 1)[0] == MCP_MARKER else args
                try:
                    out = await expand_prompt(mcp, _p.server, _p.name, args, _spill(ctx), ask)
                except McpError as exc:
                    ctx.say(str(exc), "red")
                    return None
                for w in out.warnings:
                    ctx.say(f"warning: {w}", "yellow")
                for n in out.notices:
                    ctx.say(n, "dim")
                return CommandResult(run_turn=("", out.messages))

            # `<arg>` for every argument: /help renders markup, so `[optional]` would vanish there.
            args_help = " ".join(f"<{a}>" for a in p.arg_names)
            router.register(name, handler, f"{MCP_MARKER} {args_help} {p.description or p.name}".replace("  ", " "))
            mine.add(name)
            added.append(name)

    sync()
    mcp.on_change(sync)
    return added


def _spill(ctx: CommandContext) -> Path | None:
    directory = getattr(ctx.engine, "session_dir", None)
    return Path(directory) / "tool-results" if directory else None
