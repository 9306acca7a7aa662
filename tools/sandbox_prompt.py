"""What the model is told about the sandbox: Claude Code 2.1.332's "Bash command sandbox" section, its
words kept (recorded from the binary's prompt builder; the Linux variant with unsandboxed retries
allowed or refused), the restrictions filled in from this session's sandbox."""

from __future__ import annotations

import json

from tools.sandbox import SECRET_DIRS, SECRET_FILES, Sandbox

HEAD = ("## Bash command sandbox\nBy default, Bash tool commands run in a sandbox. This sandbox controls which "
        "directories and network hosts commands may access or modify without an explicit override.\n\n"
        "The sandbox has the following restrictions:")
MAY_LEAVE: list[str | list[str]] = [
    "You should always default to running commands within the sandbox. Do NOT attempt to set "
    "`dangerouslyDisableSandbox: true` unless:",
    ["The user *explicitly* asks you to bypass sandbox",
     "A specific command just failed and you see evidence of sandbox restrictions causing the failure. Note that "
     "commands can fail for many reasons unrelated to the sandbox (missing files, wrong arguments, network issues, "
     "etc.)."],
    "Evidence of sandbox-caused failures includes:",
    ['"Operation not permitted" errors for file/network operations',
     "Access denied to specific paths outside allowed directories",
     "Network connection failures to non-whitelisted hosts", "Unix socket connection errors"],
    "When you see evidence of sandbox-caused failure:",
    ["Immediately retry with `dangerouslyDisableSandbox: true` (don't ask, just do it)",
     "Briefly explain what sandbox restriction likely caused the failure. Be sure to mention that the user can use "
     "the `/sandbox` command to manage restrictions.",
     "This goes through the permission gate (a user prompt, or the auto-mode classifier when auto mode is active)"],
    "Treat each command you execute with `dangerouslyDisableSandbox: true` individually. Even if you have recently "
    "run a command with this setting, you should default to running future commands within the sandbox.",
    "Do not suggest adding sensitive paths like ~/.bashrc, ~/.zshrc, ~/.ssh/*, or credential files to the sandbox "
    "allowlist.",
]
MAY_NOT_LEAVE: list[str | list[str]] = [
    "The `dangerouslyDisableSandbox` parameter is disabled in this session's configuration; setting it does not "
    "take a command out of the sandbox.",
    "If a command the task needs fails on a sandbox restriction, tell the user which restriction it hit; changing "
    "the sandbox settings is their decision, not yours.",
]
TMPDIR = ("For temporary files, always use the `$TMPDIR` environment variable. TMPDIR is automatically set to the "
          "correct sandbox-writable directory in sandbox mode. Do NOT use `/tmp` directly - use `$TMPDIR` instead.")


def _bullets(items: list[str | list[str]]) -> list[str]:
    out: list[str] = []
    for item in items:
        if isinstance(item, list):
            out.extend(f"  - {s}" for s in item)
        else:
            out.append(f" - {item}")
    return out


def _restrictions(sandbox: Sandbox) -> list[str]:
    home = str(sandbox.home)
    deny_read = [f"{home}/{p}" for p in (*SECRET_DIRS, *SECRET_FILES)] + [str(sandbox.agent_home)]
    deny_read += list(sandbox.settings.deny_read)
    protected = [".git/hooks", ".git/config", ".claude", ".agents", ".mcp.json", ".envrc", ".vscode"]
    deny_write = [f"{root}/{p}" for root in sandbox.writable_roots() for p in protected]
    fs = {"read": {"denyOnly": deny_read},
          "write": {"allowOnly": [*sandbox.writable_roots(), "$TMPDIR"], "denyWithinAllow": deny_write}}
    lines = [f"Filesystem: {json.dumps(fs, separators=(',', ':'))}"]
    network: dict[str, object] = {"allowedHosts": list(sandbox.settings.allowed_domains)}
    if not sandbox.settings.allow_all_unix_sockets:
        network["allowUnixSockets"] = []
    lines.append(f"Network: {json.dumps(network, separators=(',', ':'))}")
    return lines


def sandbox_prompt(sandbox: Sandbox | None) -> str:
    """The section for the system prompt; empty when no command runs sandboxed."""
    if sandbox is None or not sandbox.active:
        return ""
    items = MAY_LEAVE if sandbox.allow_unsandboxed else MAY_NOT_LEAVE
    return "\n".join([HEAD, *_restrictions(sandbox), "", *_bullets([*items, TMPDIR])])
