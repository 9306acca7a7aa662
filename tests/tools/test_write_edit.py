"""Write and Edit against real files: read-before-write, atomic mode-keeping writes, matching rules."""

from __future__ import annotations

import os
import stat
from pathlib import Path


async def test_write_creates_with_parents_and_says_created(project: Path, run) -> None:
    out = await run("Write", file_path="deep/er/new.txt", content="hi\n")
    assert not out.is_error and "created" in out.content
    assert (project / "deep/er/new.txt").read_text() == "hi\n"


async def test_overwrite_requires_a_fresh_read(project: Path, run) -> None:
    p = project / "a.txt"
    p.write_text("one\n")
    out = await run("Write", file_path="a.txt", content="two\n")
    assert out.is_error and "Read it first" in out.content and p.read_text() == "one\n"
    await run("Read", file_path="a.txt")
    p.write_text("changed behind our back\n")
    out = await run("Write", file_path="a.txt", content="two\n")
    assert out.is_error and out.content == (
        "<tool_use_error>File has been modified since read, either by the user or by a linter. "
        "Read it again before attempting to write it.</tool_use_error>")
    await run("Read", file_path="a.txt")
    out = await run("Write", file_path="a.txt", content="two\n")
    assert not out.is_error and "updated" in out.content and p.read_text() == "two\n"
    # The read state follows the write: an Edit right after works without a new Read.
    out = await run("Edit", file_path="a.txt", old_string="two", new_string="three")
    assert not out.is_error and p.read_text() == "three\n"


async def test_write_keeps_the_mode_and_leaves_no_temp_files(project: Path, run) -> None:
    p = project / "run.sh"
    p.write_text("echo a\n")
    os.chmod(p, 0o751)
    await run("Read", file_path="run.sh")
    await run("Write", file_path="run.sh", content="echo b\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert sorted(x.name for x in project.iterdir()) == ["run.sh"]


async def test_edit_unique_exact_says_one_line(project: Path, run) -> None:
    p = project / "m.py"
    p.write_text("".join(f"line{i}\n" for i in range(1, 21)))
    await run("Read", file_path="m.py")
    out = await run("Edit", file_path="m.py", old_string="line10\n", new_string="TEN\n")
    assert not out.is_error
    assert out.content == (f"The file {p} has been updated successfully. "
                           "(file state is current in your context — no need to Read it back)")
    assert "TEN\nline11" in p.read_text()


async def test_edit_refusals(project: Path, run) -> None:
    p = project / "a.txt"
    p.write_text("x = 1\nx = 1\n")
    out = await run("Edit", file_path="a.txt", old_string="x = 1", new_string="x = 2")
    assert out.is_error and "Read it first" in out.content
    await run("Read", file_path="a.txt")
    out = await run("Edit", file_path="a.txt", old_string="x = 1", new_string="x = 1")
    assert out.is_error and out.content == (
        "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>")
    out = await run("Edit", file_path="a.txt", old_string="x = 1", new_string="x = 2")
    assert out.is_error and out.content.startswith("<tool_use_error>Found 2 matches of the string to replace, but ")
    assert out.content.endswith("\nString: x = 1</tool_use_error>")
    out = await run("Edit", file_path="a.txt", old_string="y = 1", new_string="y = 2")
    assert out.is_error and out.content == "<tool_use_error>String to replace not found in file.\nString: y = 1</tool_use_error>"
    out = await run("Edit", file_path="a.txt", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert not out.is_error and "All occurrences were successfully replaced" in out.content
    assert p.read_text() == "x = 2\nx = 2\n"
    out = await run("Edit", file_path="missing.txt", old_string="a", new_string="b")
    assert out.is_error and "does not exist" in out.content


async def test_edit_crlf_file_keeps_crlf(project: Path, run) -> None:
    p = project / "win.txt"
    p.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    await run("Read", file_path="win.txt")
    out = await run("Edit", file_path="win.txt", old_string="second\nthird", new_string="2nd\nthird\nfourth")
    assert not out.is_error
    assert p.read_bytes() == b"first\r\n2nd\r\nthird\r\nfourth\r\n"


async def test_edit_trailing_whitespace_insensitive_maps_back(project: Path, run) -> None:
    p = project / "ws.py"
    p.write_text("def f():   \n    return 1  \n\nkeep\n")
    await run("Read", file_path="ws.py")
    out = await run("Edit", file_path="ws.py", old_string="def f():\n    return 1", new_string="def f():\n    return 2")
    assert not out.is_error and "trailing whitespace" in out.content
    assert p.read_text() == "def f():\n    return 2  \n\nkeep\n"


async def test_edit_empty_old_string_creates_a_missing_file(project: Path, run) -> None:
    out = await run("Edit", file_path="new/file.txt", old_string="", new_string="hello\n")
    assert not out.is_error and (project / "new/file.txt").read_text() == "hello\n"
    out = await run("Edit", file_path="new/file.txt", old_string="hello", new_string="bye")
    assert not out.is_error and (project / "new/file.txt").read_text() == "bye\n"
    out = await run("Edit", file_path="new/file.txt", old_string="", new_string="again")
    assert out.is_error


async def test_edit_preserves_undecodable_bytes(project: Path, run) -> None:
    p = project / "l1.txt"
    p.write_bytes(b"caf\xe9\nname = old\n")
    await run("Read", file_path="l1.txt")
    out = await run("Edit", file_path="l1.txt", old_string="name = old", new_string="name = new")
    assert not out.is_error and p.read_bytes() == b"caf\xe9\nname = new\n"


async def test_edit_through_a_symlink_keeps_the_link(project: Path, run) -> None:
    target = project / "real.txt"
    target.write_text("a\n")
    (project / "link.txt").symlink_to(target)
    await run("Read", file_path="link.txt")
    out = await run("Edit", file_path="link.txt", old_string="a", new_string="b")
    assert not out.is_error and (project / "link.txt").is_symlink() and target.read_text() == "b\n"
