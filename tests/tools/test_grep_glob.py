"""Grep and Glob on the real ripgrep binary."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tools.ripgrep import find_rg


def _tree(root: Path) -> None:
    (root / ".gitignore").write_text("build/\nsecret.py\n")
    (root / "src").mkdir()
    (root / "build").mkdir()
    (root / ".git").mkdir()
    (root / "src/a.py").write_text("def alpha():\n    return 'needle'\n")
    (root / "src/b.py").write_text("NEEDLE = 1\nneedle = 2\n")
    (root / "notes.md").write_text("a needle in text\n-flag here\n")
    (root / "build/out.py").write_text("needle in build\n")
    (root / "secret.py").write_text("needle secret\n")
    (root / ".hidden.py").write_text("needle hidden\n")
    (root / ".git/config").write_text("needle in git\n")
    now = time.time()
    for i, name in enumerate(["notes.md", "src/a.py", "src/b.py", ".hidden.py"]):
        os.utime(root / name, (now - 100 + i * 10, now - 100 + i * 10))


def test_rg_is_found() -> None:
    assert find_rg() is not None


async def test_files_with_matches_newest_first_respecting_gitignore(project: Path, run) -> None:
    _tree(project)
    out = await run("Grep", pattern="needle")
    lines = out.content.splitlines()
    assert lines[0] == "Found 4 files"
    assert lines[1:] == [".hidden.py", "src/b.py", "src/a.py", "notes.md"]


async def test_content_mode_line_numbers_case_and_context(project: Path, run) -> None:
    _tree(project)
    # One file: its lines without the file name (Claude Code's format).
    out = await run("Grep", pattern="needle", output_mode="content", path="src/b.py")
    assert out.content == "2:needle = 2"
    out = await run("Grep", pattern="needle", output_mode="content", path="src/b.py", **{"-i": True})
    assert out.content.splitlines() == ["1:NEEDLE = 1", "2:needle = 2"]
    out = await run("Grep", pattern="ne+d", output_mode="content", path="src/b.py", **{"-o": True})
    assert out.content == "2:need"
    out = await run("Grep", pattern="return", output_mode="content", path="src", **{"-B": 1})
    assert "src/a.py-1-def alpha():" in out.content and "src/a.py:2:" in out.content
    out = await run("Grep", pattern="needle", output_mode="content", path="src/b.py", **{"-n": False})
    assert out.content == "needle = 2"


async def test_count_glob_type_and_multiline(project: Path, run) -> None:
    _tree(project)
    out = await run("Grep", pattern="needle", output_mode="count", **{"-i": True}, glob="*.py")
    assert "src/b.py:2" in out.content and "notes.md" not in out.content and "secret.py" not in out.content
    out = await run("Grep", pattern="needle", type="md")
    assert out.content.splitlines()[1:] == ["notes.md"]
    out = await run("Grep", pattern=r"alpha\(\):\n\s+return", multiline=True)
    assert "src/a.py" in out.content


async def test_pattern_beginning_with_dash(project: Path, run) -> None:
    _tree(project)
    out = await run("Grep", pattern="-flag", output_mode="content")
    assert out.content == "notes.md:2:-flag here"


async def test_invalid_regex_and_no_matches(project: Path, run) -> None:
    _tree(project)
    out = await run("Grep", pattern="foo(")
    assert out.is_error and "regex parse error" in out.content
    out = await run("Grep", pattern="zzz_not_there")
    assert not out.is_error and out.content == "No files found"
    out = await run("Grep", pattern="zzz_not_there", output_mode="content")
    assert not out.is_error and out.content == "No matches found"
    out = await run("Grep", pattern="x", path="no/such")
    assert out.is_error and "does not exist" in out.content


async def test_head_limit_offset_and_truncation_note(project: Path, run) -> None:
    for i in range(300):
        (project / f"f{i:03d}.txt").write_text("hit\n")
    out = await run("Grep", pattern="hit")
    lines = out.content.splitlines()
    assert lines[0] == "Found 300 files" and len([x for x in lines if x.startswith("f")]) == 250
    assert "offset=250" in out.content
    out = await run("Grep", pattern="hit", head_limit=10, offset=295)
    assert len([x for x in out.content.splitlines() if x.startswith("f")]) == 5
    out = await run("Grep", pattern="hit", head_limit=0)
    assert len([x for x in out.content.splitlines() if x.startswith("f")]) == 300 and "Showing" not in out.content


async def test_max_columns(project: Path, run) -> None:
    (project / "wide.txt").write_text("needle" + "x" * 1000 + "\n")
    out = await run("Grep", pattern="needle", output_mode="content")
    assert len(out.content) < 700 and "Omitted long" in out.content


async def test_glob_gitignore_newest_first_hidden_and_none(project: Path, run) -> None:
    _tree(project)
    out = await run("Glob", pattern="**/*.py")
    assert out.content.splitlines() == [".hidden.py", "src/b.py", "src/a.py"]
    out = await run("Glob", pattern="*.py", path="src")
    assert out.content.splitlines() == ["src/b.py", "src/a.py"]
    out = await run("Glob", pattern="*.rs")
    assert out.content == "No files found"
    out = await run("Glob", pattern=str(project / "src" / "*.py"))
    assert out.content.splitlines() == ["src/b.py", "src/a.py"]
    out = await run("Glob", pattern="*", path="missing")
    assert out.is_error


async def test_glob_limit_100_with_note(project: Path, run) -> None:
    for i in range(120):
        (project / f"g{i}.txt").write_text("")
    out = await run("Glob", pattern="*.txt")
    assert len(out.content.splitlines()[0:100]) == 100 and "100 newest of 120" in out.content


async def test_glob_truncation_keeps_the_100_newest_in_order_ties_by_path(project: Path, run) -> None:
    now = time.time()
    for i in range(120):
        f = project / f"g{i:03d}.txt"
        f.write_text("")
        os.utime(f, (now - 1000 + i, now - 1000 + i))  # g119 is the newest
    for name in ("tie_b.txt", "tie_a.txt"):  # same mtime, newer than all: path order decides
        (project / name).write_text("")
        os.utime(project / name, (now, now))
    out = await run("Glob", pattern="*.txt")
    shown = out.content.split("\n\n")[0].splitlines()
    assert shown == ["tie_a.txt", "tie_b.txt", *(f"g{i:03d}.txt" for i in range(119, 21, -1))]
    assert "100 newest of 122" in out.content


async def test_glob_skips_version_control_directories_at_any_depth(project: Path, run) -> None:
    for d in (".git", ".hg", "sub/.git", "sub/.svn"):
        (project / d).mkdir(parents=True)
        (project / d / "config").write_text("")
    (project / "sub" / "config").write_text("")
    out = await run("Glob", pattern="**/config")
    assert out.content.splitlines() == ["sub/config"]


async def test_glob_tie_across_the_truncation_edge_is_decided_by_path(project: Path, run) -> None:
    stamp = time.time() - 50
    for i in range(130):  # created in reverse so walk order and path order disagree
        f = project / f"t{129 - i:03d}.txt"
        f.write_text("")
        os.utime(f, (stamp, stamp))
    out = await run("Glob", pattern="*.txt")
    assert out.content.split("\n\n")[0].splitlines() == [f"t{i:03d}.txt" for i in range(100)]


async def test_files_with_matches_under_a_path_keeps_the_header_and_order(project: Path, run) -> None:
    """A `path` does not change the output mode: the header and newest-first order stay."""
    _tree(project)
    (project / "src/b.py").touch()
    out = await run("Grep", pattern="needle", path="src")
    lines = out.content.splitlines()
    assert lines[0] == "Found 2 files"
    assert lines[1:] == ["src/b.py", "src/a.py"]
