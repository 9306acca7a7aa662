"""The one place a git process starts: git without running the repository's code.

Git executes configuration that comes with a repository (`core.fsmonitor`, clean/smudge/process filters
named by `.gitattributes`, `gpg.program` under `log.showSignature`, textconv and external diff drivers,
merge drivers, hooks such as `post-index-change`, a bare-repository-shaped folder's config), from
`.git/config` and whatever it includes. Two ways in:

- reading files (the system prompt's snapshot of an untrusted folder): no git process at all. HEAD, refs
  and packed-refs are read as files (no symlinks, bounded sizes) and loose commit objects are inflated for
  their subjects; the status is left out, since it cannot be had without git's index machinery.
- `SafeGit` (the system prompt of a trusted folder, and checkpoints' snapshots and rewinds in any folder):
  git with a built environment (no agent secrets, no `GIT_*` from outside but the few a caller names, no
  prompts, no optional locks) and every key that can execute neutralised as command-line configuration
  (`GIT_CONFIG_COUNT`, the protected scope, so `safe.bareRepository=explicit` counts), the drivers
  enumerated from the configuration git itself reads for that folder (includes and includeIf too), at
  each open: a repository made or changed since is listed afresh. `core.worktree` cannot be overridden by
  configuration, so a caller that writes files passes the work tree it computed (`--work-tree`).
  A layout test (tests/layout/test_git_runner.py) keeps every other module from spawning git.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

GIT_TIMEOUT_S = 3.0
MAX_REF_FILE = 4096
MAX_PACKED_REFS = 1 << 20
MAX_OBJECT = 1 << 20
# Keys that run a program, or make git run one, in the commands the snapshot uses (and their kin).
NEUTRAL_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.useBuiltinFSMonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("safe.bareRepository", "explicit"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),  # a submodule's status would be a child git in another repository
    ("core.splitIndex", "false"),  # checkpoints' scratch index: no shared-index file written beside it
)
# Driver keys: every `<section>.<name>.<key>` the repository's configuration defines is emptied.
DRIVER_KEYS = re.compile(r"^(filter\.(.+)\.(clean|smudge|process|required)|diff\.(.+)\.(textconv|command)"
                         r"|merge\.(.+)\.driver|pager\.(.+))$", re.S)
_FILTER_KEY = re.compile(r"^filter\.(.+)\.[^.]+$", re.S)
# What the repository's own configuration is listed for: the drivers, and where attributes come from.
_LISTED = r"^(filter|diff|merge|pager)\.|^core\.attributesfile$"
_REPO_SCOPES = ("local", "worktree")
# Environment a caller may not carry into the snapshot's git: it would redirect git or run programs.
_DROPPED_PREFIXES = ("GIT_",)
_DROPPED = ("EDITOR", "VISUAL", "PAGER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "BASH_ENV", "ENV")
# The only `GIT_*` a command may carry, each passed by its caller by name (checkpoints' scratch index and
# session-owned object directory); everything else that redirects git was dropped by `git_env`.
EXPLICIT_ENV = frozenset({"GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"})


class GitFailed(Exception):
    """A git command that could not start, failed or timed out; the message is git's last stderr line."""


def git_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` (already without the agent's secrets) minus every `GIT_*` and program-naming variable,
    plus no prompts, no optional locks, no LFS downloads, no lazy fetches."""
    env = {k: v for k, v in base.items() if not k.startswith(_DROPPED_PREFIXES) and k not in _DROPPED}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_LFS_SKIP_SMUDGE="1", GIT_NO_LAZY_FETCH="1",
               GIT_PAGER="cat", GIT_ASKPASS="", GIT_NO_REPLACE_OBJECTS="1")
    return env


def _config_env(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{i}"] = key
        out[f"GIT_CONFIG_VALUE_{i}"] = value
    return out


def _spawn(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = GIT_TIMEOUT_S,
           stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The one place a git process starts (a layout test keeps it so). Raises GitFailed."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout,
                              input=stdin, stdin=subprocess.DEVNULL if stdin is None else None)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitFailed(str(exc)) from None
    return done


def _git_argv(work_tree: Path | None, args: tuple[str, ...] | list[str]) -> list[str]:
    # An explicit work tree outranks `core.worktree`, which command-line config cannot override.
    tree = [f"--work-tree={work_tree}"] if work_tree is not None else []
    return ["git", "--no-pager", *tree, *args]


def _repo_config(cwd: Path, env: dict[str, str], work_tree: Path | None,
                 timeout: float) -> list[tuple[str, str, str]] | None:
    """(scope, key, value) of the listed keys git reads for `cwd` (includes followed), or None."""
    argv = _git_argv(work_tree, ["config", "-z", "--show-scope", "--get-regexp", _LISTED])
    try:
        done = _spawn(argv, cwd, {**env, **_config_env(list(NEUTRAL_CONFIG))}, timeout)
    except GitFailed:
        return None
    if done.returncode not in (0, 1):  # 1: no such key
        return None
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    out = []
    for scope, item in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = item.partition("\n")
        out.append((scope, key, value))
    return out


def _user_attributes(entries: list[tuple[str, str, str]], env: Mapping[str, str]) -> str:
    """The attributes file the user's own (global, system) configuration names, else git's default."""
    user = [v for scope, k, v in entries if k == "core.attributesfile" and scope not in _REPO_SCOPES]
    if user:
        return user[-1]
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(env["HOME"], ".config") if env.get("HOME") else "")
    return os.path.join(xdg, "git", "attributes") if xdg else "/dev/null"


def neutralising(entries: list[tuple[str, str, str]], env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Command-line configuration that empties every driver the repository's own configuration (local and
    worktree scopes, their includes too) defines: a filter by name (clean, smudge, process emptied,
    `required` off, so an emptied filter is no error), a diff driver's textconv and command, a merge
    driver, a pager. A repository-chosen `core.attributesFile` gives way to the user's. The user's global
    and system drivers (git-lfs) are theirs and stay."""
    repo = [(k, v) for scope, k, v in entries if scope in _REPO_SCOPES]
    out: dict[str, str] = {}
    for key, _ in repo:
        filt = _FILTER_KEY.match(key)
        if filt:
            name = filt.group(1)
            out.update({f"filter.{name}.{k}": "" for k in ("clean", "smudge", "process")})
            out[f"filter.{name}.required"] = "false"
        elif DRIVER_KEYS.match(key):
            out[key] = ""
        elif key == "core.attributesfile":
            out[key] = _user_attributes(entries, env)
    return sorted(out.items())


@dataclass
class SafeGit:
    """One folder's git, with its environment and neutralising configuration computed once. `work_tree`,
    when given, is passed as `--work-tree`: the tree is the one the caller computed, never the one a
    repository's `core.worktree` names."""

    cwd: Path
    env: dict[str, str]
    config: list[tuple[str, str]] = field(default_factory=list)
    work_tree: Path | None = None
    timeout: float = GIT_TIMEOUT_S

    @classmethod
    def open(cls, cwd: Path, base_env: Mapping[str, str], work_tree: Path | None = None,
             timeout: float = GIT_TIMEOUT_S) -> SafeGit | None:
        """None when the repository's configuration cannot be listed (git missing, a broken config)."""
        env = git_env(base_env)
        entries = _repo_config(cwd, env, work_tree, timeout)
        if entries is None:
            return None
        config = [*NEUTRAL_CONFIG, *neutralising(entries, env)]
        return cls(cwd, {**env, **_config_env(config)}, config, work_tree, timeout)

    def run(self, *args: str) -> str | None:
        """A git command's stdout, or None (not a repository, a failure, a timeout)."""
        try:
            return self.call(["--no-optional-locks", *args]).decode("utf-8", "replace")
        except GitFailed:
            return None

    def call(self, args: list[str], *, stdin: bytes | None = None,
             extra_env: Mapping[str, str] | None = None) -> bytes:
        """A git command's stdout, run in `cwd` (the folder whose configuration was listed: another one
        may be another repository). `extra_env` may name only EXPLICIT_ENV. Raises GitFailed."""
        extra = dict(extra_env or {})
        if not set(extra) <= EXPLICIT_ENV:
            raise ValueError(f"not an allowed git variable: {sorted(set(extra) - EXPLICIT_ENV)}")
        done = _spawn(_git_argv(self.work_tree, args), self.cwd, {**self.env, **extra}, self.timeout,
                      stdin)
        if done.returncode != 0:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitFailed(lines[-1] if lines else f"git {args[0] if args else ''} failed")
        return done.stdout


# -- reading .git without git ------------------------------------------------------------------------


def _read_small(path: Path, cap: int) -> bytes | None:
    """A regular file's bytes (not through a symlink, at most `cap`), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        return os.read(fd, cap + 1)[:cap]
    except OSError:
        return None
    finally:
        os.close(fd)


def find_work_tree(cwd: Path) -> tuple[Path, Path] | None:
    """(the work tree, its git directory) holding `cwd`: the nearest folder with a `.git` directory or
    `gitdir:` file (followed once), or None. A bare-repository-shaped folder is not a repository here
    (git's safe.bareRepository=explicit); a `.git` symlink or a broken `gitdir:` file is not either."""
    for d in (cwd, *cwd.parents):
        dot = d / ".git"
        try:
            st = os.lstat(dot)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            return d, dot
        if stat.S_ISREG(st.st_mode):
            raw = _read_small(dot, MAX_REF_FILE) or b""
            m = re.match(rb"gitdir: (.+?)\s*$", raw)
            if not m:
                return None
            target = Path(os.fsdecode(m.group(1)))
            target = target if target.is_absolute() else d / target
            return (d, target) if target.is_dir() and not target.is_symlink() else None
        return None
    return None


def find_git_dir(cwd: Path) -> Path | None:
    """The `.git` directory of the work tree holding `cwd` (see find_work_tree), or None."""
    found = find_work_tree(cwd)
    return found[1] if found else None


_REF = re.compile(r"refs/[A-Za-z0-9._/\-+]{1,200}")
_SHA = re.compile(rb"[0-9a-f]{40}")


def _common_dir(git_dir: Path) -> Path:
    raw = _read_small(git_dir / "commondir", MAX_REF_FILE)
    if raw:
        target = Path(os.fsdecode(raw.strip()))
        target = target if target.is_absolute() else git_dir / target
        if target.is_dir():
            return target
    return git_dir


def _packed_refs(common: Path) -> dict[str, str]:
    raw = _read_small(common / "packed-refs", MAX_PACKED_REFS) or b""
    out: dict[str, str] = {}
    for line in raw.split(b"\n"):
        parts = line.split(b" ", 1)
        if len(parts) == 2 and _SHA.fullmatch(parts[0]):
            out[parts[1].decode("utf-8", "replace")] = parts[0].decode()
    return out


def resolve_ref(git_dir: Path, ref: str, depth: int = 0) -> str | None:
    """A ref's commit id from loose ref files, then packed-refs; symbolic refs followed 3 deep."""
    if depth > 3 or not _REF.fullmatch(ref) or ".." in ref:
        return None
    common = _common_dir(git_dir)
    raw = _read_small(common / ref, MAX_REF_FILE)
    if raw is not None:
        text = raw.strip()
        if _SHA.fullmatch(text):
            return text.decode()
        if text.startswith(b"ref: "):
            return resolve_ref(git_dir, text[5:].decode("utf-8", "replace"), depth + 1)
        return None
    return _packed_refs(common).get(ref)


def read_head(git_dir: Path) -> tuple[str | None, str | None]:
    """(branch name or None when detached, HEAD's commit id or None)."""
    raw = (_read_small(git_dir / "HEAD", MAX_REF_FILE) or b"").strip()
    if raw.startswith(b"ref: "):
        ref = raw[5:].decode("utf-8", "replace")
        if not _REF.fullmatch(ref):
            return None, None
        branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ref
        return branch, resolve_ref(git_dir, ref)
    return None, raw.decode() if _SHA.fullmatch(raw) else None


def read_commit(git_dir: Path, sha: str) -> tuple[str, list[str]] | None:
    """(subject, parent ids) of a loose commit object, or None (packed, missing, not a commit)."""
    path = _common_dir(git_dir) / "objects" / sha[:2] / sha[2:]
    raw = _read_small(path, MAX_OBJECT)
    if raw is None:
        return None
    try:
        data = zlib.decompressobj().decompress(raw, MAX_OBJECT)
    except zlib.error:
        return None
    header, _, body = data.partition(b"\0")
    if not header.startswith(b"commit "):
        return None
    head, _, message = body.partition(b"\n\n")
    parents = [line[7:].decode() for line in head.split(b"\n") if line.startswith(b"parent ")
               and _SHA.fullmatch(line[7:])]
    subject = message.split(b"\n", 1)[0].decode("utf-8", "replace")
    return subject, parents


def recent_commits(git_dir: Path, head: str | None, limit: int) -> list[str]:
    """`<short id> <subject>` for HEAD and its first parents while they are loose objects."""
    out: list[str] = []
    sha = head
    while sha and len(out) < limit:
        commit = read_commit(git_dir, sha)
        if commit is None:
            break
        out.append(f"{sha[:7]} {commit[0]}")
        sha = commit[1][0] if commit[1] else None
    return out


def main_branch_from_files(git_dir: Path, current: str) -> str:
    raw = (_read_small(_common_dir(git_dir) / "refs/remotes/origin/HEAD", MAX_REF_FILE) or b"").strip()
    if raw.startswith(b"ref: refs/remotes/origin/"):
        name = raw[len(b"ref: refs/remotes/origin/"):].decode("utf-8", "replace")
        if _REF.fullmatch("refs/" + name):
            return name
    for name in ("main", "master"):
        if resolve_ref(git_dir, f"refs/heads/{name}") is not None:
            return name
    return current
