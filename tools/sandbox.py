"""Bash in an OS sandbox (bubblewrap): the kernel, not a parser, keeps a command inside the project.

A sandboxed command sees the root file system read-only, the project, the `--add-dir` folders and a
per-session temp dir (`TMPDIR`) writable, a private `/tmp` and `/run`, its own PID namespace and `/proc`
(the agent's environment is not there), no network (loopback included) and no capabilities, even as root.
Secrets are hidden (empty over credential directories, /dev/null over credential files), and inside each
writable root the paths that turn a write into code execution stay read-only (`.git/hooks`,
`.git/config`, `.claude/`, `.agents/`, `.mcp.json`, `.vscode/`, `.envrc`, `.env`...). A protected path at
the root that does not exist yet gets an empty read-only placeholder for the length of the command (an empty
directory, or an empty file for `.env`; removed afterwards when still empty), so it cannot be created
either; `.git` is a mount point, so it cannot be renamed away and recreated. Below the root, what a later
session started there loads (services/loaded_config.py: `.env*`, `.claude/`, `.mcp.json`, `CLAUDE.md`,
`AGENTS.md`, `.gitattributes`, a nested `.git/config` and `.git/hooks`...) is found by a bounded walk
(tools/sandbox_walk.py) and bound read-only where it exists; one created during a command is bound from
the next command on, and caught when loaded by the trust content digest. `socket(AF_UNIX)` is refused by a seccomp
filter (the Docker socket, agents' sockets) unless `network.allowAllUnixSockets`. With
`network.allowedDomains`, HTTP(S) goes through a filtering proxy (tools/sandbox_net.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.sandbox_settings import SandboxSettings
from services.trace import trace
from tools.base import ToolError
from tools.sandbox_walk import find_loaded

# Credential stores under the user's home (Claude Code 2.1.332's list, trimmed to Linux).
SECRET_DIRS = (".ssh", ".aws", ".azure", ".gnupg", ".kube", ".docker", ".config/gh", ".config/glab-cli",
               ".config/gcloud", ".claude", ".password-store", ".local/share/keyrings")
SECRET_FILES = (".netrc", ".git-credentials", ".npmrc", ".pypirc", ".cargo/credentials",
                ".cargo/credentials.toml", ".gem/credentials", ".m2/settings.xml", ".claude.json", ".pgpass",
                ".my.cnf", ".vault-token")
# Under the agent home when a writable root lies inside it (tests): what must still be hidden.
AGENT_HOME_SECRETS = ("projects", ".credentials.json", "credentials.json", "credentials", "trusted-folders.json",
                      "settings.json", "mcp.json", ".env", "install-id")
# Inside a writable root: (path, kind of placeholder when missing: "dir", "file" or None for none).
# A missing file gets an empty directory as its placeholder: git status does not list it, a program that
# reads it gets EISDIR, and nothing can be written there.
PROTECTED = ((".claude", "dir"), (".agents", "dir"), (".mcp.json", "dir"), (".envrc", "dir"),
             (".vscode", "dir"), (".idea", None), (".husky", None), (".devcontainer", None))
GIT_PROTECTED = (("hooks", "dir"), ("config", None), ("config.worktree", None), ("modules", None))
# A missing root `.env` gets an empty *file*: dotenv readers (python-dotenv, docker compose, the agent's own
# `read_dotenv`) see no variables where a directory would make them fail; usually git-ignored.
DOTENV_PLACEHOLDER = ".env"
UNAVAILABLE_FIX = "install bubblewrap (e.g. apt-get install bubblewrap) or set sandbox.enabled: false"


class SandboxRefused(ToolError):
    """The command cannot be contained as configured; it is not run."""


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""
    path: str | None = None


_probe_cache: dict[str | None, Availability] = {}


def probe(search_path: str | None) -> Availability:
    """Whether bubblewrap runs here with the namespaces we use (one tiny sandbox, cached per PATH)."""
    if search_path in _probe_cache:
        return _probe_cache[search_path]
    path = shutil.which("bwrap", path=search_path)
    if not sys.platform.startswith("linux"):
        result = Availability(False, f"bubblewrap needs Linux; this is {sys.platform}")
    elif path is None:
        result = Availability(False, "bwrap was not found on PATH")
    else:
        try:
            proc = subprocess.run([path, *_base_args(net=False), "--", "true"], capture_output=True, timeout=10,
                                  env={"PATH": "/usr/bin:/bin"}, check=False)
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            result = Availability(True, path=path) if proc.returncode == 0 else Availability(
                False, f"bwrap cannot create its namespaces ({(err or [f'exit {proc.returncode}'])[0][:120]})", path)
        except (OSError, subprocess.SubprocessError) as exc:
            result = Availability(False, f"bwrap could not run ({exc.__class__.__name__})", path)
    _probe_cache[search_path] = result
    return result


def sandbox_python() -> str:
    """The interpreter for the sandbox's own helpers (standard library only, run with -I -S): a venv's
    python resolved to its base, since the venv may sit under /tmp, which the sandbox replaces."""
    return os.path.realpath(sys.executable)


def _base_args(net: bool) -> list[str]:
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    return args if net else [*args, "--unshare-net"]


# -- seccomp: socket(AF_UNIX, ...) fails with EPERM -------------------------------------------------

_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}  # AUDIT_ARCH, __NR_socket


def seccomp_program(machine: str) -> bytes | None:
    """A classic-BPF seccomp filter refusing socket(AF_UNIX); None on an architecture we do not know."""
    if machine not in _ARCH:
        return None
    arch, nr = _ARCH[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    prog = [
        (ld, 0, 0, 4), (jeq, 0, 5, arch),          # another ABI (i386's socketcall): refused outright
        (ld, 0, 0, 0), (jge, 3, 0, 0x40000000),    # x32 syscall numbers: refuse
        (jeq, 0, 3, nr),
        (ld, 0, 0, 16), (jeq, 0, 1, 1),            # args[0] == AF_UNIX
        (ret, 0, 0, eperm), (ret, 0, 0, allow),
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


# -- placeholders for protected paths that do not exist ---------------------------------------------

_placeholder_lock = threading.Lock()
_placeholders: dict[str, list[int]] = {}  # path -> [refcount, inode]


def _make_placeholder(path: Path, kind: str) -> bool:
    """Take (or share) an empty placeholder at `path`; False when something real is there already."""
    key = str(path)
    with _placeholder_lock:
        entry = _placeholders.get(key)
        if entry is not None:
            try:
                if os.lstat(path).st_ino != entry[1]:
                    return False  # replaced on the host by something real: bound as it is
            except OSError:
                # Removed on the host while held (a long-lived sandbox): made again, still shared.
                if not _create(path, kind):
                    return False
                entry[1] = os.lstat(path).st_ino
            entry[0] += 1
            return True
        if os.path.lexists(path) or not _create(path, kind):
            return False
        _placeholders[key] = [1, os.lstat(path).st_ino]
        return True


def _create(path: Path, kind: str) -> bool:
    try:
        if kind == "dir":
            path.mkdir(mode=0o755)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
        return True
    except OSError:
        return False


def is_placeholder(path: Path) -> bool:
    """Whether `path` is a placeholder we made and still hold (same inode)."""
    with _placeholder_lock:
        entry = _placeholders.get(str(path))
        try:
            return entry is not None and os.lstat(path).st_ino == entry[1]
        except OSError:
            return False


def release_placeholders(paths: Iterable[str]) -> None:
    """Remove the placeholders a command held once nobody uses them, when they are still empty."""
    with _placeholder_lock:
        for key in paths:
            entry = _placeholders.get(key)
            if entry is None:
                continue
            entry[0] -= 1
            if entry[0] > 0:
                continue
            del _placeholders[key]
            try:
                st = os.lstat(key)
                if st.st_ino != entry[1]:
                    continue
                if os.path.isdir(key) and not os.path.islink(key):
                    os.rmdir(key)
                elif st.st_size == 0:
                    os.unlink(key)
            except OSError:
                pass


@dataclass
class Wrapped:
    """A command line ready to spawn, what to pass it and what to release once it has ended."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    placeholders: list[str] = field(default_factory=list)
    # Paths that cannot be held read-only without breaking git (it fails on an empty placeholder) and must
    # not appear: removed after the command when it created them.
    forbidden: list[str] = field(default_factory=list)

    def close_fds(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def release(self) -> list[str]:
        """Close the passed fds, drop the placeholders, remove forbidden paths the command created; returns
        the removed ones."""
        self.close_fds()
        release_placeholders(self.placeholders)
        self.placeholders = []
        removed = [p for p in self.forbidden if os.path.lexists(p)]
        for path in removed:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        self.forbidden = []
        return removed


def is_excluded(command: str, patterns: list[str]) -> bool:
    """Claude Code's `excludedCommands`: every simple command matches a pattern (Bash rule syntax), and
    nothing in the line is a `cd`, a redirection to a file or something the parse cannot prove."""
    if not patterns:
        return False
    from tools.bash_parse import parse_command
    from tools.bash_rules import rule_matches

    parsed = parse_command(command)
    if parsed.problems or parsed.writes or not parsed.commands:
        return False
    contents = [p[5:-1] if p.startswith("Bash(") and p.endswith(")") else p for p in patterns]
    return all(c.name not in ("cd", "pushd", "popd") and any(rule_matches(p, c) for p in contents)
               for c in parsed.commands)


def _is_under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _dotenv_has_secret(path: Path, names: Iterable[str]) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(re.search(rf"^\s*(?:export\s+)?{re.escape(n)}\s*=", text, re.M) for n in names)


@dataclass
class Sandbox:
    """The session's sandbox: settings, whether bubblewrap works here, and the `/sandbox` toggle."""

    settings: SandboxSettings
    availability: Availability
    project_root: Path
    home: Path  # the user's home (credential stores)
    agent_home: Path
    write_dirs: list[Path] = field(default_factory=list)  # --add-dir folders
    secret_names: frozenset[str] = frozenset()
    session_enabled: bool | None = None  # /sandbox: on/off for this session
    session_auto_allow: bool | None = None
    # Commands share one long-lived sandbox (tools/sandbox_session.py); False: one bubblewrap per command.
    reuse: bool = True
    _tmpdir: Path | None = None

    # -- state --
    @property
    def wanted(self) -> bool:
        if self.session_enabled is not None:
            return self.session_enabled
        return self.settings.enabled is not False

    @property
    def active(self) -> bool:
        return self.wanted and self.availability.ok

    @property
    def refuses(self) -> bool:
        """failIfUnavailable and no working bubblewrap: Bash must not run at all."""
        return self.wanted and not self.availability.ok and bool(self.settings.fail_if_unavailable)

    @property
    def auto_allow(self) -> bool:
        if self.session_auto_allow is not None:
            return self.session_auto_allow
        return self.settings.auto_allow is not False

    @property
    def allow_unsandboxed(self) -> bool:
        return self.settings.allow_unsandboxed is not False

    def unavailable_notice(self) -> str | None:
        """The one line said once when the sandbox is wanted and cannot run here."""
        if not self.wanted or self.availability.ok:
            return None
        then = ("Bash is refused (sandbox.failIfUnavailable)" if self.settings.fail_if_unavailable
                else "Bash commands will ask before they run")
        return f"sandbox unavailable: {self.availability.reason}; {then}. Fix: {UNAVAILABLE_FIX}"

    def status_line(self) -> str:
        if not self.wanted:
            return "sandbox: off (Bash commands follow the permission rules)"
        if not self.availability.ok:
            return f"sandbox: unavailable ({self.availability.reason}). Fix: {UNAVAILABLE_FIX}"
        allow = "auto-allow" if self.auto_allow else "regular permissions"
        net = f"network: {', '.join(self.settings.allowed_domains)}" if self.settings.allowed_domains \
            else "no network"
        return f"sandbox: on, {allow}, {net}; writable: {', '.join(self.writable_roots())}"

    def temp_dir(self) -> Path:
        """A per-session TMPDIR (0700) the sandbox keeps writable between commands."""
        if self._tmpdir is None or not self._tmpdir.is_dir():
            self._tmpdir = Path(tempfile.mkdtemp(prefix="agent-sandbox-"))
        return self._tmpdir

    def writable_roots(self) -> list[str]:
        roots = [self.project_root, *self.write_dirs,
                 *(Path(os.path.expanduser(p)) for p in self.settings.allow_write)]
        return list(dict.fromkeys(os.path.realpath(r) for r in roots if Path(r).is_dir()))

    def runs_sandboxed(self, command: str, input: dict[str, Any] | None = None) -> bool:
        """Whether this Bash call runs inside the sandbox: not when it is off or unavailable, not for an
        excluded command, not when the model asked for an exception and exceptions are allowed."""
        if not self.active:
            return False
        if input is not None and input.get("dangerouslyDisableSandbox") is True and self.allow_unsandboxed:
            return False
        return not is_excluded(command, self.settings.excluded_commands)

    def asks_to_leave(self, input: dict[str, Any]) -> bool:
        """The model asked to run outside an active sandbox (and may): the gate always asks the user."""
        return self.active and self.allow_unsandboxed and input.get("dangerouslyDisableSandbox") is True

    # -- the command line --
    def wrap(self, argv: list[str], cwd: Path, env: dict[str, Any], extra_writable: Iterable[str] = ()) -> Wrapped:
        """`argv` run under bubblewrap in `cwd`; `env` gets the sandbox's TMPDIR. Call `release()` after."""
        assert self.availability.path is not None
        tmp = str(self.temp_dir())
        env["TMPDIR"] = tmp
        roots = self.writable_roots()
        args = [self.availability.path, *_base_args(net=False)]
        for path in [*roots, tmp, *extra_writable]:
            args += ["--bind", path, path]
        wrapped = Wrapped([])
        for root in roots:
            args += self._protect(Path(root), wrapped)
        args += self._deny_writes(roots)
        args += self._hide(roots)
        program = None if self.settings.allow_all_unix_sockets else seccomp_program(os.uname().machine)
        if self.settings.allowed_domains:
            # The bridge to the filtering proxy starts first; the filter is applied to the command after it.
            from tools.sandbox_net import helper_argv, proxy_env, proxy_for

            proxy = proxy_for(self.settings.allowed_domains, self.settings.denied_domains)
            args += ["--ro-bind", str(proxy.directory), str(proxy.directory)]
            env.update(proxy_env())
            argv = helper_argv(sandbox_python(), proxy.socket_path, program, argv)
        elif program is not None:
            rfd, wfd = os.pipe()
            os.write(wfd, program)
            os.close(wfd)
            wrapped.pass_fds = (rfd,)
            args += ["--seccomp", str(rfd)]
        wrapped.argv = [*args, "--chdir", str(cwd), "--", *argv]
        return wrapped

    def _protect(self, root: Path, wrapped: Wrapped) -> list[str]:
        args: list[str] = []
        git = root / ".git"
        entries: list[tuple[Path, str | None]] = [(root / name, kind) for name, kind in PROTECTED]
        # Our own placeholder for a missing .git is not a repository: it stays read-only as a whole.
        real_git = git.is_dir() and not git.is_symlink() and not is_placeholder(git)
        if real_git:
            args += ["--bind", str(git), str(git)]  # a mount point: cannot be renamed away and recreated
            entries += [(git / name, kind) for name, kind in GIT_PROTECTED]
        else:
            entries.append((git, "dir"))  # a .git file (worktree) names the git dir: read-only too
        for path, _ in entries:
            if os.path.islink(path):
                # A mount lands on the link's target: the link itself could be replaced by a real file.
                raise SandboxRefused(f"{path} is a symbolic link; the sandbox keeps it read-only only as a real "
                                     "file or directory. Remove the link, or turn the sandbox off (/sandbox off).")
        if real_git and not os.path.lexists(git / "commondir"):
            wrapped.forbidden.append(str(git / "commondir"))  # git would read another repository's config
        for path, kind in entries:
            # A placeholder another running command holds is taken too: it stays until both have ended.
            if kind is not None and _make_placeholder(path, kind):
                wrapped.placeholders.append(str(path))
            elif not os.path.lexists(path):
                continue
            args += ["--ro-bind", str(path), str(path)]
        return args + self._protect_loaded(root, wrapped)

    def _protect_loaded(self, root: Path, wrapped: Wrapped) -> list[str]:
        """What a later session loads, below the root (services/loaded_config.py), held read-only.

        Only what exists now: a file made at depth during the command (`mkdir -p sub/.claude && echo ... >
        sub/.claude/settings.json`) cannot be prevented by a mount. The next command's sandbox binds it
        (the session's sandbox is rebuilt when its arguments change), and the trust content digest catches
        it when a session loads it. Renaming a parent away (`mv sub sub2`) works, and the mount goes with it:
        the file stays read-only under its new name; a new `sub/` is such a new file.
        """
        args: list[str] = []
        dotenv = root / DOTENV_PLACEHOLDER
        skip = {name for name, _ in PROTECTED} | {".git"}
        if _make_placeholder(dotenv, "file"):
            wrapped.placeholders.append(str(dotenv))
            args += ["--ro-bind", str(dotenv), str(dotenv)]
            skip.add(DOTENV_PLACEHOLDER)
        walk = find_loaded(str(root), skip)
        if walk.capped is not None:
            trace("sandbox.walk_capped", root=str(root), entries=walk.entries, found=len(walk.found),
                  limit=walk.capped)
        for path in walk.found:
            args += ["--ro-bind-try", path, path]  # removed by a concurrent command since: nothing to hold
        return args

    def _deny_writes(self, roots: list[str]) -> list[str]:
        args: list[str] = []
        for raw in self.settings.deny_write:
            path = os.path.realpath(os.path.expanduser(raw))
            if os.path.exists(path) and _is_under(path, roots):
                args += ["--ro-bind", path, path]
        return args

    def _hide(self, roots: list[str]) -> list[str]:
        home = os.path.realpath(self.home)
        dirs = [os.path.join(home, d) for d in SECRET_DIRS]
        files = [os.path.join(home, f) for f in SECRET_FILES]
        agent_home = os.path.realpath(self.agent_home)
        if any(_is_under(r, [agent_home]) for r in roots):
            dirs += [os.path.join(agent_home, n) for n in AGENT_HOME_SECRETS]
        else:
            dirs.append(agent_home)
        env_files = [str(Path(r) / ".env") for r in roots
                     if (Path(r) / ".env").is_file() and _dotenv_has_secret(Path(r) / ".env", self.secret_names)]
        files += env_files
        dirs += [os.path.realpath(os.path.expanduser(p)) for p in self.settings.deny_read]
        reopen = self._reopened([agent_home, *env_files])
        args: list[str] = []
        for path in dict.fromkeys([*dirs, *files]):
            if not os.path.lexists(path) or any(_is_under(r, [path]) and r != path for r in roots):
                continue  # a hidden folder that holds the project: its other entries are still hidden above
            if path in reopen:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                # allowRead inside: bound on the empty tmpfs before it turns read-only (mount points need it)
                inside = [p for p in reopen if _is_under(p, [path])]
                args += ["--tmpfs", path, *(a for p in inside for a in ("--ro-bind", p, p)), "--remount-ro", path]
            else:
                args += ["--ro-bind", "/dev/null", path]
        return args

    def _reopened(self, never: list[str]) -> list[str]:
        """`filesystem.allowRead`: readable again inside what is hidden. Never the agent's own home, nor a
        file hidden for holding the agent's secrets."""
        paths = (os.path.realpath(os.path.expanduser(raw)) for raw in self.settings.allow_read)
        return [p for p in dict.fromkeys(paths) if os.path.exists(p) and not _is_under(p, never)]

