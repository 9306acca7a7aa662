"""Read against real files: numbering, paging, limits, encodings, binaries, images, the unchanged stub."""

from __future__ import annotations

import base64
import math
import os
from pathlib import Path

from tools.read import UNCHANGED_STUB, ReadTool

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_numbered_like_claude_code_relative_path(project: Path, run) -> None:
    # Claude Code's format: no padding; the text split on newlines, so a final newline gives an empty line.
    (project / "a.txt").write_text("alpha\nbeta\n")
    out = await run("Read", file_path="a.txt")
    assert not out.is_error
    assert out.content == "1\talpha\n2\tbeta\n3\t"
    (project / "b.txt").write_text("alpha\nbeta")
    assert (await run("Read", file_path="b.txt")).content == "1\talpha\n2\tbeta"


async def test_whole_file_without_a_line_cap_and_pages_without_notes(project: Path, run) -> None:
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    out = await run("Read", file_path="big.txt")
    lines = out.content.split("\n")
    assert lines[0] == "1\tline 1" and lines[2499] == "2500\tline 2500" and lines[-1] == "2501\t"
    page = await run("Read", file_path="big.txt", offset=2001, limit=10)
    assert page.content.split("\n") == [f"{n}\tline {n}" for n in range(2001, 2011)]
    last = await run("Read", file_path="big.txt", offset=2499)
    assert last.content == "2499\tline 2499\n2500\tline 2500\n2501\t"


async def test_long_line_is_cut_with_a_marker(project: Path, run) -> None:
    (project / "long.txt").write_text("x" * 2500 + "\nshort\n")
    out = await run("Read", file_path="long.txt")
    first = out.content.splitlines()[0]
    assert first.startswith("1\t" + "x" * 2000) and "x" * 2001 not in first
    assert "500 more characters" in first


async def test_large_file_refused_without_offset_or_limit_then_paged(project: Path, run) -> None:
    # A 3 MB file: refused whole, readable in pages.
    (project / "huge.log").write_text("".join(f"{i:07d} " + "y" * 90 + "\n" for i in range(30_000)))
    assert os.path.getsize(project / "huge.log") > 2_900_000
    out = await run("Read", file_path="huge.log")
    size_kb = round(os.path.getsize(project / "huge.log") / 1024)
    assert out.is_error and out.content == (
        f"File content ({size_kb}KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to "
        "read specific portions of the file, or search for specific content instead of reading the whole file. "
        "To read it anyway, up to what still fits in your context, call Read again with allow_large: true \u2014 "
        "only if you genuinely need all of it or the user asked for the whole file.")
    page = await run("Read", file_path="huge.log", offset=29_998, limit=5)
    assert not page.is_error
    assert page.content.splitlines()[0].startswith("29998\t0029997")
    assert page.content.split("\n")[-1] == "30001\t"  # the last three lines and the empty one after them
    mid = await run("Read", file_path="huge.log", offset=100, limit=2)
    assert mid.content.startswith("100\t0000099") and len(mid.content.split("\n")) == 2


async def test_non_utf8_is_replaced_not_fatal(project: Path, run) -> None:
    (project / "latin1.txt").write_bytes("café\n".encode("latin-1") + b"ok\n")
    out = await run("Read", file_path="latin1.txt")
    assert not out.is_error and "caf\ufffd" in out.content and "ok" in out.content


async def test_binary_directory_missing_and_empty(project: Path, run) -> None:
    (project / "prog.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    out = await run("Read", file_path="prog.bin")
    assert out.is_error and "binary" in out.content
    (project / "sub").mkdir()
    out = await run("Read", file_path="sub")
    assert out.is_error and out.content == f"EISDIR: illegal operation on a directory, read '{project / 'sub'}'"
    out = await run("Read", file_path="nope.txt")
    assert out.is_error and out.content == f"File does not exist. Note: your current working directory is {project}."
    (project / "empty.txt").write_text("")
    out = await run("Read", file_path="empty.txt")
    assert not out.is_error and out.content == (
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")


async def test_offset_past_the_end(project: Path, run) -> None:
    (project / "a.txt").write_text("one\ntwo\n")
    out = await run("Read", file_path="a.txt", offset=10)
    assert not out.is_error and out.content == (
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (10). "
        "The file has 3 lines.</system-reminder>")


async def test_crlf_shown_without_carriage_returns(project: Path, run) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    out = await run("Read", file_path="w.txt")
    assert out.content == "1\tone\n2\ttwo\n3\t"


async def test_image_comes_back_as_an_image_block(project: Path, run) -> None:
    (project / "dot.png").write_bytes(PNG)
    out = await run("Read", file_path="dot.png")
    assert not out.is_error
    (block,) = out.content
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == PNG
    (project / "pic.gif").write_bytes(b"GIF89a" + b"\x00" * 20)
    out = await run("Read", file_path="pic.gif")
    assert out.content[0]["source"]["media_type"] == "image/gif"


async def test_read_is_self_bounded_and_read_only() -> None:
    assert ReadTool.max_result_chars == math.inf
    assert ReadTool().is_read_only({"file_path": "x"}) and ReadTool().is_concurrency_safe({"file_path": "x"})


async def test_unchanged_stub_only_while_the_earlier_result_is_visible(project: Path, run, ctx) -> None:
    (project / "a.txt").write_text("hello\n")
    first = await run("Read", tid="toolu_first", file_path="a.txt")
    assert "hello" in first.content
    visible = {"toolu_first"}
    ctx.is_visible = visible.__contains__
    again = await run("Read", file_path="a.txt")
    assert again.content == UNCHANGED_STUB
    # A different range is a new read.
    other = await run("Read", file_path="a.txt", offset=1, limit=1)
    assert "hello" in other.content
    # Back to the full range: the record now points at the ranged read, not visible -> content again.
    ctx.is_visible = set().__contains__
    full = await run("Read", tid="toolu_full", file_path="a.txt")
    assert "hello" in full.content
    # After the earlier result was cleared/spilled/compacted, the content comes back.
    ctx.is_visible = {"toolu_other"}.__contains__
    assert "hello" in (await run("Read", file_path="a.txt")).content


async def test_stub_not_returned_after_the_file_changed(project: Path, run, ctx) -> None:
    p = project / "a.txt"
    p.write_text("v1\n")
    await run("Read", tid="toolu_a", file_path="a.txt")
    p.write_text("version 2\n")
    out = await run("Read", file_path="a.txt")
    assert "version 2" in out.content


async def test_read_state_records_path_mtime_size_range_and_id(project: Path, run, ctx) -> None:
    p = project / "a.txt"
    p.write_text("x\ny\n")
    await run("Read", tid="toolu_rec", file_path=str(p), offset=2, limit=1)
    (rec,) = ctx.session.read_state.values()
    st = os.stat(p)
    assert rec.path == os.path.realpath(p) and rec.mtime_ns == st.st_mtime_ns and rec.size == st.st_size
    assert (rec.offset, rec.limit, rec.tool_use_id) == (2, 1, "toolu_rec")


async def test_fifo_is_refused_without_blocking(project: Path, run) -> None:
    os.mkfifo(project / "pipe")
    out = await run("Read", file_path="pipe")
    assert out.is_error and "regular file" in out.content
