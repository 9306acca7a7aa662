"""The property: no generated command line both writes outside the project (or a protected path) and is
allowed without asking, under broad prefix rules for every command used.

Lines come from a small grammar: a target (inside, outside, protected, through a link, relative after a
`cd`), spelled the way an attacker would (line continuations inside the word, quoted pieces, `{c..c}`
braces, `$'\\xHH'` escapes, backslashes), written by a redirection or by a command's write option,
behind wrappers, inside `bash -c`, joined to harmless commands. The oracle is independent of the gate:
it knows the target it spelled; a separate test checks the spellings against real bash."""

from __future__ import annotations

import asyncio
import os
import random
import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.bash_gate import PREFIX_RULES, make_project
from tools.base import ToolContext
from tools.bash import BashTool
from tools.permissions import PermissionGate, PermissionRequest

T = TypeVar("T")
Choose = Callable[[Sequence[T]], T]

# (target as a path, relative targets are relative to the directory the line runs the write in)
TARGETS_BAD = ["~/.bashrc", "~/.profile", "{O}/x", "/tmp/agent-prop-x", "{P}/../x", "../x", "escape/x",
               ".git/hooks/pre-commit", ".git/config", ".claude/settings.json", ".agents/settings.local.json",
               ".env", ".envrc", ".mcp.json", "{P}/.git/hooks/x", "sub/../.git/hooks/x", ".bashrc"]
TARGETS_GOOD = ["out.txt", "sub/out.txt", "build.log", "{P}/sub/y.txt", "sub/deep/z"]
WRITERS = [
    "echo hi > {T}", "echo hi >> {T}", "ls 2> {T}", "ls &> {T}", "echo hi >| {T}", "echo hi 1>{T}",
    "tee {T}", "tee -a {T}", "cp README.md {T}", "mv README.md {T}", "install README.md {T}", "ln -s README.md {T}",
    "sort -o {T} README.md", "sort README.md --output {T}", "dd if=README.md of={T}", "git diff --output {T}",
    "sed -i s/a/b/ {T}", "touch {T}", "truncate -s 0 {T}", "curl -o {T} http://example.com",
    "wget -O {T} http://example.com", "rm {T}", "find . -fprint {T}", "uniq README.md {T}", "chmod 644 {T}",
    "rsync README.md {T}", "cp -f README.md {T}", "tar -cf {T} sub", "zip {T} README.md", "gzip {T}",
]
WRAPPERS = ["", "", "", "timeout 5 ", "nice -n 5 ", "nohup ", "env -u X ", "command ", "stdbuf -oL ", "time -p ",
            "timeout -s KILL 5 ", "nice -10 ", "xargs -0 "]
SAFE = ["git status", "ls", "echo hi", "cat README.md", "true"]
JOINS = [" && ", "; ", " || ", "\n", " | "]


def spell(target: str, choose: Choose[object]) -> str:
    """`target` spelled as one shell word with the same value (tilde kept first and unquoted)."""
    head = ""
    if target.startswith("~/"):
        head, target = "~/", target[2:]
    pieces: list[str] = []
    for ch in target:
        form = choose(["plain", "plain", "plain", "cont", "squote", "dquote", "brace", "ansi", "backslash"])
        if form == "cont":
            pieces.append("\\\n" + ch)
        elif form == "squote":
            pieces.append(shlex.quote(ch) if ch != "'" else ch)
        elif form == "dquote" and ch not in '"$`\\!':
            pieces.append(f'"{ch}"')
        elif form == "brace" and ch.isalnum():
            pieces.append(f"{{{ch}..{ch}}}")
        elif form == "ansi":
            pieces.append(f"$'\\x{ord(ch):02x}'")
        elif form == "backslash" and ch not in "\n":
            pieces.append("\\" + ch)
        else:
            pieces.append(ch if ch.isalnum() or ch in "/._-" else shlex.quote(ch))
    return head + "".join(pieces)


def line(choose: Choose[object], project: Path, outside: Path) -> tuple[str, str, str]:
    """(the command line, the target's value, the directory the write runs in)."""
    target = str(choose(TARGETS_BAD + TARGETS_GOOD)).format(P=project, O=outside)
    cd = bool(choose([False, False, True]))
    cwd = project / "sub" if cd else project
    if cd and not target.startswith(("/", "~")):
        target = "../" + target  # the same file, seen from sub/
    writer = str(choose(WRITERS))
    wrapper = "" if writer.startswith(("echo", "ls")) else str(choose(WRAPPERS))
    write = wrapper + writer.format(T=spell(target, choose))
    if cd:
        write = "cd sub && " + write
    if choose([False, False, False, True]):
        write = "bash -c " + shlex.quote(write)
    parts = [str(choose(SAFE)) for _ in range(int(choose([0, 0, 1, 2])))]
    parts.insert(int(choose(range(len(parts) + 1))), write)
    text = parts[0]
    for part in parts[1:]:
        joiner = str(choose(JOINS))
        text += joiner + part
    return text, target, str(cwd)


def is_bad(target: str, cwd: str, project: Path) -> bool:
    """The oracle: the real path written leaves the project or is a protected one."""
    real = os.path.realpath(os.path.join(cwd, os.path.expanduser(target)))
    root = os.path.realpath(project)
    if real != root and not real.startswith(root + "/"):
        return True
    parts = Path(real).relative_to(root).parts
    return any(p in (".git", ".claude", ".agents") for p in parts) or parts[-1].startswith(".env") or \
        parts[-1] in (".mcp.json", ".bashrc", ".profile")


async def verdict(command: str, ctx: ToolContext) -> tuple[bool, PermissionRequest | None]:
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "deny"

    gate = PermissionGate(ask=ask, allowed_tools=PREFIX_RULES, home=ctx.project_root.parent / "agent-home")
    result = await gate.authorize(BashTool(), {"command": command}, ctx)
    return result.allowed, (asked[0] if asked else None)


_CTX: dict[str, ToolContext] = {}
_LOOP = asyncio.new_event_loop()  # one loop for the 10,000 lines: a new loop per line costs more than the gate


def shared_ctx(tmp_path_factory: object) -> ToolContext:
    if "ctx" not in _CTX:
        base = Path(str(tmp_path_factory.mktemp("prop")))  # type: ignore[attr-defined]
        _CTX["ctx"] = make_project(base)
    return _CTX["ctx"]


@settings(max_examples=10_000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_generated_line_writes_badly_without_asking(data: st.DataObject, tmp_path_factory: object) -> None:
    ctx = shared_ctx(tmp_path_factory)
    project, outside = ctx.project_root, ctx.project_root.parent / "elsewhere"

    # One draw per line (a draw per choice costs more than the gate itself); shrinking still works.
    picks = iter(data.draw(st.binary(min_size=64, max_size=64)))

    def choose(options: Sequence[T]) -> T:
        return list(options)[next(picks, 0) % len(options)]

    command, target, cwd = line(choose, project, outside)  # type: ignore[arg-type]
    if not is_bad(target, cwd, project):
        return
    allowed, request = _LOOP.run_until_complete(verdict(command, ctx))
    assert not allowed, command
    assert request is None or request.always_rule is None, (command, request.always_rule)


def test_the_grammar_also_makes_lines_the_gate_allows(tmp_path: Path) -> None:
    """The property is not vacuous: most harmless generated lines pass the same rules."""
    ctx = make_project(tmp_path)
    rng = random.Random(7)
    allowed = total = 0
    for _ in range(1500):
        command, target, cwd = line(rng.choice, ctx.project_root, tmp_path / "elsewhere")  # type: ignore[arg-type]
        if is_bad(target, cwd, ctx.project_root) or "xargs" in command or "bash -c" in command:
            continue
        total += 1
        allowed += asyncio.run(verdict(command, ctx))[0]
    assert total > 200 and allowed / total > 0.5, (allowed, total)


def test_spellings_are_what_bash_computes(tmp_path: Path) -> None:
    """The oracle's premise, checked against real bash: each spelled word has the target's value."""
    rng = random.Random(11)
    targets = [t.format(P="/p", O="/o") for t in TARGETS_BAD + TARGETS_GOOD]
    words = [(t, spell(t, rng.choice)) for t in targets for _ in range(6)]  # type: ignore[arg-type]
    script = "\n".join(f"printf '%s\\0' {w}" for _, w in words)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    got = out.split("\0")[:-1]
    assert got == [t.replace("~", str(tmp_path), 1) if t.startswith("~/") else t for t, _ in words]
