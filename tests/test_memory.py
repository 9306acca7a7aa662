"""Agent Memory: loading with its cap, the prompt section, refresh by mtime, nothing created at startup."""

from __future__ import annotations

import os
from pathlib import Path

from services.memory import (
    MAX_MEMORY_BYTES,
    MEMORY_RELATIVE_PATH,
    MemoryStore,
    load_memory,
    memory_path,
    memory_section,
)


def write_memory(cwd: Path, text: str) -> Path:
    path = memory_path(cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_is_none(tmp_path):
    assert load_memory(tmp_path) is None


def test_content_unchanged_and_path(tmp_path):
    write_memory(tmp_path, "prefer tabs\n")
    assert load_memory(tmp_path) == "prefer tabs\n"
    assert MEMORY_RELATIVE_PATH == ".agents/memory/MEMORY.md"


def test_over_32kb_is_truncated(tmp_path):
    write_memory(tmp_path, "x" * (MAX_MEMORY_BYTES + 4096))
    text = load_memory(tmp_path)
    assert len(text.encode("utf-8")) <= MAX_MEMORY_BYTES
    assert "[memory truncated" in text


def test_empty_section(tmp_path):
    section = memory_section(tmp_path, None)
    assert "## Agent Memory" in section
    assert str(memory_path(tmp_path)) in section
    for word in ("remember", "forget", "Edit", "Write", "currently empty", "docs/notes"):
        assert word in section


def test_section_with_body(tmp_path):
    section = memory_section(tmp_path, "prefer tabs")
    assert "prefer tabs" in section and "currently empty" not in section


def test_refresh_unchanged_then_bumped(tmp_path):
    path = write_memory(tmp_path, "v1")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    store = MemoryStore(tmp_path)
    first = store.refresh()
    assert first.content == "v1"
    again = store.refresh()
    assert again.changed is False and again.content == "v1" and again.mtime_ns == first.mtime_ns
    path.write_text("v2", encoding="utf-8")
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    bumped = store.refresh()
    assert bumped.changed is True and bumped.content == "v2"


def test_refresh_sees_creation_and_deletion(tmp_path):
    store = MemoryStore(tmp_path)
    assert store.refresh().content is None
    path = write_memory(tmp_path, "new")
    assert store.refresh().content == "new"
    path.unlink()
    snap = store.refresh()
    assert snap.changed and snap.content is None


def test_nothing_is_created_in_the_project_at_startup(tmp_path, agent_home):
    from agent.loop.factory import AppOptions, build_engine
    from services.config import Settings

    proj = tmp_path / "proj"
    proj.mkdir()
    engine = build_engine(AppOptions(cwd=proj, settings=Settings(mock=True)))
    assert "## Agent Memory" in engine.config.system_prompt
    engine.close()
    assert list(proj.iterdir()) == []
