"""MCP slash commands for the REPL: `/mcp` (servers, state, tool counts) and `/<server>:<prompt> [args]`."""

from __future__ import annotations

from typing import Any

from agent.commands import CommandContext, CommandResult, CommandRouter

MCP_MARKER = "(MCP)"


def register_mcp_commands(router: CommandRouter, mcp: Any) -> list[str]:
    """Register `/mcp` and one command per MCP prompt; returns the names registered."""

    def cmd_mcp(ctx: CommandContext, args: str) -> None:
        rows = mcp.status() if mcp is not None else []
        if not rows:
            ctx.say("No MCP servers configured (.mcp.json or MCP_CONFIG).", "dim")
            return
        for server, state, tools in rows:
            ctx.say(f"{server}: {state}, {tools} tool{'s' if tools != 1 else ''}")

    router.register("mcp", cmd_mcp, "MCP servers, their state and tool counts")
    added = ["mcp"]
    if mcp is None:
        return added
    for p in mcp.prompts():
        name = f"{p.server}:{p.name}"
        if router.get(name) is not None:
            continue

        async def handler(ctx: CommandContext, args: str, _p: Any = p) -> CommandResult | None:
            # `/server:prompt (MCP) args`: the marker the help shows belongs to the command, not the arguments.
            args = args.removeprefix(MCP_MARKER).lstrip() if args.split(" ", 1)[0] == MCP_MARKER else args
            try:
                messages = await mcp.get_prompt(_p.server, _p.name, args)
            except Exception as exc:  # a failing server never breaks the REPL
                ctx.say(f"MCP prompt /{_p.server}:{_p.name} failed: {exc}", "red")
                return None
            if not messages:
                ctx.say(f"MCP prompt /{_p.server}:{_p.name} returned nothing.", "yellow")
                return None
            return CommandResult(run_turn=(f"(MCP prompt /{_p.server}:{_p.name})", list(messages)))

        args_help = " ".join(f"<{a}>" for a in p.arg_names)
        router.register(name, handler, f"{MCP_MARKER} {args_help} {p.description or p.name}".replace("  ", " "))
        added.append(name)
    return added
