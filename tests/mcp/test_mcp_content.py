"""MCP content from hostile servers, without a server: images that are huge, lying or broken, bad base64,
binary content saved safely, and a log that cannot grow without end."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path
from types import SimpleNamespace as NS

from PIL import Image

from services.images import MAX_IMAGE_BYTES, fit_image
from services.mcp.content import Sink, content_blocks, save_binary


def png(width: int, height: int, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, (width, height), (10, 20, 30) if mode == "RGB" else (10, 20, 30, 128)).save(out, "PNG")
    return out.getvalue()


def bomb_png(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims a vast canvas."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")


def image(data: bytes, mime: str = "image/png") -> NS:
    return NS(type="image", data=base64.b64encode(data).decode(), mimeType=mime)


def test_a_small_image_passes_unchanged_and_a_wide_one_is_scaled(tmp_path: Path) -> None:
    small = png(10, 10)
    assert fit_image(small, "image/png") == (small, "image/png")
    data, kind = fit_image(png(4000, 100, "RGBA"), "image/png")
    assert kind == "image/png" and Image.open(io.BytesIO(data)).size == (2000, 50)  # transparency kept
    # A type the API does not take is re-encoded.
    bmp = io.BytesIO()
    Image.new("RGB", (5, 5)).save(bmp, "BMP")
    data, kind = fit_image(bmp.getvalue(), "image/bmp")
    assert kind == "image/jpeg" and len(data) <= MAX_IMAGE_BYTES


def test_lying_and_broken_images_become_saved_files_with_a_reason(tmp_path: Path) -> None:
    sink = Sink(tmp_path, "t")
    blocks = content_blocks([
        image(b"this is not a png"),
        image(bomb_png(60000, 60000)),
        image(bomb_png(12000, 12000)),  # under Pillow's own guard, over ours
        NS(type="image", data="%%% not base64 %%%", mimeType="image/png"),
    ], sink)
    texts = [b["text"] for b in blocks]
    assert "cannot decode the image/png image" in texts[0] and "saved to" in texts[0]
    assert "too many pixels to decode safely" in texts[1]
    assert "12000x12000 pixels, too many to decode safely" in texts[2]
    assert "invalid base64" in texts[3] or "cannot decode" in texts[3]
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved[:3] == ["t-1.png", "t-2.png", "t-3.png"]


def test_binary_files_never_overwrite_and_names_are_safe(tmp_path: Path) -> None:
    first = save_binary(tmp_path, "../../etc/x", b"a", "audio/wav")
    second = save_binary(tmp_path, "../../etc/x", b"b", "audio/wav")
    paths = [Path(t.split("saved to ")[1].rstrip("]")) for t in (first, second)]
    assert [p.parent for p in paths] == [tmp_path.absolute()] * 2 and paths[0] != paths[1]
    assert [p.read_bytes() for p in paths] == [b"a", b"b"]
    assert "no session directory" in save_binary(None, "x", b"abc", None)
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert "saving it failed" in save_binary(blocked / "sub", "x", b"abc", "audio/wav")


async def test_a_log_flood_stops_at_the_cap(tmp_path: Path) -> None:
    from services.mcp import manager as m
    from services.mcp.config import ServerConfig

    mgr = m.McpManager({"s": ServerConfig("s", "stdio", "x", command="true")}, tmp_path, {}, log_dir=tmp_path)
    s = mgr.servers["s"]
    params = NS(level="info", logger=None, data="y" * 2000)
    for _ in range(m._LOG_CAP // 2000 + 50):
        await s._on_log(params)
    size = s.log_path.stat().st_size
    assert m._LOG_CAP < size < m._LOG_CAP + 10_000
    assert "the server's log messages are dropped" in s.log_path.read_text()
    await mgr.close()


def test_the_real_type_is_sent_and_a_sloppy_png_is_re_encoded(tmp_path: Path) -> None:
    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8)).save(jpeg, "JPEG")
    good = png(20, 20, "RGBA")
    # A metadata chunk with a wrong checksum, as in the official "everything" server's logo.
    bad_chunk = struct.pack(">I", 4) + b"tEXt" + b"a\0bc" + b"\0\0\0\0"
    sloppy = good[:33] + bad_chunk + good[33:]
    blocks = content_blocks([image(jpeg.getvalue(), "image/png"), image(sloppy), image(good)], Sink(tmp_path, "t"))
    assert [b["source"]["media_type"] for b in blocks] == ["image/jpeg", "image/png", "image/png"]
    assert base64.b64decode(blocks[0]["source"]["data"]) == jpeg.getvalue()  # mislabelled only: bytes kept
    fixed = base64.b64decode(blocks[1]["source"]["data"])
    assert fixed != sloppy and Image.open(io.BytesIO(fixed)).size == (20, 20)
    assert base64.b64decode(blocks[2]["source"]["data"]) == good


def test_text_sent_as_a_blob_is_shown_as_text(tmp_path: Path) -> None:
    from services.mcp.content import resource_blocks

    def blob(data: bytes, mime: str) -> NS:
        return NS(uri="x://y", blob=base64.b64encode(data).decode(), mimeType=mime)

    blocks = resource_blocks([blob("héllo".encode(), "text/plain"), blob(b"\xff\xfe", "text/plain"),
                              blob(b"\x00\x01", "application/octet-stream")], Sink(tmp_path, "r"))
    assert blocks[0]["text"] == "héllo"
    assert "saved to" in blocks[1]["text"] and "saved to" in blocks[2]["text"]
