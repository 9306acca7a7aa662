"""MCP prompts as conversation messages.

Arguments are parsed like a shell line (quotes group words) and may be given by name (`name=value`);
the other words fill the remaining arguments in order, and extra words join the last one. The prompt's
messages keep their roles; embedded resources are loaded and `@server:uri` mentions in the prompt's text
are mounted, each with the mention notice.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from services.mcp.content import Expanded, Sink, content_blocks, expand_mentions, mounted_notice
from services.mcp.manager import McpError, McpManager, PromptInfo
from services.messages import Message, assistant_message, text_block, user_message


def parse_args(line: str, info: PromptInfo) -> dict[str, str]:
    """`a "b c" name=d` -> {first arg: "a", ...}; McpError for unbalanced quotes or an unknown name."""
    try:
        words = shlex.split(line or "")
    except ValueError as exc:
        raise McpError(f"cannot parse the arguments of /{info.server}:{info.name}: {exc}") from None
    named: dict[str, str] = {}
    positional: list[str] = []
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key in info.arg_names:
            named[key] = value
        else:
            positional.append(w)
    free = [n for n in info.arg_names if n not in named]
    if len(positional) > len(free):
        if not free:
            raise McpError(f"/{info.server}:{info.name} takes no more arguments (got {' '.join(positional)!r})")
        positional[len(free) - 1:] = [" ".join(positional[len(free) - 1:])]
    named.update(zip(free, positional, strict=False))
    return {n: named[n] for n in info.arg_names if n in named}


def missing_required(info: PromptInfo, args: dict[str, str]) -> list[str]:
    return [n for n in info.required if not args.get(n)]


def find_prompt(manager: McpManager, server: str, name: str) -> PromptInfo:
    s = manager.server(server)
    info = next((p for p in s.prompts if p.name == name), None)
    if info is None:
        raise McpError(f'MCP server "{server}" has no prompt "{name}"')
    return info


async def prompt_messages(manager: McpManager, server: str, name: str, arguments: dict[str, str],
                          spill_dir: Path | None = None) -> Expanded:
    """The prompt's messages (roles kept), mentioned resources first, with notices and warnings."""
    result = await manager.get_prompt_result(server, name, arguments)
    out = Expanded()
    sink = Sink(spill_dir, f"prompt-{server}-{name}")
    body: list[Message] = []
    for m in result.messages:
        blocks = content_blocks([m.content], sink)
        resource = getattr(m.content, "resource", None)
        if getattr(m.content, "type", "") == "resource" and resource is not None:
            out.notices.append(mounted_notice(server, str(resource.uri), blocks))
        if not blocks:
            continue
        meta = {"mcp_prompt": f"{server}:{name}"}
        if m.role == "assistant":
            # An assistant turn holds text only (images are a user-side block).
            texts = [b if b["type"] == "text" else text_block("[image]") for b in blocks]
            msg = assistant_message(texts)
            msg["meta"] = meta
            body.append(msg)
        else:
            body.append(user_message(blocks, meta=meta))
            text = "\n".join(b.get("text", "") for b in blocks if b["type"] == "text")
            if "@" in text:
                out.extend(await expand_mentions(manager, text, spill_dir))
    if body and body[-1]["role"] == "assistant":
        # The request must end with the user's turn; the prompt's last words stay the assistant's.
        body.append(user_message("Continue.", meta={"mcp_prompt": f"{server}:{name}"}))
    out.messages.extend(body)
    return out


def prompt_usage(info: PromptInfo) -> str:
    return " ".join(f"<{a}>" if a in info.required else f"[{a}]" for a in info.arg_names)


def describe_missing(info: PromptInfo, missing: list[str]) -> str:
    return (f"/{info.server}:{info.name} needs {', '.join(missing)} "
            f"(usage: /{info.server}:{info.name} {prompt_usage(info)}; or name=value)")


