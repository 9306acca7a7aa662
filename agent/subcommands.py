"""`agent <subcommand>`: the words that are commands, not prompts (Claude Code's `claude doctor`, ...)."""

from __future__ import annotations


def run_subcommand(name: str, argv: list[str]) -> int:
    if name == "doctor":
        from agent.doctor import main as doctor

        return doctor(argv)
    if name == "mcp":  # `agent mcp add/add-json/list/get/remove`
        from agent.mcp_cli import main as mcp

        return mcp(argv)
    if name == "config":
        from agent.config_cmd import main as config

        return config(argv)
    if name == "trust":
        from agent.trust_cli import main as trust

        return trust(argv)
    raise ValueError(f"unknown subcommand {name!r}")
