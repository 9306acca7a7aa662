"""MCP servers started in the background once the REPL is up, and wired into it: `/mcp` and prompt
commands, `@server:uri` completion, progress lines, sampling and elicitation answered in the input area."""

from __future__ import annotations

from agent.loop.factory import start_mcp
from agent.repl.parts import ReplParts
from agent.slash.mcp import register_mcp_commands


class McpPart(ReplParts):
    async def start_mcp(self) -> None:
        """Start MCP servers in the background (if any are configured): `/mcp`, prompt commands as servers
        become ready, and the answers to their sampling and elicitation requests. Their tools reach the
        model before its next call (the engine's refresher), with a notice."""
        from agent.loop.mcp_hooks import make_elicitation_handler, make_sampling_handler

        self.mcp = await start_mcp(self.cwd, warn=lambda w: self.say(f"warning: {w}", "yellow"),
                                   opts=self.opts, extra=self.opts.mcp_configs, strict=self.opts.strict_mcp_config)
        register_mcp_commands(self.router, self.mcp, ask=self.ask_text)
        if self.mcp is not None:
            from agent.loop.factory import mcp_refresher

            self.session.completer.mcp = self.mcp  # type: ignore[union-attr]
            self.mcp.handlers.progress = self.renderer.progress
            notify = lambda text: self.say(text, "dim")  # noqa: E731
            self.mcp.handlers.sample = make_sampling_handler(self.engine, self.ask_yes_no, notify)
            self.mcp.handlers.elicit = make_elicitation_handler(self.ask_text, notify)
            self.mcp.handlers.hooks = self.engine.hooks
            blocked = {r for r in self.engine.gate.disallowed_tools if "(" not in r}
            refresh = mcp_refresher(self.engine, self.mcp, blocked)

            def refresh_and_render() -> list[tuple[str, str]]:
                notices = refresh()
                self.renderer.tools.update({t.name: t for t in self.engine.tools})
                return notices

            self.engine.attach_mcp(refresh_and_render, self.mcp.instructions)
