"""Checkpoints: the code as it was before a turn, for `/rewind` (Esc Esc).

Two kinds, both announced by a `checkpoint` transcript record so `/rewind` works after a resume:

- **pre-image** (Edit/Write/NotebookEdit): the orchestrator calls `before_write` when a writing call starts
  (before the gate and the tool); the first touch of a path in a turn saves the file's bytes under the session
  directory (`checkpoints/<turn>/<hash>`, 0600).
- **tree snapshot** (Bash, foreground or background): a shell can touch anything, so before the first Bash
  call of a turn in a given tree, `before_bash` snapshots the whole working tree:
  * in a git work tree (`kind: git-tree`): tracked plus untracked-not-ignored files, through a *temporary
    index* (a copy of the user's index, so unchanged files are only stat'ed; the user's index, HEAD, stash and
    work tree are never written) and a *session-owned object directory* with the repository's objects as an
    alternate. Chosen over writing into `.git/objects` (what Claude-Code-like tools do) so the user's
    repository gains nothing: no loose objects for gc, no copies of untracked secrets in `.git`; the cost is
    that a tracked file's blob stays in the user's repository, where only a `git gc --prune` of a blob that
    became unreachable could remove it (the rewind then reports that path). Every git process is
    services/git_safe's: the repository's own filter, diff and merge drivers are emptied, its hooks and
    fsmonitor off, its `core.worktree` outranked by the root computed here, a bare-shaped folder refused (the
    snapshot is then the file-level one) — a hostile clone's config runs nothing on the host. So a changed
    file is stored as its bytes and restored as them; an unchanged file under a repository-local filter keeps
    the user's index entry (its cleaned form), and is restored in that form. The user's global drivers
    (git-lfs) still apply on the way in and out, as `git stash` / `git checkout` would.
  * otherwise (`kind: files`; not a repository, git missing or failing): a manifest of every file under the
    Bash call's cwd (path -> size, mtime, ctime, inode, mode, sha256), skipping `.git`, `node_modules`, virtual
    environments and caches, at most `MAX_SNAPSHOT_FILES` files (a capped snapshot is marked partial). The
    bytes are copied into a content-addressed store under the session at snapshot time (they cannot be fetched
    later: the shell has run by then) as long as the snapshot's total stays under `MAX_SNAPSHOT_BYTES`; a
    file over that, or over `MAX_PRE_IMAGE_BYTES`, or unreadable, is listed as not restorable. A home
    directory or `/` outside git is not copied.
  * `kind: none`: Bash ran there but no snapshot could be taken (home directory, a failing store); the record
    keeps the reason and the rewind reports it.
  A file too large (or unreadable) at snapshot time is left out of either kind and said so at rewind if it
  changed. A rewind compares the earliest snapshot with the tree as it is now: modified files get their old
  content back, deleted ones come back, files created since are deleted — only when their ctime is not older
  than the snapshot, so a file that merely looks new (it was ignored before) is never removed. Like a
  `git checkout` of that point, this also puts back changes made by hand after the snapshot; `files_since`
  lists every path first. Not covered: files outside the tree (Bash can write anywhere), inside submodules and
  nested repositories (one created since is reported, not removed), ignored files (git kind), the REPL's
  own `!command`; empty directories a shell made are left in place.

For each path, the earliest checkpoint at or after the target turn is the truth, pre-image or snapshot, in the
order they were taken. Every restore goes through directory file descriptors opened without following
symlinks, so nothing is ever written outside the snapshot's root (or, for a pre-image, through a symlink that
appeared since); a path that cannot be restored is reported in `problems`, never raised.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.git_safe import GitFailed, SafeGit, find_work_tree
from services.private_fs import ensure_private_dir

WRITING_TOOLS = ("Edit", "Write", "NotebookEdit")
BASH_TOOL = "Bash"
MAX_PRE_IMAGE_BYTES = 10 * 1024 * 1024  # a larger file is not checkpointed (said at rewind)
MAX_SNAPSHOT_FILES = 20_000  # a non-git snapshot stops there and is marked partial
MAX_SNAPSHOT_BYTES = 50 * 1024 * 1024  # bytes a non-git snapshot copies; files past it are not restorable
GIT_TIMEOUT_S = 60.0
KEPT_INDEXES = 8  # per tree: the temporary indexes of the latest snapshots are kept (see _register)
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
                       ".ruff_cache", ".tox", ".hg", ".svn"})


@dataclass
class Checkpoint:
    turn: int  # index in the history of the user message that started the turn
    path: str  # absolute
    existed: bool
    blob: str = ""  # the saved pre-image, when the file existed
    too_large: bool = False
    # Set for a path found changed against a tree snapshot (Bash): where its old state comes from.
    snapshot: TreeSnapshot | None = None
    rel: str = ""  # the path relative to the snapshot's root
    entry: tuple[Any, ...] = ()  # git: (mode, oid); files: the manifest entry; () when absent from the snapshot
    skipped: bool = False  # changed, but it was too large or unreadable at snapshot time


@dataclass
class TreeSnapshot:
    turn: int
    kind: str  # "git-tree" | "files" | "none" (Bash ran there but nothing could be taken: `reason`)
    root: str  # realpath of the tree's root
    since_ns: int  # ctime of a marker made before the scan: a file with a newer ctime was changed after it
    tree: str = ""  # git: the tree id
    index: str = ""  # git: the temporary index, kept (its stat data makes the rewind's comparison cheap)
    objects: str = ""  # git: the session's object directory
    alternate: str = ""  # git: the repository's object directory
    manifest: str = ""  # files: the manifest (JSON); git: the skipped-files list
    complete: bool = True  # files: False when MAX_SNAPSHOT_FILES cut the scan
    excluded: list[str] = field(default_factory=list)  # rel dirs never captured (the agent's own files)
    reason: str = ""  # kind "none": why

    def to_record(self) -> dict[str, Any]:
        return {"type": "checkpoint", "turn": self.turn, "kind": self.kind, "root": self.root,
                "since_ns": self.since_ns, "tree": self.tree, "index": self.index, "objects": self.objects,
                "alternate": self.alternate, "manifest": self.manifest, "complete": self.complete,
                "excluded": self.excluded, "reason": self.reason}

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> TreeSnapshot | None:
        try:
            snap = cls(int(rec["turn"]), str(rec["kind"]), str(rec["root"]), int(rec.get("since_ns") or 0),
                       str(rec.get("tree") or ""), str(rec.get("index") or ""), str(rec.get("objects") or ""),
                       str(rec.get("alternate") or ""), str(rec.get("manifest") or ""),
                       bool(rec.get("complete", True)), [str(x) for x in rec.get("excluded") or []],
                       str(rec.get("reason") or ""))
        except (KeyError, TypeError, ValueError):
            return None
        return snap if snap.kind in ("git-tree", "files", "none") and os.path.isabs(snap.root) else None

    def covers_dir(self, cwd: str) -> bool:
        return cwd == self.root or (cwd.startswith(self.root.rstrip("/") + "/") and self.complete)


class _Unsafe(Exception):
    """A restore that would leave the root or go through a symlink or a file."""


class _GitFailed(Exception):
    pass


# -- git (always through services/git_safe: the repository's drivers, hooks and fsmonitor never run) -------
def _git_base_env() -> dict[str, str]:
    from services.credentials import child_env

    # git_safe drops every GIT_* from it; plain messages for the problems a rewind reports.
    return {**child_env(), "LC_ALL": "C"}


def _open_git(cwd: str, root: str | None = None) -> SafeGit:
    """The git of the repository at `cwd`, its work tree `root` (passed explicitly, whatever the
    repository's `core.worktree` says), the repository's own drivers listed and emptied now: a repository
    created or reconfigured since the last command is never trusted on an old listing."""
    git = SafeGit.open(Path(cwd), _git_base_env(), Path(root) if root else None, GIT_TIMEOUT_S)
    if git is None:
        raise _GitFailed("git is missing or the repository's configuration cannot be read")
    return git


def _git(git: SafeGit, args: list[str], env: dict[str, str] | None = None, stdin: bytes | None = None) -> bytes:
    try:
        return git.call(args, stdin=stdin, extra_env=env)
    except GitFailed as exc:
        raise _GitFailed(str(exc)) from None


def _alternates_value(path: str) -> str:
    """GIT_ALTERNATE_OBJECT_DIRECTORIES is colon-separated; a path with a colon or quote is C-quoted."""
    if not any(c in path for c in ':"\\\n') and not path.startswith('"'):
        return path
    out = []
    for b in os.fsencode(path):
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _git_env(index: str, objects: str, alternate: str) -> dict[str, str]:
    return {"GIT_INDEX_FILE": index, "GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": _alternates_value(alternate)}


def _split_z(data: bytes) -> list[str]:
    return [os.fsdecode(p) for p in data.split(b"\0") if p]


def _git_location(cwd: str) -> tuple[str, str, str] | None:
    """(toplevel, the index file, the object directory), or None outside a work tree. The work tree is the
    folder holding the `.git` found from `cwd`; git must agree on the git directory (a bare-shaped folder
    on the way, which git would take, or a `.git` it would read differently: no git snapshot)."""
    found = find_work_tree(Path(cwd))
    if found is None:
        return None
    tree, git_dir = os.path.realpath(found[0]), os.path.realpath(found[1])
    out = _git(_open_git(cwd, tree), ["rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--show-toplevel",
                                      "--git-path", "index", "--git-path", "objects"])
    lines = out.split(b"\n")
    if len(lines) != 6 or lines[0] != b"true" or lines[5]:
        return None  # not a work tree, or a newline in a path: the file-level snapshot handles it
    seen_dir, top, index, objects = (os.fsdecode(x) for x in lines[1:5])
    if os.path.realpath(seen_dir) != git_dir or os.path.realpath(top) != tree:
        return None
    return tree, os.path.join(cwd, index), os.path.realpath(os.path.join(cwd, objects))


# -- safe filesystem writes --------------------------------------------------------------------------------
def _split_rel(rel: str) -> list[str]:
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        raise _Unsafe("not a plain relative path")
    return parts


def _parent_fd(root: str, rel: str, create: bool) -> tuple[int, str]:
    """An fd of the directory holding `rel` under `root`, reached without following any symlink."""
    parts = _split_rel(rel)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o777, dir_fd=fd)
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Unsafe(f"{part!r} is now a symlink or a file, not a directory") from None
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _safe_write(root: str, rel: str, data: bytes, mode: int | None = None, link: bool = False) -> None:
    """Put `data` (or a symlink to it) at root/rel, atomically, replacing whatever entry is there."""
    fd, name = _parent_fd(root, rel, create=True)
    tmp = f".{name[:100]}.rewind-{secrets.token_hex(4)}"
    try:
        try:
            old = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if link:
            os.symlink(os.fsdecode(data), tmp, dir_fd=fd)
        else:
            perm = stat.S_IMODE(old.st_mode) if old is not None and stat.S_ISREG(old.st_mode) else 0o666
            if mode is not None:  # the snapshot's executable bit wins
                perm = (perm | 0o111) if mode & 0o100 else (perm & ~0o111)
            wfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, perm, dir_fd=fd)
            with os.fdopen(wfd, "wb") as fh:
                fh.write(data)
            if old is not None and stat.S_ISREG(old.st_mode):
                os.chmod(tmp, perm, dir_fd=fd)  # the umask does not narrow a restored file's mode
        try:
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except IsADirectoryError:
            os.rmdir(name, dir_fd=fd)  # a directory made since, now empty; a non-empty one stays (error)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)


def _safe_delete(root: str, rel: str, since_ns: int | None) -> bool:
    """Remove root/rel (never a directory). With `since_ns`, only when it was changed since then."""
    try:
        fd, name = _parent_fd(root, rel, create=False)
    except FileNotFoundError:
        return True
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return True
        if stat.S_ISDIR(st.st_mode):
            raise _Unsafe("is a directory")
        if since_ns is not None and st.st_ctime_ns < since_ns:
            return False
        os.unlink(name, dir_fd=fd)
        return True
    finally:
        os.close(fd)


def _read_nofollow(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _write_private(path: Path, data: bytes) -> None:
    ensure_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _excluded_rels(root: str, dirs: list[Path]) -> list[str]:
    """The agent's own directories that lie inside `root`, relative to it: never captured, never restored."""
    out = []
    for d in dirs:
        try:
            real = os.path.realpath(d)
        except OSError:
            continue
        if real.startswith(root.rstrip("/") + "/"):
            out.append(os.path.relpath(real, root))
    return out


def _is_excluded(rel: str, excluded: list[str]) -> bool:
    return any(rel == e or rel.startswith(e + "/") for e in excluded)


def _git_state(snap: TreeSnapshot) -> tuple[dict[str, tuple[str, str]], list[bytes], list[str]]:
    """The snapshot's index entries (path -> (mode, oid)), `diff --name-status -z` against the work
    tree, and the untracked files now, read through a scratch copy of the kept index."""
    scratch = Path(snap.index).with_name(f"rewind-{secrets.token_hex(4)}.index")
    env = _git_env(str(scratch), snap.objects, snap.alternate)
    try:
        git = _open_git(snap.root, snap.root)
        try:
            shutil.copyfile(snap.index, scratch)
        except OSError:  # the kept index is gone: the tree alone (every file gets hashed)
            _git(git, ["read-tree", snap.tree], env)
        listing = _git(git, ["ls-files", "-s", "-z"], env)
        entries: dict[str, tuple[str, str]] = {}
        for item in listing.split(b"\0"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            mode, oid, _stage = meta.decode().split(" ")
            entries[os.fsdecode(path)] = (mode, oid)
        diff = _git(git, ["diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-relative",
                          "--ignore-submodules=all", "--name-status", "-z"], env).split(b"\0")
        new = _split_z(_git(git, ["ls-files", "-z", "-o", "--exclude-standard"], env))
    finally:
        scratch.unlink(missing_ok=True)
    return entries, diff, new


def _skipped_manifest(snap: TreeSnapshot) -> dict[str, list[int]]:
    """Files too big to snapshot: path -> [size, mtime_ns] when the snapshot was taken."""
    if not snap.manifest:
        return {}
    try:
        data = json.loads(Path(snap.manifest).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _new_file_checkpoint(snap: TreeSnapshot, rel: str, skipped: dict[str, list[int]]) -> Checkpoint | None:
    """A file not in the snapshot's index: new since (rewind removes it), or a skipped one that changed."""
    path = os.path.join(snap.root, rel)
    if rel not in skipped:
        return Checkpoint(snap.turn, path, False, snapshot=snap, rel=rel)
    try:
        st = os.lstat(path)
        changed = [st.st_size, st.st_mtime_ns] != skipped[rel]
    except OSError:
        changed = True
    return Checkpoint(snap.turn, path, True, snapshot=snap, rel=rel, skipped=True) if changed else None


# -- the store ---------------------------------------------------------------------------------------------
@dataclass
class CheckpointStore:
    directory: Path | None = None
    record: Any = None  # callable(record dict): the engine's transcript
    turn: int = -1
    items: list[Checkpoint | TreeSnapshot] = field(default_factory=list)
    _seen: set[tuple[int, str]] = field(default_factory=set)
    _lock: asyncio.Lock | None = None
    # files kind: rel -> (stat key, sha) of the last snapshot per root, so unchanged files are not re-read
    _file_cache: dict[str, dict[str, tuple[list[int], str]]] = field(default_factory=dict)

    # path -> sha256 of the content the agent's last Edit/Write left there: a different file at rewind
    # time was changed by someone else since, and is reported rather than overwritten.
    written: dict[str, str] = field(default_factory=dict)

    def begin_turn(self, turn: int) -> None:
        self.turn = turn

    def after_write(self, name: str, input: dict[str, Any], cwd: Path) -> None:
        """After a writing call succeeded: remember what it left in the file. Never raises."""
        raw = input.get("file_path") or input.get("notebook_path")
        if name not in WRITING_TOOLS or self.turn < 0 or not isinstance(raw, str) or not raw:
            return
        try:
            path = Path(raw).expanduser()
            path = (path if path.is_absolute() else cwd / path).resolve()
            sha = hashlib.sha256(_read_nofollow(str(path))).hexdigest()
        except (OSError, RuntimeError, ValueError):
            return
        self.written[str(path)] = sha
        self._emit({"type": "checkpoint", "kind": "written", "turn": self.turn, "path": str(path), "sha": sha})

    def after_bash(self) -> None:
        """A shell of the agent ran: what it left in the files the agent wrote is the agent's too."""
        for path, sha in list(self.written.items()):  # few: only files the agent edited this session
            try:
                now = hashlib.sha256(_read_nofollow(path)).hexdigest()
            except OSError:
                now = ""
            if now != sha:
                self.written[path] = now
                self._emit({"type": "checkpoint", "kind": "written", "turn": self.turn, "path": path, "sha": now})

    def changed_by_others(self, turn: int) -> list[str]:
        """Paths a rewind to `turn` would restore whose content is no longer what the agent wrote."""
        out = []
        for cp in self.files_since(turn):
            sha = self.written.get(cp.path)
            if sha is None:
                continue
            try:
                now = hashlib.sha256(_read_nofollow(cp.path)).hexdigest()
            except FileNotFoundError:
                now = ""
            except OSError:
                continue
            if now != sha:
                out.append(cp.path)
        return out

    def _emit(self, rec: dict[str, Any]) -> None:
        if callable(self.record):
            try:
                self.record(rec)
            except Exception:
                pass

    # -- Edit / Write / NotebookEdit
    def before_write(self, name: str, input: dict[str, Any], cwd: Path) -> None:
        if name not in WRITING_TOOLS or self.turn < 0:
            return
        raw = input.get("file_path") or input.get("notebook_path")
        if not isinstance(raw, str) or not raw:
            return
        try:
            path = Path(raw).expanduser()
            path = (path if path.is_absolute() else cwd / path).resolve()
        except (OSError, RuntimeError, ValueError):
            return
        key = (self.turn, str(path))
        if key in self._seen:
            return
        self._seen.add(key)
        cp = Checkpoint(self.turn, str(path), path.is_file())
        if cp.existed:
            try:
                if path.stat().st_size > MAX_PRE_IMAGE_BYTES:
                    cp.too_large = True
                elif self.directory is not None:
                    blob = self.directory / str(self.turn) / hashlib.sha256(str(path).encode(errors="surrogateescape")).hexdigest()[:24]
                    _write_private(blob, path.read_bytes())
                    cp.blob = str(blob)
            except OSError:
                cp.too_large = True
        self.items.append(cp)
        self._emit({"type": "checkpoint", "turn": cp.turn, "path": cp.path, "existed": cp.existed,
                    "blob": cp.blob, "too_large": cp.too_large})

    # -- Bash
    async def before_bash(self, cwd: Path) -> None:
        """Before a Bash call: snapshot the tree it runs in, once per turn and tree. Never raises."""
        if self.turn < 0 or self.directory is None:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # concurrent (read-only) Bash calls share the first one's snapshot
            turn = self.turn
            try:
                where = os.path.realpath(cwd)
            except (OSError, ValueError):
                return
            if (turn, "bash:" + where) in self._seen:
                return
            self._seen.add((turn, "bash:" + where))
            try:
                snap = await asyncio.to_thread(self.snapshot_tree, Path(where), turn)
            except Exception as exc:  # disk full, a vanished cwd...: the rewind will say so
                snap = TreeSnapshot(turn, "none", where, 0, reason=f"{type(exc).__name__}: {exc}")
            if snap is not None:
                self._register(snap)

    def _register(self, snap: TreeSnapshot) -> None:
        self.items.append(snap)
        self._seen.add((snap.turn, "tree:" + snap.root))
        self._emit(snap.to_record())
        # A kept index is ~80 bytes a tracked file (1.6 MB for 20k files) per turn: only the latest few stay.
        # An older snapshot still has its tree id; its rewind hashes the files instead of stat'ing them.
        same = [it for it in self.items if isinstance(it, TreeSnapshot) and it.kind == "git-tree"
                and it.root == snap.root and it.index]
        for old in same[:-KEPT_INDEXES]:
            try:
                Path(old.index).unlink(missing_ok=True)
            except OSError:
                pass

    def snapshot_tree(self, cwd: Path, turn: int | None = None) -> TreeSnapshot | None:
        """The snapshot (git when possible, else files) of the tree around `cwd`; None when this turn already
        has one covering it. Runs git and reads files: call it off the event loop. Records nothing."""
        turn = self.turn if turn is None else turn
        if self.directory is None:
            return None
        where = os.path.realpath(cwd)
        for it in self.items:
            if isinstance(it, TreeSnapshot) and it.turn == turn and it.kind == "files" and it.covers_dir(where):
                return None
        try:
            loc = _git_location(where)
        except _GitFailed:
            loc = None
        if loc is not None:
            if (turn, "tree:" + loc[0]) in self._seen:
                return None
            try:
                return self._git_snapshot(turn, loc)
            except (_GitFailed, OSError):
                pass  # a broken repository still gets the file-level snapshot
        if (turn, "tree:" + where) in self._seen:
            return None
        if where == "/" or where == os.path.realpath(os.path.expanduser("~")):
            # Copying a home directory (keys, caches) at every turn would be neither quick nor welcome.
            return TreeSnapshot(turn, "none", where, 0, reason="a home or root directory is not snapshotted")
        return self._files_snapshot(turn, where)

    def _own_dirs(self) -> list[Path]:
        # The checkpoints, the session's files and its transcript (`projects/<slug>/<id>.jsonl`, two levels up):
        # a rewind must never put the agent's own files back.
        dirs = [self.directory, self.directory.parent.parent] if self.directory is not None else []
        try:
            from services.config import agent_home

            dirs.append(agent_home())
        except Exception:
            pass
        return [d for d in dirs if d is not None]

    def _marker(self, turn: int) -> int:
        """The filesystem's clock at the end of a snapshot: the ctime of a fresh marker file (the same coarse
        clock as the files' ctimes). Anything the shell creates afterwards has a ctime at or after it; a file
        last changed before the snapshot (an ignored one that became visible) has an older one."""
        assert self.directory is not None
        marker = self.directory / str(turn) / f"marker-{secrets.token_hex(4)}"
        _write_private(marker, b"")
        return os.stat(marker).st_ctime_ns

    def _git_snapshot(self, turn: int, loc: tuple[str, str, str]) -> TreeSnapshot:
        assert self.directory is not None
        root, real_index, repo_objects = loc
        tag = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
        objects = self.directory / "git" / tag / "objects"
        ensure_private_dir(objects)
        index = self.directory / str(turn) / f"git-{tag}.index"
        ensure_private_dir(index.parent)
        env = _git_env(str(index), str(objects), repo_objects)
        git = _open_git(root, root)
        excluded = _excluded_rels(root, self._own_dirs())

        def changed_candidates() -> list[str]:
            return _split_z(_git(git, ["ls-files", "-z", "-m", "-o", "--exclude-standard"], env))

        # Seed: the user's index (its stat data makes unchanged files free), else HEAD, else nothing.
        candidates = None
        for seed in ("copy", "head", "empty"):
            try:
                index.unlink(missing_ok=True)
                if seed == "copy":
                    shutil.copyfile(real_index, index)
                elif seed == "head":
                    _git(git, ["read-tree", "HEAD"], env)
                candidates = changed_candidates()
                break
            except (_GitFailed, OSError):
                continue
        if candidates is None:
            raise _GitFailed("no usable index")
        skipped: dict[str, list[int]] = {}
        for rel in candidates:
            if _is_excluded(rel, excluded):
                continue
            full = os.path.join(root, rel)
            try:
                st = os.lstat(full)
            except OSError:
                continue  # deleted: `add -A` records that
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size > MAX_PRE_IMAGE_BYTES:
                skipped[rel] = [st.st_size, st.st_mtime_ns]
                continue
            try:
                os.close(os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK))
            except OSError:
                skipped[rel] = [st.st_size, st.st_mtime_ns]  # unreadable: git add would fail on it
        specs = [":/"] + [f":(exclude,literal,top){rel}" for rel in [*excluded, *skipped]]
        spec_file = index.with_suffix(".pathspec")
        _write_private(spec_file, b"\0".join(os.fsencode(s) for s in specs) + b"\0")
        try:
            _git(git, ["add", "-A", "--ignore-errors", f"--pathspec-from-file={spec_file}", "--pathspec-file-nul"],
                 env)
        finally:
            spec_file.unlink(missing_ok=True)
        if skipped:  # a skipped tracked file keeps the user's index entry: drop it so the tree never lies
            _git(git, ["update-index", "-z", "--force-remove", "--stdin"], env,
                 stdin=b"".join(os.fsencode(r) + b"\0" for r in skipped))
        tree = _git(git, ["write-tree"], env).decode().strip()
        manifest = ""
        if skipped:
            side = index.with_suffix(".skipped.json")
            _write_private(side, json.dumps(skipped).encode())
            manifest = str(side)
        since = self._marker(turn)  # last: whatever changed during the scan is older than the shell's changes
        return TreeSnapshot(turn, "git-tree", root, since, tree=tree, index=str(index), objects=str(objects),
                            alternate=repo_objects, manifest=manifest, excluded=excluded)

    def _walk(self, root: str, excluded: list[str]) -> tuple[list[tuple[str, os.DirEntry[str]]], bool]:
        """(rel path, entry) of the files and symlinks under root, sorted walk, at most MAX_SNAPSHOT_FILES."""
        out: list[tuple[str, os.DirEntry[str]]] = []
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for e in entries:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                if _is_excluded(rel, excluded):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name not in SKIP_DIRS:
                            subdirs.append(rel)
                        continue
                    if not (e.is_file(follow_symlinks=False) or e.is_symlink()):
                        continue
                except OSError:
                    continue
                if len(out) >= MAX_SNAPSHOT_FILES:
                    return out, False
                out.append((rel, e))
            stack.extend(reversed(subdirs))
        return out, True

    def _files_snapshot(self, turn: int, root: str) -> TreeSnapshot:
        assert self.directory is not None
        excluded = _excluded_rels(root, self._own_dirs())
        found, complete = self._walk(root, excluded)
        cache = self._file_cache.get(root, {})
        new_cache: dict[str, tuple[list[int], str]] = {}
        entries: dict[str, list[Any]] = {}
        budget = MAX_SNAPSHOT_BYTES
        store = self.directory / "files"
        for rel, e in found:
            try:
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    entries[rel] = ["l", os.fsdecode(os.readlink(os.path.join(root, rel)))]
                    continue
            except OSError:
                continue
            key = _stat_key(st)
            sha = ""
            if st.st_size <= MAX_PRE_IMAGE_BYTES and st.st_size <= budget:
                hit = cache.get(rel)
                if hit is not None and hit[0] == key and (store / hit[1][:2] / hit[1]).is_file():
                    sha = hit[1]
                else:
                    try:
                        data = _read_nofollow(os.path.join(root, rel))
                        sha = hashlib.sha256(data).hexdigest()
                        blob = store / sha[:2] / sha
                        if not blob.is_file():
                            _write_private(blob, data)
                    except OSError:
                        sha = ""  # unreadable: listed, not restorable
                if sha:
                    budget -= st.st_size
                    new_cache[rel] = (key, sha)
            entries[rel] = ["f", *key, stat.S_IMODE(st.st_mode), sha]
        self._file_cache[root] = new_cache
        manifest = self.directory / str(turn) / f"files-{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}.json"
        _write_private(manifest, json.dumps({"root": root, "entries": entries}).encode())
        since = self._marker(turn)
        return TreeSnapshot(turn, "files", root, since, manifest=str(manifest), complete=complete,
                            excluded=excluded)

    # -- resume
    def load(self, records: list[dict[str, Any]]) -> None:
        """Rebuild from a resumed transcript's `checkpoint` records."""
        for rec in records:
            if rec.get("type") != "checkpoint":
                continue
            kind = rec.get("kind")
            if kind == "written":
                if isinstance(rec.get("path"), str) and isinstance(rec.get("sha"), str):
                    self.written[rec["path"]] = rec["sha"]
            elif kind == "rewound":  # a rewind dropped these turns' checkpoints
                try:
                    self._drop_from(int(rec.get("turn", 0)))
                except (TypeError, ValueError):
                    pass
            elif kind in ("git-tree", "files", "none"):
                snap = TreeSnapshot.from_record(rec)
                if snap is not None:
                    self.items.append(snap)
                    self._seen.add((snap.turn, "tree:" + snap.root))
            elif isinstance(rec.get("path"), str):
                try:
                    cp = Checkpoint(int(rec.get("turn", -1)), rec["path"], bool(rec.get("existed")),
                                    str(rec.get("blob") or ""), bool(rec.get("too_large")))
                except (TypeError, ValueError):
                    continue
                self.items.append(cp)
                self._seen.add((cp.turn, cp.path))

    # -- rewind
    def _changes(self, snap: TreeSnapshot) -> tuple[dict[str, Checkpoint], set[str], list[str]]:
        """(rel -> Checkpoint for each path that differs from the snapshot now, the snapshot's own paths,
        problems)."""
        if snap.kind == "git-tree":
            return self._git_changes(snap)
        return self._files_changes(snap)

    def _git_changes(self, snap: TreeSnapshot) -> tuple[dict[str, Checkpoint], set[str], list[str]]:
        assert self.directory is not None
        entries, diff, new = _git_state(snap)
        skipped = _skipped_manifest(snap)
        out: dict[str, Checkpoint] = {}
        problems: list[str] = []
        for rel in (os.fsdecode(p) for p in diff[1::2]):  # name-status pairs: status, path
            if rel in entries and not _is_excluded(rel, snap.excluded):
                out[rel] = Checkpoint(snap.turn, os.path.join(snap.root, rel), True, snapshot=snap, rel=rel,
                                      entry=entries[rel])
        for rel in new:
            if _is_excluded(rel, snap.excluded) or rel in entries:
                continue
            if rel.endswith("/"):  # a nested repository made since: its content is its own
                problems.append(f"{os.path.join(snap.root, rel)}: a nested repository created since; not removed")
                continue
            cp = _new_file_checkpoint(snap, rel, skipped)
            if cp is not None:
                out[rel] = cp
        for rel in skipped:  # skipped and deleted since
            if rel not in out and not os.path.lexists(os.path.join(snap.root, rel)):
                out[rel] = Checkpoint(snap.turn, os.path.join(snap.root, rel), True, snapshot=snap, rel=rel,
                                      skipped=True)
        return out, set(entries) | set(skipped), problems

    def _files_changes(self, snap: TreeSnapshot) -> tuple[dict[str, Checkpoint], set[str], list[str]]:
        data = json.loads(Path(snap.manifest).read_text())
        entries: dict[str, list[Any]] = data["entries"]
        out: dict[str, Checkpoint] = {}
        problems: list[str] = []
        for rel, ent in entries.items():
            full = os.path.join(snap.root, rel)
            try:
                st = os.lstat(full)
            except OSError:
                st = None
            changed = False
            if st is None:
                changed = True
            elif ent[0] == "l":
                try:
                    changed = not stat.S_ISLNK(st.st_mode) or os.fsdecode(os.readlink(full)) != ent[1]
                except OSError:
                    changed = True
            elif not stat.S_ISREG(st.st_mode):
                changed = True
            elif _stat_key(st) != ent[1:5] or stat.S_IMODE(st.st_mode) != ent[5]:
                if not ent[6]:
                    changed = [st.st_size, st.st_mtime_ns] != ent[1:3]
                else:
                    try:
                        changed = (st.st_size != ent[1]
                                   or hashlib.sha256(_read_nofollow(full)).hexdigest() != ent[6]
                                   or stat.S_IMODE(st.st_mode) & 0o111 != ent[5] & 0o111)
                    except OSError:
                        changed = True
            if changed:
                out[rel] = Checkpoint(snap.turn, full, True, snapshot=snap, rel=rel, entry=tuple(ent),
                                      skipped=ent[0] == "f" and not ent[6])
        if snap.complete:
            found, complete_now = self._walk(snap.root, snap.excluded)
            for rel, _e in found:
                if rel not in entries:
                    out[rel] = Checkpoint(snap.turn, os.path.join(snap.root, rel), False, snapshot=snap, rel=rel)
            if not complete_now:
                problems.append(f"{snap.root}: more than {MAX_SNAPSHOT_FILES} files now; only the new files "
                                "among the first of them are removed")
        else:
            problems.append(f"{snap.root}: the snapshot stopped at {MAX_SNAPSHOT_FILES} files; files created "
                            "after it are not removed")
        return out, set(entries), problems

    def _plan(self, turn: int) -> tuple[list[Checkpoint], list[str]]:
        """For each path changed at or after `turn`, its earliest checkpoint, and the problems found."""
        first: dict[str, Checkpoint] = {}
        problems: list[str] = []
        claimed: list[tuple[TreeSnapshot, set[str]]] = []  # earlier snapshots and the paths they cover

        def covered(path: str) -> bool:
            for snap, paths in claimed:
                if path.startswith(snap.root.rstrip("/") + "/") and os.path.relpath(path, snap.root) in paths:
                    return True
            return False

        for it in sorted(self.items, key=lambda c: c.turn):  # stable: the order they were taken
            if it.turn < turn:
                continue
            if isinstance(it, Checkpoint):
                if it.path not in first and not covered(it.path):
                    first[it.path] = it
                continue
            if it.kind == "none":
                problems.append(f"{it.root}: Bash ran here in turn {it.turn}, but its changes were not "
                                f"checkpointed ({it.reason})")
                continue
            try:
                changes, own, found = self._changes(it)
            except (_GitFailed, OSError, ValueError, KeyError, TypeError, IndexError) as exc:
                problems.append(f"{it.root}: the snapshot of turn {it.turn} cannot be read ({exc})")
                continue
            problems.extend(found)
            for cp in changes.values():
                if cp.path not in first and not covered(cp.path):
                    first[cp.path] = cp
            claimed.append((it, own | set(changes)))
        return list(first.values()), problems

    def files_since(self, turn: int) -> list[Checkpoint]:
        """For each path changed at or after `turn`, its earliest checkpoint: the state before that turn."""
        return self._plan(turn)[0]

    def restore(self, turn: int, keep: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
        """Put every file changed since `turn` back as it was, except the paths in `keep`.
        Returns (restored paths, problems)."""
        restored: list[str] = []
        plan, problems = self._plan(turn)
        plan = [cp for cp in plan if cp.path not in keep]
        # Removals first (deepest first), so a directory made since can be replaced by the file it hid.
        removals = sorted((cp for cp in plan if not cp.existed), key=lambda c: c.path.count("/"), reverse=True)
        scratch = self._checkout_all(plan)  # git: all of a snapshot's old files in one git process
        for cp in removals + [cp for cp in plan if cp.existed]:
            try:
                if self._restore_one(cp, scratch.get(id(cp.snapshot))):
                    restored.append(cp.path)
            except _Unsafe as exc:
                problems.append(f"{cp.path}: {exc}")
            except OSError as exc:
                problems.append(f"{cp.path}: {exc.strerror or exc}")
            except _GitFailed as exc:
                problems.append(f"{cp.path}: git could not read the saved content ({exc})")
            except Exception as exc:  # a rewind reports, never raises
                problems.append(f"{cp.path}: {type(exc).__name__}: {exc}")
        for path in scratch.values():
            shutil.rmtree(path, ignore_errors=True)
        self.forget(turn)
        return restored, problems

    def _checkout_all(self, plan: list[Checkpoint]) -> dict[int, str]:
        """For each git snapshot in the plan, its files to restore checked out (filters applied, as
        `git checkout` would) into a scratch directory of the session: id(snapshot) -> directory. A snapshot
        that fails here is restored file by file (`git cat-file --filters`)."""
        wanted: dict[int, tuple[TreeSnapshot, list[str]]] = {}
        for cp in plan:
            snap = cp.snapshot
            if snap is not None and snap.kind == "git-tree" and cp.existed and not cp.skipped and cp.entry \
                    and cp.entry[0] != "160000":
                wanted.setdefault(id(snap), (snap, []))[1].append(cp.rel)
        out: dict[int, str] = {}
        for key, (snap, rels) in wanted.items():
            scratch = Path(snap.index).parent / f"restore-{secrets.token_hex(4)}"
            index = scratch.with_suffix(".index")
            env = _git_env(str(index), snap.objects, snap.alternate)
            try:
                git = _open_git(snap.root, snap.root)
                scratch.mkdir(mode=0o700, parents=True)
                try:
                    shutil.copyfile(snap.index, index)
                except OSError:
                    _git(git, ["read-tree", snap.tree], env)
                _git(git, ["checkout-index", "-z", "--stdin", f"--prefix={scratch}/"], env,
                     stdin=b"".join(os.fsencode(r) + b"\0" for r in rels))
                out[key] = str(scratch)
            except (_GitFailed, OSError):
                shutil.rmtree(scratch, ignore_errors=True)
            finally:
                index.unlink(missing_ok=True)
        return out

    def forget(self, turn: int) -> None:
        """Drop the checkpoints of `turn` and later (the history from `turn` on is gone or undone); a record
        says so, so a resume drops them too. Call it after a conversation-only rewind as well."""
        self._drop_from(turn)
        self._emit({"type": "checkpoint", "kind": "rewound", "turn": turn})

    def _drop_from(self, turn: int) -> None:
        self.items = [it for it in self.items if it.turn < turn]
        self._seen = {k for k in self._seen if k[0] < turn}

    def _restore_one(self, cp: Checkpoint, scratch: str | None = None) -> bool:
        snap = cp.snapshot
        if snap is None:  # a pre-image: its path was resolved when saved, so no component may be a symlink now
            rel = cp.path.lstrip("/")
            if not cp.existed:
                _safe_delete("/", rel, None)
                return True
            if cp.too_large or not cp.blob:
                raise _Unsafe("not checkpointed (too large or unreadable)")
            _safe_write("/", rel, Path(cp.blob).read_bytes())
            return True
        if cp.skipped:
            raise _Unsafe("changed, but it was too large or unreadable to save at the snapshot")
        if not cp.existed:
            if not _safe_delete(snap.root, cp.rel, snap.since_ns):
                raise _Unsafe("looks new but is older than the checkpoint (was it ignored?); kept")
            return True
        if snap.kind == "git-tree":
            mode, oid = cp.entry
            if mode == "160000":
                raise _Unsafe("a submodule: its content is not checkpointed")
            if scratch is not None:  # checked out already (the git objects are only read there)
                got = os.path.join(scratch, cp.rel)
                if os.path.islink(got):
                    _safe_write(snap.root, cp.rel, os.fsencode(os.readlink(got)), link=True)
                    return True
                if os.path.isfile(got):
                    _safe_write(snap.root, cp.rel, _read_nofollow(got), mode=0o755 if mode == "100755" else 0o644)
                    return True
            env = _git_env("/dev/null", snap.objects, snap.alternate)
            git = _open_git(snap.root, snap.root)
            if mode == "120000":
                _safe_write(snap.root, cp.rel, _git(git, ["cat-file", "blob", oid], env), link=True)
            else:
                data = _git(git, ["cat-file", "--filters", f"--path={cp.rel}", oid], env)
                _safe_write(snap.root, cp.rel, data, mode=0o755 if mode == "100755" else 0o644)
            return True
        ent = cp.entry
        if ent[0] == "l":
            _safe_write(snap.root, cp.rel, os.fsencode(ent[1]), link=True)
            return True
        assert self.directory is not None
        blob = Path(snap.manifest).parent.parent / "files" / ent[6][:2] / ent[6]
        _safe_write(snap.root, cp.rel, blob.read_bytes(), mode=ent[5])
        return True


def checkpoint_store(state: Any) -> CheckpointStore | None:
    store = state.checkpoints
    return store if isinstance(store, CheckpointStore) else None
