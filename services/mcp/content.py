"""MCP content as message blocks: text as is, images made to fit the API's limits, everything binary
(audio, blobs, images that cannot be used) saved to the session's spill directory with a pointer.

Shared by tool results, resource reads, prompts and `@server:uri` mentions, so a server's content looks
the same wherever it arrives. Nothing here asks a server for anything but resources.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.images import ImageError, fit_image
from services.mcp.manager import McpError, McpManager
from services.messages import ImageBlock, Message, TextBlock, image_block, text_block, user_message
from services.private_fs import ensure_private_dir
from services.tool_result_storage import format_size

# What MCP content becomes: text, or an image the API accepts.
MediaBlock = TextBlock | ImageBlock

MAX_MENTION_CHARS = 100_000
_MENTION = re.compile(r"(?:^|(?<=\s))@([^\s:]+:[^\s]+)\b")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _decode(data_b64: str) -> bytes | None:
    try:
        return base64.b64decode(data_b64, validate=False)
    except (binascii.Error, ValueError):
        return None


def save_binary(spill_dir: Path | None, stem: str, data: bytes, mime: str | None) -> str:
    """Write `data` to `<spill_dir>/<stem><ext>` (0600, never over an existing file) and return the pointer
    the model sees; without a spill directory (or when writing fails) a placeholder says so."""
    kind = mime or "application/octet-stream"
    if spill_dir is None:
        return f"[{kind}, {format_size(len(data))}: binary content, not shown (no session directory to save it)]"
    ext = mimetypes.guess_extension(kind.split(";")[0].strip()) or ".bin"
    directory = Path(spill_dir).absolute()
    base = _UNSAFE.sub("_", stem)[:100] or "mcp"
    try:
        ensure_private_dir(directory)
        for n in range(1000):
            path = directory / f"{base}{'' if n == 0 else f'-{n}'}{ext}"
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return f"[{kind}, {format_size(len(data))}: binary content saved to {path}]"
    except OSError as exc:
        return f"[{kind}, {format_size(len(data))}: binary content, not shown (saving it failed: {exc.strerror or exc})]"
    return f"[{kind}, {format_size(len(data))}: binary content, not shown]"


class Sink:
    """Where the binary parts of one result go: numbered files `<stem>-<n>` in the spill directory."""

    def __init__(self, spill_dir: Path | None, stem: str):
        self.spill_dir = spill_dir
        self.stem = stem or "mcp"
        self.count = 0

    def save(self, data: bytes, mime: str | None) -> str:
        self.count += 1
        return save_binary(self.spill_dir, f"{self.stem}-{self.count}", data, mime)


def image_or_pointer(data_b64: str, mime: str | None, sink: Sink) -> MediaBlock:
    """An image block within the API's limits, or (undecodable, unusable) a text pointer to the saved file."""
    raw = _decode(data_b64)
    if raw is None:
        return text_block(f"[image: {mime or 'unknown type'}, invalid base64, not shown]")
    try:
        data, kind = fit_image(raw, mime or "")
    except ImageError as exc:
        return text_block(f"{sink.save(raw, mime)} ({exc})")
    if data is raw:
        return image_block(kind, data_b64)
    return image_block(kind, base64.b64encode(data).decode("ascii"))


def blob_blocks(uri: str, blob: str, mime: str | None, sink: Sink) -> MediaBlock:
    if (mime or "").startswith("image/"):
        return image_or_pointer(blob, mime, sink)
    raw = _decode(blob)
    if raw is None:
        return text_block(f"[resource {uri}: invalid base64, not shown]")
    if _is_text_type(mime) and len(raw) <= MAX_MENTION_CHARS:
        try:  # text sent as a blob: shown as text when it is UTF-8
            return text_block(raw.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return text_block(f"[resource {uri}] {sink.save(raw, mime)}")


def _is_text_type(mime: str | None) -> bool:
    base = (mime or "").split(";")[0].strip().lower()
    return base.startswith("text/") or base in ("application/json", "application/xml", "application/yaml")


def content_blocks(items: list[Any], sink: Sink) -> list[MediaBlock]:
    """MCP content items (a tool result's, a prompt message's) as message blocks."""
    blocks: list[MediaBlock] = []
    for c in items:
        kind = getattr(c, "type", "")
        if kind == "text":
            blocks.append(text_block(c.text))
        elif kind == "image":
            blocks.append(image_or_pointer(c.data, c.mimeType, sink))
        elif kind == "audio":
            raw = _decode(c.data)
            blocks.append(text_block(sink.save(raw, c.mimeType) if raw is not None
                                     else f"[audio: {c.mimeType}, invalid base64, not shown]"))
        elif kind == "resource_link":
            label = f"{c.name}: " if getattr(c, "name", None) else ""
            mime = f" ({c.mimeType})" if getattr(c, "mimeType", None) else ""
            blocks.append(text_block(f"[resource link: {label}{c.uri}{mime}]"))
        elif kind == "resource":
            blocks.extend(resource_blocks([c.resource], sink))
    return blocks


def resource_blocks(contents: list[Any], sink: Sink) -> list[MediaBlock]:
    """Resource contents (text or blob) as blocks."""
    out: list[MediaBlock] = []
    for r in contents:
        text = getattr(r, "text", None)
        if isinstance(text, str):
            out.append(text_block(text))
        else:
            out.append(blob_blocks(str(r.uri), getattr(r, "blob", "") or "", getattr(r, "mimeType", None), sink))
    return out


async def read_resource_blocks(manager: McpManager, server: str, uri: str, spill_dir: Path | None,
                               stem: str = "") -> list[MediaBlock]:
    contents = await manager.read_resource_contents(server, uri)
    return resource_blocks(contents, Sink(spill_dir, stem or f"resource-{server}"))


async def read_resource(manager: McpManager, server: str, uri: str, spill_dir: Path | None = None) -> str:
    """The resource as text (binary parts as pointers to their saved files)."""
    blocks = await read_resource_blocks(manager, server, uri, spill_dir)
    return "\n".join(b["text"] if b["type"] == "text" else f"[image: {b['source']['media_type']}]" for b in blocks)


# --- @server:uri mentions ---------------------------------------------------------------------------


def extract_mentions(text: str) -> list[tuple[str, str]]:
    """`@server:uri` mentions (at the start or after whitespace), split at the first `:`, deduplicated."""
    out: list[tuple[str, str]] = []
    for m in _MENTION.finditer(text):
        server, _, uri = m.group(1).partition(":")
        if server and uri and (server, uri) not in out:
            out.append((server, uri))
    return out


@dataclass
class Expanded:
    """Messages to inject before the prompt, one notice per mounted resource, and warnings."""

    messages: list[Message] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Expanded) -> None:
        self.messages.extend(other.messages)
        self.notices.extend(other.notices)
        self.warnings.extend(other.warnings)


def mounted_notice(server: str, uri: str, blocks: list[MediaBlock]) -> str:
    chars = sum(len(b["text"]) for b in blocks if b["type"] == "text")
    images = sum(1 for b in blocks if b.get("type") == "image")
    return f"Mounted MCP resource @{server}:{uri} ({chars} chars" + (f", {images} image(s))" if images else ")")


def resource_message(server: str, uri: str, blocks: list[MediaBlock]) -> Message:
    head = f"The following material comes from an MCP resource the user referenced:\nserver={server} uri={uri}\n\n"
    text_parts = [b for b in blocks if b["type"] == "text"]
    body = "\n".join(b["text"] for b in text_parts)
    if len(body) > MAX_MENTION_CHARS:
        body = body[:MAX_MENTION_CHARS] + (
            f"\n\n[truncated: showing {MAX_MENTION_CHARS} of {len(body)} characters; ReadMcpResource reads it in full]"
        )
    images = [b for b in blocks if b["type"] == "image"]
    return user_message([text_block(head + body), *images], meta={"mcp_resource": f"{server}:{uri}"})


async def expand_mentions(manager: McpManager, text: str, spill_dir: Path | None = None) -> Expanded:
    """The resources `text` mentions, read (a server still starting is waited for: the user asked for it)."""
    out = Expanded()
    for server, uri in extract_mentions(text):
        s = manager.servers.get(server)
        if s is not None and s.state == "pending":
            await s.wait_started()
        if s is None or s.state not in ("connected", "failed") or (s.state == "connected" and not s.has_resources):
            out.warnings.append(f"MCP resource @{server}:{uri} cannot be read: server not connected or has no resources")
            continue
        try:
            blocks = await read_resource_blocks(manager, server, uri, spill_dir, stem=f"mention-{server}")
        except McpError as exc:
            out.warnings.append(f"reading MCP resource {server}:{uri} failed: {exc}")
            continue
        out.messages.append(resource_message(server, uri, blocks))
        out.notices.append(mounted_notice(server, uri, blocks))
    return out
