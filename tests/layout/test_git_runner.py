"""services/git_safe.py is the one place a git process starts.

Git runs code a repository brings (filters, diff drivers, fsmonitor, hooks, a bare-shaped folder's
config); only git_safe's runner neutralises all of it. Any other module that spawns git would bypass that,
so this test reads every module under agent/, tools/ and services/ (ast, not grep: strings in comments
and docs do not count) and fails on:

- an argv literal (list or tuple) whose first element is the string "git", wherever it is built;
- a spawn call (subprocess, asyncio, os.exec*/spawn*) whose command is "git" or a shell line starting
  with "git ";
- `shutil.which("git")`: finding git to run it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {ROOT / "services" / "git_safe.py"}
SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput",
            "create_subprocess_exec", "create_subprocess_shell", "system", "popen", "posix_spawn",
            "posix_spawnp", "execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle", "execlpe",
            "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnlp"}


def _is_git(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "git"


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _findings(source: str, name: str) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and _is_git(node.elts[0]):
            out.append(f"{name}:{node.lineno}: an argv starting with 'git'")
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first, called = node.args[0], _called_name(node)
        if called == "which" and _is_git(first):
            out.append(f"{name}:{node.lineno}: shutil.which('git')")
        elif called in SPAWNERS and isinstance(first, ast.Constant) and isinstance(first.value, str) \
                and (first.value == "git" or first.value.startswith("git ")):
            out.append(f"{name}:{node.lineno}: {called}({first.value!r}...)")
    return out


def test_only_git_safe_starts_git() -> None:
    found = []
    for floor in ("agent", "tools", "services"):
        for path in sorted((ROOT / floor).rglob("*.py")):
            if path not in ALLOWED:
                found += _findings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "git started outside services/git_safe.py:\n" + "\n".join(found)


def test_the_check_sees_each_way_of_starting_git() -> None:
    """The detector itself: each shape is caught, lookalikes that start nothing are not."""
    caught = [
        'subprocess.run(["git", "add", "-A"])',
        'argv = ("git", "status")',
        'asyncio.create_subprocess_exec("git", "write-tree")',
        'os.execvp("git", args)',
        'subprocess.run("git add -A", shell=True)',
        'exe = shutil.which("git")',
    ]
    for line in caught:
        assert _findings(line, "x.py"), line
    for line in ('TOOLS = frozenset({"git", "npm"})', 'table = {"git": handler}', 'name == "git"',
                 'subprocess.run(["gitk"])', 'print("git add is run elsewhere")'):
        assert _findings(line, "x.py") == [], line
