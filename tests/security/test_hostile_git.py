"""A hostile repository runs nothing at start-up: the git snapshot in the system prompt.

The repository carries every git configuration key that executes in the commands a snapshot would use:
`core.fsmonitor`, clean/smudge/process filters named by `.gitattributes`, a textconv driver, `gpg.program`
with `log.showSignature` and a signed commit, `core.pager`, a `post-index-change` hook, and a
bare-repository-shaped folder (`core.worktree`, `core.fsmonitor`) tracked in the tree. Two ways it
arrives: `git clone` (which does not copy `.git/config`) and an unpacked archive (whose `.git/config`
is the attacker's). Each program is a marker script: nothing may run before trust, in any mode; after
trust, git runs with the keys neutralised and never with the API key.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.trust import trust
from tests.conftest import TEST_KEY
from tests.files import write
from tests.security.hostile import marker_script

VECTORS = ("fsmonitor", "clean", "smudge", "process", "textconv", "gpg", "pager", "hook", "bare_fsmonitor",
           "bare_pager")


def _git(cwd: Path, *args: str) -> str:
    # The test's own git: hooks and fsmonitor off, so setting up never trips a marker.
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


def _sign_head(repo: Path) -> None:
    """Rewrite HEAD as a commit carrying a (fake) signature: `log.showSignature` would verify it."""
    raw = _git(repo, "cat-file", "commit", "HEAD")
    head, _, msg = raw.partition("\n\n")
    sig = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----"
    data = f"{head}\n{sig}\n\n{msg}"
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=data,
                         check=True, capture_output=True, text=True).stdout.strip()
    _git(repo, "update-ref", "HEAD", sha)


def _hostile_config(repo_git: Path, marks: Path, scripts: Path) -> None:
    cmd = {v: marker_script(scripts / f"{v}.py", marks / v) for v in VECTORS}
    config = (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f"\tfsmonitor = {cmd['fsmonitor']}\n\tpager = {cmd['pager']}\n"
        f'[filter "evil"]\n\tclean = {cmd["clean"]}\n\tsmudge = {cmd["smudge"]}\n\tprocess = {cmd["process"]}\n'
        f'[diff "evil"]\n\ttextconv = {cmd["textconv"]}\n'
        f"[gpg]\n\tprogram = {cmd['gpg']}\n[log]\n\tshowSignature = true\n"
        "[user]\n\tname = a\n\temail = a@b\n"
    )
    (repo_git / "config").write_text(config)
    hook = repo_git / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{cmd['hook']}\n")
    hook.chmod(0o755)


def _bare_shaped(tree: Path, marks: Path, scripts: Path) -> None:
    """A folder git would take for a bare repository, its core.worktree pointing at the tree."""
    bare = tree / "vendor" / "bare"
    write(bare / "HEAD", "ref: refs/heads/main\n")
    write(bare / "objects" / "info" / ".keep", "")
    write(bare / "refs" / "heads" / ".keep", "")
    write(bare / "config", "[core]\n\tbare = false\n\tworktree = ../..\n"
          f"\tfsmonitor = {marker_script(scripts / 'bare_fsmonitor.py', marks / 'bare_fsmonitor')}\n"
          f"\tpager = {marker_script(scripts / 'bare_pager.py', marks / 'bare_pager')}\n")


def build_source(tmp: Path) -> tuple[Path, Path]:
    """(the hostile repository, its markers folder)."""
    marks, scripts, src = tmp / "marks", tmp / "scripts", tmp / "src"
    marks.mkdir()
    scripts.mkdir()
    src.mkdir()
    _git(src, "init", "-q", "-b", "main")
    _git(src, "config", "user.email", "a@b")
    _git(src, "config", "user.name", "a")
    write(src / ".gitattributes", "* filter=evil diff=evil\n")
    write(src / "a.txt", "hello\n")
    _bare_shaped(src, marks, scripts)
    _git(src, "add", "-A")
    _git(src, "commit", "-qm", "first hostile subject")
    _sign_head(src)
    _hostile_config(src / ".git", marks, scripts)
    return src, marks


def _touch_dirty(tree: Path) -> None:
    """Same content, new mtime: git must read the file through its clean filter to compare it."""
    st = (tree / "a.txt").stat()
    os.utime(tree / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    write(tree / "untracked.txt", "u\n")


@pytest.fixture(params=["clone", "archive"])
def hostile(request, tmp_path, workdir):
    src, marks = build_source(tmp_path)
    shutil.rmtree(workdir)
    if request.param == "clone":
        _git(tmp_path, "clone", "-q", "--no-checkout", str(src), str(workdir))
        _git(workdir, "checkout", "-q", "main")
    else:  # an unpacked archive keeps the attacker's .git/config and hooks
        shutil.copytree(src, workdir, symlinks=True)
    _touch_dirty(workdir)
    return workdir, marks


def _system_text(fake) -> str:
    system = fake.requests[0].body.get("system")
    return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)


def _ran(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


def test_one_shot_untrusted_runs_nothing_and_reads_head_from_files(cli, hostile, fake_anthropic):
    tree, marks = hostile
    fake_anthropic.text("ok")
    r = cli("-p", "hi")
    assert r.code == 0, r.stderr
    assert _ran(marks) == []
    env = _system_text(fake_anthropic)
    assert "Current branch: main\n" in env and "first hostile subject" in env
    assert "git runs only in a trusted folder" in env and "untracked.txt" not in env


def test_stream_json_untrusted_runs_nothing(cli, hostile, fake_anthropic):
    tree, marks = hostile
    fake_anthropic.text("ok")
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})
    r = cli("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", input=line + "\n")
    assert r.code == 0, r.stderr
    assert _ran(marks) == []
    assert "Current branch: main" in _system_text(fake_anthropic)


def test_bare_shaped_folder_untrusted_and_trusted(cli, hostile, fake_anthropic, agent_home):
    tree, marks = hostile
    cli.cwd = tree / "vendor" / "bare"
    fake_anthropic.text("ok")
    fake_anthropic.text("ok")
    assert cli("-p", "hi").code == 0
    trust(cli.cwd, agent_home)
    r = cli("-p", "hi")
    assert r.code == 0, r.stderr
    assert _ran(marks) == []
    # Untrusted: the enclosing clone's HEAD read as files; trusted: git refuses the implicit bare repository.
    assert "Current branch: main" in _system_text(fake_anthropic)


def _git_spy(tmp: Path) -> tuple[Path, Path]:
    """A `git` first on PATH that records each call's environment and arguments, then runs the real git."""
    real = shutil.which("git")
    spy_dir, log = tmp / "spy", tmp / "git-calls.jsonl"
    write(spy_dir / "git", f"#!{sys.executable}\nimport json, os, sys\n"
          f"open({str(log)!r}, 'a').write(json.dumps({{'argv': sys.argv[1:], 'env': dict(os.environ)}}) + '\\n')\n"
          f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n")
    (spy_dir / "git").chmod(0o755)
    return spy_dir, log


def test_trusted_git_neutralises_every_executing_key_and_never_sees_the_key(cli, hostile, fake_anthropic,
                                                                           agent_home, tmp_path):
    tree, marks = hostile
    trust(tree, agent_home)
    spy_dir, log = _git_spy(tmp_path)
    fake_anthropic.text("ok")
    outside = f"'core.fsmonitor={marker_script(tmp_path / 'outside.py', marks / 'outside')}'"
    r = cli("-p", "hi", PATH=f"{spy_dir}:{os.environ['PATH']}", GIT_CONFIG_PARAMETERS=outside,
            GIT_DIR=str(tmp_path / "elsewhere"), ANTHROPIC_AUTH_TOKEN="auth-token-secret")
    assert r.code == 0, r.stderr
    assert _ran(marks) == []
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert any("status" in c["argv"] for c in calls)
    for c in calls:
        assert TEST_KEY not in json.dumps(c["env"]) and "auth-token-secret" not in json.dumps(c["env"])
        assert "GIT_DIR" not in c["env"] and "GIT_CONFIG_PARAMETERS" not in c["env"]
    env = _system_text(fake_anthropic)
    assert "Current branch: main" in env and "?? untracked.txt" in env and "first hostile subject" in env


def test_repl_start_untrusted_runs_nothing(cli, hostile, fake_anthropic):
    pexpect = pytest.importorskip("pexpect")
    from tests.test_repl_pty import PROMPT_READY, spawn

    tree, marks = hostile
    fake_anthropic.text("ok")
    child = spawn(cli)
    child.send("hi\r")
    child.expect_exact("ok")
    child.expect_exact(PROMPT_READY)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert _ran(marks) == []
    assert "Current branch: main" in _system_text(fake_anthropic)


def test_safe_git_refuses_the_implicit_bare_repository_plain_git_takes(hostile):
    from services.git_safe import SafeGit

    tree, _ = hostile
    bare = tree / "vendor" / "bare"
    plain = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=bare, capture_output=True, text=True)
    assert plain.stdout.strip() == "."  # plain git would load the folder's own config
    git = SafeGit.open(bare, {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})
    assert git is None or git.run("rev-parse", "--git-dir") is None
    assert SafeGit.open(tree, {"PATH": os.environ["PATH"]}) is not None
