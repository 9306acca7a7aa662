"""The instruction-file loader's parts: markdown handling, globs, the nested cut, the tracker, trust.

The texts and limits here were recorded from Claude Code 2.1.332 (see tests/fixtures/claude_code/
record_instructions.py and instructions.json); the CLI tests are in test_instructions_cli.py.
"""

from __future__ import annotations

import os
from pathlib import Path

from services.instructions import InstructionTracker, Places, load_instructions
from services.instructions.globs import rule_applies
from services.instructions.loader import MAX_IMPORT_DEPTH
from services.instructions.markdown import import_paths, parse
from services.instructions.render import cut_nested, nested_limit
from tests.files import write


def test_import_syntax():
    text = ("see @docs/x.md#part, mail a@b.com, @~/u.md @my\\ file.md @/abs/p.md @./rel.md\n"
            "@@scoped @#tag @(x) `@code.md` ``@two `ticks`.md``\n\n    @indented-after-blank.md\n")
    assert import_paths(text) == ("docs/x.md", "~/u.md", "my file.md", "/abs/p.md", "./rel.md")


def test_fenced_blocks_and_tildes_hide_imports():
    assert import_paths("~~~\n@a.md\n~~~\n````\n```\n@b.md\n````\n@c.md\n") == ("c.md",)


def test_front_matter_paths_forms():
    assert parse("---\npaths: src/**/*.ts\n---\nX\n").globs == ("src/**/*.ts",)
    assert parse("---\npaths: [\"a/*.py\", 'b/**']\n---\nX\n").globs == ("a/*.py", "b")
    assert parse("---\npaths:\n  - \"**\"\n---\nX\n").globs is None  # only ** means always
    assert parse("---\ndescription: d\n---\nX\n") .globs is None
    assert parse("---\npaths: x\n---\nBODY\n").content == "BODY\n"


def test_block_comments_go_inline_ones_stay():
    assert parse("a <!-- keep -->\n<!-- drop\nthis -->\nb\n```\n<!-- in code -->\n```\n").content == \
        "a <!-- keep -->\nb\n```\n<!-- in code -->\n```\n"


def test_rule_globs():
    assert rule_applies(("src/**/*.ts",), "src/a.ts") and rule_applies(("src/**/*.ts",), "src/x/y/a.ts")
    assert not rule_applies(("src/**/*.ts",), "lib/a.ts")
    assert rule_applies(("src",), "src/deep/file.py")  # `src/**` is cut to `src`: everything below it
    assert rule_applies(("*.md",), "docs/deep/a.md")  # no slash: a name at any depth
    assert not rule_applies(("src",), "../src/a.py")


def test_nested_cut_as_recorded():
    # Claude Code 2.1.332 with a 200k-window model: 450 lines of 100 characters -> the first 400, offset 401.
    content = "".join(f"line {i:05d} " + "x" * 88 + "\n" for i in range(450))
    cut = cut_nested(content, "/p/sub/CLAUDE.md", nested_limit(200_000))
    assert cut.endswith("line 00399 " + "x" * 88 + "\n\n> Only the start of this file is shown. For the rest, call "
                        "Read on /p/sub/CLAUDE.md with offset=401 and a limit.")
    assert cut_nested(content, "p", nested_limit(1_000_000)) == content  # a 1M window: 50,000 characters


def test_import_depth_and_cycle(tmp_path):
    assert MAX_IMPORT_DEPTH == 5
    write(tmp_path / "CLAUDE.md", "root\n@a.md\n")
    for name, nxt in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a")):
        write(tmp_path / f"{name}.md", f"{name}-text\n@{nxt}.md\n")
    loaded = load_instructions(Places.for_cwd(tmp_path, tmp_path / "nohome"), trusted=True)
    names = [f.path.name for f in loaded.files]
    assert names == ["CLAUDE.md", "a.md", "b.md", "c.md", "d.md"]  # e.md would be depth 5


def test_tracker_announces_once_and_remembers_a_resumed_history(tmp_path):
    write(tmp_path / "sub" / "CLAUDE.md", "sub rules\n")
    places = Places.for_cwd(tmp_path, tmp_path / "nohome")
    loaded = load_instructions(places, trusted=True)
    tracker = InstructionTracker.after(loaded, places, True, [])
    assert [f.path for f in tracker.touched(tmp_path / "sub" / "x.py")] == [tmp_path / "sub" / "CLAUDE.md"]
    assert tracker.touched(tmp_path / "sub" / "y.py") == []
    resumed = InstructionTracker.after(loaded, places, True, [])
    resumed.history = lambda: [{"role": "user", "content": [], "meta": {"instructions": str(tmp_path / "sub/CLAUDE.md")}}]
    assert resumed.touched(tmp_path / "sub" / "x.py") == []
    untrusted = InstructionTracker.after(load_instructions(places, trusted=False), places, False, [])
    assert untrusted.touched(tmp_path / "sub" / "x.py") == []


def test_a_fifo_named_claude_md_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "CLAUDE.md")
    assert load_instructions(Places.for_cwd(tmp_path, tmp_path / "nohome"), trusted=True).files == []


def test_a_link_inside_the_project_is_followed(tmp_path):
    write(tmp_path / "docs" / "rules.md", "shared rules\n")
    os.symlink(tmp_path / "docs" / "rules.md", tmp_path / "CLAUDE.md")
    loaded = load_instructions(Places.for_cwd(tmp_path, Path("/nonexistent-home")), trusted=True)
    assert [f.content for f in loaded.files] == ["shared rules\n"] and loaded.notices == []


def test_compaction_and_sub_agents_see_a_nested_file_again(tmp_path):
    write(tmp_path / "sub" / "CLAUDE.md", "sub rules\n")
    places = Places.for_cwd(tmp_path, tmp_path / "nohome")
    tracker = InstructionTracker.after(load_instructions(places, trusted=True), places, True, [])
    history: list[dict] = [{"role": "user", "content": []}] * 3
    tracker.history = lambda: history
    assert len(tracker.touched(tmp_path / "sub" / "x.py")) == 1
    assert tracker.fork().touched(tmp_path / "sub" / "x.py") != []  # a sub-agent's own context
    history.append({"role": "user", "content": [], "meta": {"instructions": str(tmp_path / "sub" / "CLAUDE.md")}})
    assert tracker.touched(tmp_path / "sub" / "x.py") == []
    history[:] = history[:1]  # compacted: the announcement was summarised away
    assert len(tracker.touched(tmp_path / "sub" / "x.py")) == 1


def test_the_users_claude_md_may_link_inside_the_home(tmp_path):
    home = tmp_path / "home"
    write(home / "dotfiles" / "claude.md", "my dotfiles rules\n")
    (home / ".claude").mkdir()
    os.symlink(home / "dotfiles" / "claude.md", home / ".claude" / "CLAUDE.md")
    loaded = load_instructions(Places.for_cwd(tmp_path / "proj", home), trusted=False)
    assert [f.content for f in loaded.files] == ["my dotfiles rules\n"] and loaded.notices == []
