"""A hostile repository runs nothing through the checkpoints' git (tools/checkpoints.py over
services/git_safe.py), and the checkpoint still works.

Before each Bash call the checkpoint snapshots the tree with `git add -A` / `write-tree` on the host,
outside the sandbox; a rewind runs `read-tree`, `ls-files`, `diff`, `checkout-index` and `cat-file
--filters`. Each test builds a real repository whose configuration names a program at one of the ways
git executes one (a marker script: it writes a file when run), takes a real snapshot, changes files with
real bash, and rewinds: no marker may appear, and the change must come back.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from services.git_safe import SafeGit, neutralising
from tests.fake_anthropic import tool_block
from tests.files import write
from tests.security.hostile import marker_script, result_text, tool_results_sent
from tools.checkpoints import CheckpointStore
from tools.sandbox import probe

GIT_ID = ["-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
          "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]


def git(repo: Path, *args: str) -> str:
    # The test's own git, before anything hostile is configured (or with it switched off).
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def bash(cwd: Path, script: str) -> None:
    subprocess.run(["/bin/bash", "-c", script], cwd=cwd, check=True)


class Marks:
    """Marker programs under tmp: `cmd(name)` runs and leaves `marks/<name>`."""

    def __init__(self, tmp: Path) -> None:
        self.dir, self.scripts = tmp / "marks", tmp / "scripts"
        self.dir.mkdir()

    def cmd(self, name: str) -> str:
        return marker_script(self.scripts / f"{name}.py", self.dir / name)

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.dir.iterdir())


def clean_repo(repo: Path) -> Path:
    """A committed repository (app.txt, lib/util.txt) whose config is still the test's own."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    write(repo / "app.txt", "original\n")
    write(repo / "lib" / "util.txt", "util\n")
    write(repo / ".gitattributes", "* filter=evil diff=evil merge=evil\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def hostile_filter(m: Marks, prefix: str = "") -> str:
    return (f'[filter "evil"]\n\tclean = {m.cmd(prefix + "clean")}\n\tsmudge = {m.cmd(prefix + "smudge")}\n'
            "\trequired = true\n"
            f'[diff "evil"]\n\ttextconv = {m.cmd(prefix + "textconv")}\n\tcommand = {m.cmd(prefix + "diffcmd")}\n'
            f'[merge "evil"]\n\tdriver = {m.cmd(prefix + "merge")}\n')


def add_config(repo_git: Path, text: str) -> None:
    with open(repo_git / "config", "a", encoding="utf-8") as fh:
        fh.write(text)


def new_store(tmp: Path) -> tuple[CheckpointStore, list[dict]]:
    records: list[dict] = []
    return CheckpointStore(tmp / "session" / "checkpoints", records.append), records


def snapshot(store: CheckpointStore, cwd: Path, turn: int = 1) -> None:
    store.begin_turn(turn)
    asyncio.run(store.before_bash(cwd))


def change_and_rewind(store: CheckpointStore, repo: Path, rel: str = "app.txt", turn: int = 1) -> None:
    """The shell changes `rel` and makes a file; the rewind puts both back, with no problem."""
    before = (repo / rel).read_bytes()
    bash(repo, f"echo changed > {rel} && echo new > made.txt")
    changed = {os.path.relpath(cp.path, os.path.realpath(repo)) for cp in store.files_since(turn)}
    assert {rel, "made.txt"} <= changed
    restored, problems = store.restore(turn)
    assert problems == []
    assert (repo / rel).read_bytes() == before
    assert not (repo / "made.txt").exists()


def test_filter_clean_smudge_required_hook_fsmonitor_run_nothing(tmp_path: Path) -> None:
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    add_config(repo / ".git", hostile_filter(m) + f"[core]\n\tfsmonitor = {m.cmd('fsmonitor')}\n")
    hook = write(repo / ".git" / "hooks" / "post-index-change", f"#!/bin/sh\n{m.cmd('hook')}\n")
    hook.chmod(0o755)
    write(repo / "app.txt", "edited before the turn\n")  # `git add` hashes it: the clean filter's moment
    write(repo / "untracked.txt", "untracked\n")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert m.fired() == []
    assert [r["kind"] for r in records] == ["git-tree"]  # git still does the snapshot, its drivers emptied
    change_and_rewind(store, repo)
    assert (repo / "untracked.txt").read_text() == "untracked\n"
    assert m.fired() == []


def test_filter_process_runs_nothing(tmp_path: Path) -> None:
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    add_config(repo / ".git", f'[filter "evil"]\n\tprocess = {m.cmd("process")}\n')
    write(repo / "app.txt", "edited before the turn\n")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert m.fired() == []
    assert [r["kind"] for r in records] == ["git-tree"]
    change_and_rewind(store, repo)
    assert m.fired() == []


@pytest.mark.parametrize("how", ["include.path", "includeIf gitdir", "nested include"])
def test_included_filter_runs_nothing(tmp_path: Path, how: str) -> None:
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    inc = write(tmp_path / "evil.inc", hostile_filter(m))
    if how == "include.path":
        add_config(repo / ".git", f"[include]\n\tpath = {inc}\n")
    elif how == "includeIf gitdir":
        add_config(repo / ".git", f'[includeIf "gitdir:{os.path.realpath(repo)}/"]\n\tpath = {inc}\n')
    else:  # an include that includes the file with the filter, relative to the repository's config
        write(repo / ".git" / "more.inc", f"[include]\n\tpath = {inc}\n")
        add_config(repo / ".git", "[include]\n\tpath = more.inc\n")
    write(repo / "app.txt", "edited before the turn\n")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert m.fired() == []
    assert [r["kind"] for r in records] == ["git-tree"]
    change_and_rewind(store, repo)
    assert m.fired() == []


def test_nested_repository_made_during_the_session_runs_nothing(tmp_path: Path) -> None:
    """The session starts in a plain repository; a (sandboxed) command then makes `sub` a repository
    of its own with a filter in sub/.git/config, and the next Bash call runs there, and in the parent."""
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    (repo / ".gitattributes").unlink()
    store, records = new_store(tmp_path)
    snapshot(store, repo, turn=1)
    sub = repo / "sub"
    bash(repo, "mkdir sub && cd sub && git init -q && echo kept > app.txt && "
               "printf '* filter=evil diff=evil\\n' > .gitattributes && git add -A && "
               "git -c user.name=T -c user.email=t@e -c commit.gpgsign=false commit -qm sub")
    add_config(sub / ".git", hostile_filter(m) + f"[core]\n\tfsmonitor = {m.cmd('fsmonitor')}\n")
    snapshot(store, sub, turn=2)  # the next turn's Bash runs in the new repository
    snapshot(store, repo, turn=2)  # and one in the parent, which holds it as a nested repository
    assert m.fired() == []
    assert [(r["kind"], r["root"]) for r in records[1:]] == [("git-tree", os.path.realpath(sub)),
                                                             ("git-tree", os.path.realpath(repo))]
    assert m.fired() == []
    change_and_rewind(store, sub, turn=2)
    assert m.fired() == []


def test_filter_configured_after_the_snapshot_runs_nothing_at_the_rewind(tmp_path: Path) -> None:
    """The shell adds a filter to the repository's config after the snapshot: the rewind's git (diff,
    checkout-index with smudge) lists the configuration again and empties it."""
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    (repo / ".gitattributes").unlink()
    git(repo, "commit", "-qam", "no attributes")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    add_config(repo / ".git", hostile_filter(m))
    write(repo / ".gitattributes", "* filter=evil diff=evil\n")
    bash(repo, "touch lib/util.txt")  # stat-dirty: the rewind's diff hashes it, through the clean filter
    change_and_rewind(store, repo)
    assert m.fired() == []


def test_core_worktree_elsewhere_is_outranked(tmp_path: Path) -> None:
    """`core.worktree` names another folder (with attributes naming the filter): the snapshot is of the
    folder holding `.git`, never of the one the repository names, and nothing there is touched."""
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "victim.txt", "do not touch\n")
    write(elsewhere / ".gitattributes", "* filter=evil\n")
    add_config(repo / ".git", hostile_filter(m) + f"[core]\n\tworktree = {elsewhere}\n")
    write(repo / "app.txt", "edited before the turn\n")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert m.fired() == []
    assert [(r["kind"], r["root"]) for r in records] == [("git-tree", os.path.realpath(repo))]
    bash(elsewhere, "echo changed there > victim.txt")
    change_and_rewind(store, repo)
    assert (elsewhere / "victim.txt").read_text() == "changed there\n"  # not the snapshot's tree: left alone
    assert m.fired() == []


@pytest.mark.parametrize("layout", ["submodule", "linked worktree"])
def test_honest_gitfile_layouts_still_get_git_snapshots(tmp_path: Path, layout: str) -> None:
    """A submodule (its config's `core.worktree` names its checkout) and a linked worktree (`.git` file,
    commondir): the work tree passed explicitly is the one git would use, so the snapshot is git's."""
    main = clean_repo(tmp_path / "main")
    (main / ".gitattributes").unlink()
    git(main, "commit", "-qam", "no attributes")
    if layout == "submodule":
        other = clean_repo(tmp_path / "other")
        git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "sub")
        git(main, "commit", "-qm", "sub")
        tree = main / "sub"
    else:
        tree = tmp_path / "wt"
        git(main, "worktree", "add", "-q", str(tree))
    store, records = new_store(tmp_path)
    snapshot(store, tree / "lib")
    assert [(r["kind"], r["root"]) for r in records] == [("git-tree", os.path.realpath(tree))]
    change_and_rewind(store, tree)


@pytest.mark.parametrize("inside_repo", [False, True])
def test_bare_shaped_folder_is_never_used(tmp_path: Path, inside_repo: bool) -> None:
    """The project folder looks like a bare repository (HEAD, objects/, refs/, a config naming programs
    and `core.worktree`), with no `.git`: git must not take it; the file-level snapshot covers it."""
    m = Marks(tmp_path)
    parent = clean_repo(tmp_path / "outer") if inside_repo else tmp_path / "outer"
    proj = parent / "proj"
    write(proj / "HEAD", "ref: refs/heads/main\n")
    write(proj / "objects" / "info" / ".keep", "")
    write(proj / "refs" / "heads" / ".keep", "")
    write(proj / "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
          f"\tfsmonitor = {m.cmd('fsmonitor')}\n" + hostile_filter(m))
    write(proj / ".gitattributes", "* filter=evil\n")
    write(proj / "app.txt", "original\n")
    store, records = new_store(tmp_path)
    snapshot(store, proj)
    assert m.fired() == []
    assert [(r["kind"], r["root"]) for r in records] == [("files", os.path.realpath(proj))]
    change_and_rewind(store, proj)
    assert m.fired() == []


def test_diff_drivers_do_not_run_when_the_rewind_compares(tmp_path: Path) -> None:
    """The rewind's `git diff --name-status` against the snapshot: textconv, a diff driver's command and
    `diff.external` all named, for every path; the user's index also stat-dirty so content is compared."""
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    add_config(repo / ".git", f'[diff "evil"]\n\ttextconv = {m.cmd("textconv")}\n\tcommand = {m.cmd("diffcmd")}\n'
               f"[diff]\n\texternal = {m.cmd('external')}\n")
    store, records = new_store(tmp_path)
    snapshot(store, repo)
    assert m.fired() == []
    assert [r["kind"] for r in records] == ["git-tree"]
    bash(repo, "touch lib/util.txt")  # stat-dirty, same content: git compares it
    change_and_rewind(store, repo)
    assert m.fired() == []


def test_safe_git_takes_no_git_variable_but_the_named_ones(tmp_path: Path) -> None:
    """The caller's GIT_* never reach git (a filter smuggled in GIT_CONFIG_*); only the scratch index and
    object directories may be passed, by name."""
    m = Marks(tmp_path)
    repo = clean_repo(tmp_path / "repo")
    write(repo / "app.txt", "edited\n")
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "filter.evil.clean", "GIT_CONFIG_VALUE_0": m.cmd("smuggled"),
            "GIT_DIR": str(tmp_path / "elsewhere")}
    sg = SafeGit.open(repo, base, repo)
    assert sg is not None
    assert sg.call(["hash-object", "--path=app.txt", "app.txt"]).strip()
    with pytest.raises(ValueError):
        sg.call(["status"], extra_env={"GIT_DIR": str(repo / ".git")})
    assert m.fired() == []


def test_a_repository_chosen_attributes_file_gives_way_to_the_users() -> None:
    env = {"HOME": "/home/u"}
    local = [("local", "core.attributesfile", "/evil/attrs")]
    assert dict(neutralising(local, env))["core.attributesfile"] == "/home/u/.config/git/attributes"
    mine = [("global", "core.attributesfile", "/home/u/attrs"), *local]
    assert dict(neutralising(mine, env))["core.attributesfile"] == "/home/u/attrs"
    assert neutralising(mine[:1], env) == []  # the user's own choice is not touched


def test_repl_auto_allowed_sandboxed_echo_in_a_hostile_clone_runs_nothing(cli, fake_anthropic, tmp_path: Path) -> None:
    """End to end: the real CLI in a real terminal, a hostile clone as the project, the sandbox on
    (auto-allow), the model asks for `echo hello`: the checkpoint's git before it runs no filter."""
    pytest.importorskip("pexpect")
    from tests.test_repl_pty import PROMPT_READY, finish, spawn

    if not probe(os.environ.get("PATH")).ok:
        pytest.skip("bubblewrap does not work here")
    m = Marks(tmp_path)
    repo = clean_repo(Path(cli.cwd))
    add_config(repo / ".git", hostile_filter(m) + f'[filter "proc"]\n\tprocess = {m.cmd("process")}\n')
    write(repo / "app.txt", "edited before the session\n")  # `git add` would hash it through the filter
    home = Path(tempfile.mkdtemp(prefix="agent-ckpt-home-", dir="/var/tmp"))  # outside the private /tmp
    try:
        fake_anthropic.reply("Running it.", tool_block("Bash", {"command": "echo hello"}))
        fake_anthropic.text("All done here.")
        child = spawn(cli, AGENT_SANDBOX="1", HOME=str(home))
        child.send("say hello\r")
        child.expect_exact("All done here.")
        child.expect_exact(PROMPT_READY)
        child.send("\x04")
        assert finish(child) == 0
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert m.fired() == []
    assert [result_text(b) for b in tool_results_sent(fake_anthropic)] == ["hello"]
    records = [json.loads(line) for p in cli.agent_home.rglob("*.jsonl") for line in p.read_text().splitlines()
               if line.strip()]
    kinds = [r.get("kind") for r in records if r.get("type") == "checkpoint"]
    assert kinds == ["git-tree"], kinds  # the snapshot was taken, by git, its drivers emptied

