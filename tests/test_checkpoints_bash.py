"""Bash checkpoints (tools/checkpoints.py): a snapshot of the tree before a turn's first Bash call, rewound
with real git repositories, real files and real bash; the user's repository must not notice."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import services.config  # noqa: F401  (imported before a fork drops root)
import services.credentials  # noqa: F401
from agent.model.scripted import tool_call
from tools.base import SessionState, ToolContext
from tools.bash import BashTool
from tools.checkpoints import MAX_PRE_IMAGE_BYTES, CheckpointStore
from tools.edit import EditTool
from tools.orchestration import ToolRunner
from tools.permissions import PermissionGate
from tools.read import ReadTool

GIT_ID = ["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True).stdout


def bash(cwd: Path, script: str, path: str | None = None) -> None:
    env = dict(os.environ) if path is None else {**os.environ, "PATH": path}
    subprocess.run(["/bin/bash", "-c", script], cwd=cwd, check=True, env=env)


def make_repo(repo: Path) -> None:
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    (repo / "app.py").write_text("greeting = 'hello'\n")
    (repo / "gone.txt").write_text("tracked, to be deleted\n")
    (repo / "src").mkdir()
    (repo / "src" / "lib.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    # The user's own state: a stash, a staged change, an untracked file, an ignored one.
    (repo / "app.py").write_text("greeting = 'stashed'\n")
    git(repo, "stash", "-q")
    (repo / "src" / "lib.py").write_text("x = 2  # staged\n")
    git(repo, "add", "src/lib.py")
    (repo / "notes.txt").write_text("untracked notes\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"ignored\0")


def user_state(repo: Path) -> dict[str, bytes]:
    """Everything of the user's repository a snapshot or a rewind must leave alone."""
    objects = sorted(str(p.relative_to(repo)) for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
    return {
        "index": (repo / ".git" / "index").read_bytes(),
        "HEAD": git(repo, "rev-parse", "HEAD"),
        "stash": git(repo, "stash", "list"),
        "status": git(repo, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored"),
        "objects": "\n".join(objects).encode(),
        "refs": git(repo, "for-each-ref"),
    }


def tree_of(root: Path) -> dict[str, bytes]:
    """Every file (and symlink target) under root but .git, by path: the whole visible state."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
        dirnames[:] = [d for d in dirnames if d != b".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.fsdecode(os.path.relpath(full, os.fsencode(root)))
            out[rel] = b"->" + os.readlink(full) if os.path.islink(full) else open(full, "rb").read()
    return out


def new_store(tmp_path: Path) -> tuple[CheckpointStore, list[dict]]:
    records: list[dict] = []
    store = CheckpointStore(tmp_path / "session" / "checkpoints", records.append)
    return store, records


def snapshot(store: CheckpointStore, cwd: Path, turn: int = 1) -> None:
    store.begin_turn(turn)
    asyncio.run(store.before_bash(cwd))


SHELL_CHANGES = r"""
sed -i "s/hello/hi/" app.py
echo created > new.txt
mkdir -p made/deep && echo deep > made/deep/file.txt
rm gone.txt notes.txt
printf 'more\n' >> src/lib.py
"""


def test_git_bash_edit_create_delete_are_rewound_and_the_repo_is_untouched(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    before_state, before_tree = user_state(repo), tree_of(repo)
    store, records = new_store(tmp_path)
    snapshot(store, repo / "src")  # from a subdirectory: the whole work tree is the root
    assert [r["kind"] for r in records] == ["git-tree"] and records[0]["root"] == os.path.realpath(repo)
    assert user_state(repo) == before_state, "the snapshot wrote to the user's repository"
    bash(repo, SHELL_CHANGES)
    changed = {Path(cp.path).relative_to(os.path.realpath(repo)).as_posix() for cp in store.files_since(1)}
    assert changed == {"app.py", "new.txt", "made/deep/file.txt", "gone.txt", "notes.txt", "src/lib.py"}
    assert store.files_since(2) == []  # nothing was taken at or after turn 2
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 6
    after = tree_of(repo)
    assert {k: v for k, v in after.items()} == before_tree | {}, set(after) ^ set(before_tree)
    assert (repo / "made").is_dir() and not any((repo / "made").rglob("*.txt"))  # empty dirs are left
    assert user_state(repo) == before_state, "the rewind changed the user's index, HEAD, stash or objects"
    assert records[-1] == {"type": "checkpoint", "kind": "rewound", "turn": 1}
    assert store.files_since(1) == []


def test_files_snapshot_outside_git_is_rewound(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    (work / "app.py").write_text("greeting = 'hello'\n")
    (work / "gone.txt").write_text("to be deleted\n")
    (work / "notes.txt").write_text("notes\n")
    (work / "src").mkdir()
    (work / "src" / "lib.py").write_text("x = 1\n")
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "node_modules").mkdir()
    (work / "node_modules" / "dep.js").write_text("skipped\n")
    before = tree_of(work)
    store, records = new_store(tmp_path)
    snapshot(store, work)
    assert [r["kind"] for r in records] == ["files"] and records[0]["complete"] is True
    bash(work, SHELL_CHANGES + "chmod -x run.sh\n")
    changed = {Path(cp.path).relative_to(work).as_posix() for cp in store.files_since(1)}
    assert changed == {"app.py", "new.txt", "made/deep/file.txt", "gone.txt", "notes.txt", "src/lib.py", "run.sh"}
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 7
    assert tree_of(work) == before
    assert os.access(work / "run.sh", os.X_OK)


def test_git_absent_from_path_falls_back_to_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    before = tree_of(repo)
    bin_dir = tmp_path / "bin"  # a PATH with bash and coreutils but no git
    bin_dir.mkdir()
    for tool in ("bash", "sed", "rm", "mkdir", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert [r["kind"] for r in records] == ["files"]
    bash(repo, SHELL_CHANGES, path=str(bin_dir))
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 6
    assert tree_of(repo) == before


def test_resume_rebuilds_bash_snapshots_and_rewound_markers(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    before_repo, before_plain = tree_of(repo), tree_of(plain)
    store, records = new_store(tmp_path)
    snapshot(store, repo, turn=1)
    bash(repo, SHELL_CHANGES)
    snapshot(store, plain, turn=3)
    bash(plain, "echo changed > a.txt; echo b > b.txt")
    transcript = json.loads(json.dumps(records))  # what a resume reads back
    resumed = CheckpointStore(tmp_path / "session" / "checkpoints", transcript.append)
    resumed.load(transcript)
    assert len(resumed.files_since(3)) == 2 and len(resumed.files_since(1)) == 8
    restored, problems = resumed.restore(3)
    assert problems == [] and tree_of(plain) == before_plain and tree_of(repo) != before_repo
    again = CheckpointStore(tmp_path / "session" / "checkpoints")
    again.load(transcript)  # now with the rewound marker: turn 3's snapshot is gone, turn 1's is there
    assert len(again.files_since(3)) == 0 and len(again.files_since(1)) == 6
    restored, problems = again.restore(1)
    assert problems == [] and tree_of(repo) == before_repo


async def test_edit_pre_image_and_bash_in_one_turn_the_earliest_wins(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    before = tree_of(repo)
    store, records = new_store(tmp_path)
    session = SessionState(cwd=repo)
    session.checkpoints = store
    ctx = ToolContext(session=session, project_root=repo)
    tools = {"Read": ReadTool(), "Edit": EditTool(), "Bash": BashTool()}
    runner = ToolRunner(tools, ctx, PermissionGate(mode="bypassPermissions"))

    async def run(*uses: dict) -> list:
        return [ev async for ev in runner.run(list(uses))]

    # Turn 1: Edit first (pre-image 'hello'), then Bash changes the same file again and makes another.
    store.begin_turn(1)
    await run(tool_call("Read", {"file_path": "app.py"}, id="r1"))
    await run(tool_call("Edit", {"file_path": "app.py", "old_string": "hello", "new_string": "hi"}, id="e1"))
    await run(tool_call("Bash", {"command": "sed -i s/hi/hey/ app.py && echo x > bash-made.txt"}, id="b1"))
    await run(tool_call("Bash", {"command": "echo y > second.txt"}, id="b2"))  # same turn: no second snapshot
    kinds = [r.get("kind", "pre-image") for r in records]
    assert [k for k in kinds if k != "written"] == ["pre-image", "git-tree"]
    assert (repo / "app.py").read_text() == "greeting = 'hey'\n"
    # Turn 5: Bash first (the snapshot has 'hey'), then Edit ('hey' -> 'yo', its pre-image is 'HEY' after sed).
    store.begin_turn(5)
    await run(tool_call("Bash", {"command": "sed -i s/hey/HEY/ app.py"}, id="b3"))
    await run(tool_call("Read", {"file_path": "app.py"}, id="r2"))
    await run(tool_call("Edit", {"file_path": "app.py", "old_string": "HEY", "new_string": "yo"}, id="e2"))
    assert (repo / "app.py").read_text() == "greeting = 'yo'\n"
    assert [cp.path for cp in store.files_since(5)] == [os.path.realpath(repo / "app.py")]
    restored, problems = store.restore(5)
    assert problems == [] and (repo / "app.py").read_text() == "greeting = 'hey'\n"  # the snapshot, not 'HEY'
    restored, problems = store.restore(1)
    assert problems == [] and tree_of(repo) == before  # the Edit pre-image 'hello', not the snapshot's 'hi'


async def test_background_bash_is_snapshotted_and_concurrent_calls_share_one(tmp_path: Path,
                                                                              agent_home: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    (work / "keep.txt").write_text("keep\n")
    store, records = new_store(tmp_path)
    store.begin_turn(2)
    await asyncio.gather(store.before_bash(work), store.before_bash(work))
    assert len(records) == 1
    session = SessionState(cwd=work)
    session.checkpoints = store
    ctx = ToolContext(session=session, project_root=work)
    runner = ToolRunner({"Bash": BashTool()}, ctx, PermissionGate(mode="bypassPermissions"))
    store.begin_turn(3)
    events = [ev async for ev in runner.run([tool_call(
        "Bash", {"command": "sleep 0.3; echo later > bg.txt; echo changed > keep.txt", "run_in_background": True},
        id="bg")])]
    assert events and [r["turn"] for r in records] == [2, 3]
    for _ in range(200):
        if (work / "bg.txt").exists() and (work / "keep.txt").read_text() == "changed\n":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)
    restored, problems = store.restore(3)  # the background command's changes, made after the call returned
    assert problems == [] and sorted(Path(p).name for p in restored) == ["bg.txt", "keep.txt"]
    assert not (work / "bg.txt").exists() and (work / "keep.txt").read_text() == "keep\n"


HOSTILE = ["new\nline.txt", "esc\x1b[31mred.txt", os.fsdecode(b"latin1-\xe9.txt"), "-dash.txt", "sp ace.txt"]


@pytest.mark.parametrize("use_git", [True, False])
def test_hostile_file_names_round_trip(tmp_path: Path, use_git: bool) -> None:
    work = tmp_path / "w"
    work.mkdir()
    for i, name in enumerate(HOSTILE):
        (work / os.fsencode(name).decode("utf-8", "surrogateescape")).write_bytes(f"v{i}\n".encode())
    (work / "plain.txt").write_text("plain\n")
    if use_git:
        git(work, "init", "-q")
        git(work, "add", HOSTILE[0], HOSTILE[1])
        git(work, "commit", "-qm", "some tracked")
    before = tree_of(work)
    store, records = new_store(tmp_path)
    snapshot(store, work)
    assert records[0]["kind"] == ("git-tree" if use_git else "files")
    for name in HOSTILE[:3]:  # modify, then delete two, create three more hostile ones
        (work / name).write_bytes(b"changed\n")
    (work / HOSTILE[3]).unlink()
    (work / HOSTILE[4]).unlink()
    for name in ("made\nnew.txt", "made\x1b]0;title\x07.txt", os.fsdecode(b"made-\xff\xfe.txt")):
        (work / name).write_bytes(b"new\n")
    assert len(store.files_since(1)) == 8
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 8
    assert tree_of(work) == before


@pytest.mark.parametrize("use_git", [True, False])
def test_symlinks_are_never_followed_out_of_the_root(tmp_path: Path, use_git: bool) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside, must not change\n")
    work = tmp_path / "w"
    work.mkdir()
    (work / "etc").symlink_to("/etc")  # a symlink to /etc in the tree: restored as a link, never written through
    (work / "sub").mkdir()
    (work / "sub" / "f.txt").write_text("inside\n")
    if use_git:
        git(work, "init", "-q")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "init")
    etc_before = sorted(os.listdir("/etc"))
    before = tree_of(work)
    store, _ = new_store(tmp_path)
    snapshot(store, work)
    # The shell swaps the directory for a symlink to outside, and the /etc link for a file.
    bash(work, f"rm -rf sub && ln -s {outside} sub && rm etc && echo plain > etc")
    restored, problems = store.restore(1)
    assert problems == [], problems
    assert tree_of(work) == before and (work / "etc").is_symlink() and not (work / "sub").is_symlink()
    assert (outside / "f.txt").read_text() == "outside, must not change\n" and sorted(os.listdir(outside)) == ["f.txt"]
    assert sorted(os.listdir("/etc")) == etc_before


def test_a_symlink_that_looks_old_is_reported_not_written_through(tmp_path: Path) -> None:
    """The ignored symlink is not deleted by the rewind (ignored files are the user's), so the write of
    sub/f.txt would have to go through it: refused and reported."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "sub").mkdir()
    (repo / "sub" / "f.txt").write_text("inside\n")
    (repo / ".gitignore").write_text("/sub\n")
    git(repo, "init", "-q")
    git(repo, "add", "-f", ".gitignore", "sub/f.txt")
    git(repo, "commit", "-qm", "init")
    store, _ = new_store(tmp_path)
    snapshot(store, repo)
    bash(repo, f"rm -rf sub && ln -s {outside} sub")
    restored, problems = store.restore(1)
    assert restored == [] and len(problems) == 1
    assert "sub/f.txt" in problems[0] and "symlink" in problems[0]
    assert (outside / "f.txt").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["f.txt"]


def test_pre_image_restore_refuses_a_parent_that_became_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "w"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "mod.py").write_text("old\n")
    store, _ = new_store(tmp_path)
    store.begin_turn(1)
    store.before_write("Write", {"file_path": "pkg/mod.py"}, work)
    shutil.rmtree(work / "pkg")
    (work / "pkg").symlink_to(outside)
    restored, problems = store.restore(1)
    assert restored == [] and len(problems) == 1 and "symlink" in problems[0]
    assert os.listdir(outside) == []


def test_a_broken_index_falls_back_to_head_and_is_left_as_it_was(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / ".git" / "index").write_bytes(b"DIRC garbage \x00\xff not an index")
    broken = (repo / ".git" / "index").read_bytes()
    before = tree_of(repo)
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert records[0]["kind"] == "git-tree"
    bash(repo, SHELL_CHANGES)
    restored, problems = store.restore(1)
    assert problems == [] and tree_of(repo) == before
    assert (repo / ".git" / "index").read_bytes() == broken


@pytest.mark.parametrize("use_git", [True, False])
def test_a_large_binary_file_is_reported_not_lost(tmp_path: Path, use_git: bool) -> None:
    work = tmp_path / "w"
    work.mkdir()
    big = os.urandom(1024) * (MAX_PRE_IMAGE_BYTES // 1024 + 1)
    (work / "model.bin").write_bytes(big)
    (work / "small.txt").write_text("small\n")
    if use_git:
        git(work, "init", "-q")
    store, _ = new_store(tmp_path)
    snapshot(store, work)
    stored = sum(p.stat().st_size for p in (tmp_path / "session").rglob("*") if p.is_file())
    assert stored < len(big) // 2  # the big file was not copied
    bash(work, "printf 'x' >> model.bin; echo changed > small.txt")
    restored, problems = store.restore(1)
    assert [Path(p).name for p in restored] == ["small.txt"] and (work / "small.txt").read_text() == "small\n"
    assert len(problems) == 1 and "model.bin" in problems[0] and "too large" in problems[0]
    assert (work / "model.bin").read_bytes() == big + b"x"  # left as it is, not deleted, not truncated


def unreadable_scenario(work: Path, use_git: bool) -> dict:
    work.mkdir()
    (work / "secret.txt").write_text("secret\n")
    (work / "other.txt").write_text("other\n")
    if use_git:
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    os.chmod(work / "secret.txt", 0)
    store = CheckpointStore(work.parent / "ck")
    snapshot(store, work)
    kind = store.items[0].kind
    os.chmod(work / "secret.txt", 0o600)
    (work / "secret.txt").write_text("overwritten\n")
    (work / "other.txt").write_text("changed\n")
    restored, problems = store.restore(1)
    return {"kind": kind, "restored": restored, "problems": problems,
            "other": (work / "other.txt").read_text(), "secret": (work / "secret.txt").read_text()}


def as_unprivileged(base: Path, fn, *args) -> dict:
    """Run fn in a forked child that is not root (root reads a mode-000 file), result as JSON on a pipe."""
    if os.geteuid() != 0:
        return fn(*args)
    os.chown(base, 65534, 65534)
    for parent in [base, *base.parents]:  # the child must reach its directory
        os.chmod(parent, parent.stat().st_mode | 0o005)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, run, report, exit without running the parent's cleanup
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.environ.update(HOME=str(base), AGENT_HOME=str(base / "home"))
            out = json.dumps(fn(*args)).encode()
        except BaseException as exc:  # reported to the parent, which fails the test
            out = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
            code = 1
        os.write(w, out)
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.parametrize("use_git", [True, False])
def test_an_unreadable_file_is_reported_and_the_rest_restored(tmp_path: Path, use_git: bool) -> None:
    base = tmp_path / "u"
    base.mkdir()
    out = as_unprivileged(base, unreadable_scenario, base / "w", use_git)
    assert "error" not in out, out
    assert out["kind"] == ("git-tree" if use_git else "files")
    assert out["other"] == "other\n" and [Path(p).name for p in out["restored"]] == ["other.txt"]
    assert len(out["problems"]) == 1 and "secret.txt" in out["problems"][0]
    assert out["secret"] == "overwritten\n"


def test_the_agents_own_files_inside_the_tree_are_never_captured_or_restored(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    project = work / ".agent" / "projects" / "slug"  # the real layout: <project>/<id>.jsonl, <project>/<id>/
    store = CheckpointStore(project / "sid" / "checkpoints")
    snapshot(store, work)
    transcript = project / "sid.jsonl"
    transcript.write_text("written after the snapshot\n")
    (work / "a.txt").write_text("b\n")
    restored, problems = store.restore(1)
    assert problems == [] and [Path(p).name for p in restored] == ["a.txt"]
    assert transcript.exists() and (project / "sid" / "checkpoints").is_dir()


def test_a_file_that_only_looks_new_is_kept(tmp_path: Path) -> None:
    """An ignored file becomes visible when the shell edits .gitignore: it is older than the snapshot, so the
    rewind restores .gitignore and keeps the file."""
    repo = tmp_path / "repo"
    make_repo(repo)
    old_ignored = (repo / "build" / "out.bin").read_bytes()
    store, _ = new_store(tmp_path)
    snapshot(store, repo)
    bash(repo, "echo '# nothing ignored' > .gitignore")
    plan = {Path(cp.path).name: cp.existed for cp in store.files_since(1)}
    assert plan == {".gitignore": True, "out.bin": False}
    restored, problems = store.restore(1)
    assert [Path(p).name for p in restored] == [".gitignore"]
    assert len(problems) == 1 and "out.bin" in problems[0] and "kept" in problems[0]
    assert (repo / "build" / "out.bin").read_bytes() == old_ignored


def test_snapshot_objects_are_shared_between_turns(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / "data.txt").write_bytes(hashlib.sha256(b"x").digest() * 1000)
    store, records = new_store(tmp_path)
    snapshot(store, repo, turn=1)
    objects = Path(records[0]["objects"])
    count = sum(1 for p in objects.rglob("*") if p.is_file())
    snapshot(store, repo, turn=3)
    assert records[1]["tree"] == records[0]["tree"]
    assert sum(1 for p in objects.rglob("*") if p.is_file()) == count  # nothing new to store


@pytest.mark.parametrize("batch", [True, False])
def test_git_filters_round_trip_and_the_tree_alone_suffices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            batch: bool) -> None:
    """Content goes in through clean filters and comes back through smudge (CRLF here), whether the files are
    checked out together or one by one, and from the tree id alone when the kept index is gone."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("*.txt text eol=crlf\n")
    (repo / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    (repo / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "link").symlink_to("win.txt")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "draft.txt").write_bytes(b"untracked\r\ndraft\r\n")
    before = tree_of(repo)
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    Path(records[0]["index"]).unlink()  # only the tree id is left
    if not batch:
        monkeypatch.setattr(CheckpointStore, "_checkout_all", lambda self, plan: {})
    bash(repo, "printf 'x\\n' > win.txt; printf 'y\\n' > draft.txt; chmod -x tool.sh; echo > tool.sh; rm link")
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 4
    assert tree_of(repo) == before and os.access(repo / "tool.sh", os.X_OK) and (repo / "link").is_symlink()


def test_home_directory_and_failed_snapshots_are_said_at_rewind(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("private key\n")
    monkeypatch.setenv("HOME", str(home))
    store, records = new_store(tmp_path)
    snapshot(store, home, turn=1)  # not a repository: a home directory is not copied
    assert records[0]["kind"] == "none" and "home" in records[0]["reason"]
    assert not list((tmp_path / "session").rglob("*id_ed25519*"))
    assert not any("private key" in p.read_text(errors="replace")
                   for p in (tmp_path / "session").rglob("*") if p.is_file())
    broken = CheckpointStore(tmp_path / "not-a-dir" / "checkpoints", records.append)
    (tmp_path / "not-a-dir").write_text("a file where the session directory should be\n")
    work = tmp_path / "w"
    work.mkdir()
    snapshot(broken, work, turn=2)
    assert records[1]["kind"] == "none" and records[1]["reason"]
    resumed = CheckpointStore(tmp_path / "session" / "checkpoints")
    resumed.load(records)
    restored, problems = resumed.restore(1)
    assert restored == [] and len(problems) == 2
    assert "turn 1" in problems[0] and "not checkpointed" in problems[0] and "turn 2" in problems[1]


def test_a_nested_repository_made_since_is_left_alone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    store, _ = new_store(tmp_path)
    snapshot(store, repo)
    bash(repo, "git init -q vendor/lib && echo v > vendor/lib/v.txt && echo n > new.txt")
    restored, problems = store.restore(1)
    assert [Path(p).name for p in restored] == ["new.txt"]
    assert len(problems) == 1 and "nested repository" in problems[0]
    assert (repo / "vendor" / "lib" / "v.txt").read_text() == "v\n"


def test_a_capped_snapshot_restores_what_it_holds_and_says_the_rest(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import tools.checkpoints as checkpoints

    monkeypatch.setattr(checkpoints, "MAX_SNAPSHOT_FILES", 5)
    work = tmp_path / "w"
    work.mkdir()
    for i in range(10):
        (work / f"f{i}.txt").write_text(f"{i}\n")
    store, records = new_store(tmp_path)
    snapshot(store, work)
    assert records[0]["kind"] == "files" and records[0]["complete"] is False
    bash(work, "echo changed > f0.txt; echo changed > f9.txt; echo new > a-new.txt")
    restored, problems = store.restore(1)
    assert [Path(p).name for p in restored] == ["f0.txt"] and (work / "f0.txt").read_text() == "0\n"
    assert (work / "a-new.txt").exists() and (work / "f9.txt").read_text() == "changed\n"  # beyond the cap
    assert len(problems) == 1 and "5 files" in problems[0]


def test_repl_rewinds_a_bash_turn_after_resume(cli, fake_anthropic) -> None:
    """The whole path: the REPL's turn, the orchestrator's hook, the transcript record, a resume, Esc Esc."""
    pexpect = pytest.importorskip("pexpect")  # noqa: F841
    from tests.fake_anthropic import tool_block
    from tests.test_repl_pty import PROMPT_READY, finish, spawn

    work = Path(cli.cwd)
    git(work, "init", "-q")
    (work / "app.py").write_text("greeting = 'hello'\n")
    (work / "gone.txt").write_text("bye\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "init")
    index = (work / ".git" / "index").read_bytes()
    fake_anthropic.reply(tool_block("Bash", {"command": "sed -i s/hello/hi/ app.py && echo x > made.txt && rm gone.txt"}))
    fake_anthropic.text("Done with the shell.")
    child = spawn(cli, "--permission-mode", "bypassPermissions")
    child.send("use the shell\r")
    child.expect_exact("Done with the shell.")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'hi'\n" and (work / "made.txt").exists()
    child = spawn(cli, "-c", "--permission-mode", "bypassPermissions")
    time.sleep(0.5)
    child.send("\x1b")
    time.sleep(0.1)
    child.send("\x1b")
    child.expect_exact("Rewind to just before which prompt?")
    child.send("1\r")
    child.expect_exact("conversation and code (3 files)")
    child.send("3\r")  # code only
    child.expect_exact("Restored 3 file(s).")
    child.expect_exact(PROMPT_READY)
    child.send("\x04")
    assert finish(child) == 0
    assert (work / "app.py").read_text() == "greeting = 'hello'\n" and (work / "gone.txt").read_text() == "bye\n"
    assert not (work / "made.txt").exists()
    assert (work / ".git" / "index").read_bytes() == index
    assert git(work, "status", "--porcelain") == b""


def test_only_the_latest_indexes_are_kept_and_older_snapshots_still_rewind(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import tools.checkpoints as checkpoints

    monkeypatch.setattr(checkpoints, "KEPT_INDEXES", 2)
    repo = tmp_path / "repo"
    make_repo(repo)
    before = tree_of(repo)
    store, records = new_store(tmp_path)
    for turn in (1, 3, 5):
        snapshot(store, repo, turn=turn)
    assert [Path(r["index"]).exists() for r in records] == [False, True, True]
    bash(repo, SHELL_CHANGES)
    restored, problems = store.restore(1)
    assert problems == [] and len(restored) == 6 and tree_of(repo) == before
