"""The sandbox's cost on short commands: 50 `true` calls through the Bash tool (BashTool.call, the path the
loop takes), unsandboxed, in the session's long-lived sandbox (the default) and with one bubblewrap per
command (the fallback), alternating runs, medians. Goal: sandboxed <= 1.5x. Then the walk that finds what a
later session loads below the project (tools/sandbox.py `find_loaded`, run before every command) on a tree of
about 10k files, alone and as part of one `true` call in the session's sandbox.

`python bench/bench_sandbox.py [calls]`"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.sandbox_settings import SandboxSettings  # noqa: E402
from tools import sandbox_walk  # noqa: E402
from tools.base import SessionState, ToolContext  # noqa: E402
from tools.bash import BashTool  # noqa: E402
from tools.sandbox import Sandbox, probe  # noqa: E402
from tools.sandbox_session import stop_all  # noqa: E402
from tools.sandbox_walk import SETTLE_S, find_loaded  # noqa: E402


async def _calls(tool: BashTool, ctx: ToolContext, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        out = await tool.call({"command": "true"}, ctx)
        assert not out.is_error, out.content
    return time.perf_counter() - started


def _tree(project: Path, dirs: int = 500, files: int = 20) -> int:
    """About `dirs * files` files, three levels deep, a nested CLAUDE.md and .claude/ every 50 directories."""
    for d in range(dirs):
        folder = project / f"pkg{d // 50}" / f"mod{d % 50 // 10}" / f"d{d}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            (folder / f"f{f}.py").write_text("x = 1\n")
        if d % 50 == 0:
            (folder / "CLAUDE.md").write_text("notes\n")
            (folder / ".claude").mkdir()
    return sum(len(fs) + len(ds) for _, ds, fs in os.walk(project))


async def walk_cost(found_ok: bool, rounds: int = 5) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        project = Path(tmp) / "project"
        (project / ".git" / "hooks").mkdir(parents=True)
        entries = _tree(project)
        time.sleep(SETTLE_S + 0.2)  # the directories settle: their listings can be kept
        cold, warm = [], []
        for _ in range(rounds):
            sandbox_walk._cache.clear()
            for times in (cold, warm):
                started = time.perf_counter()
                walk = find_loaded(str(project), {".git"})
                times.append(time.perf_counter() - started)
        line = (f"walk of {entries} entries, median of {rounds}: {statistics.median(cold) * 1000:.1f} ms cold, "
                f"{statistics.median(warm) * 1000:.1f} ms with the kept listings; {len(walk.found)} found, "
                f"capped: {walk.capped}")
        if found_ok:
            ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
            tool = BashTool()
            tool.sandbox = Sandbox(SandboxSettings(), probe(os.environ.get("PATH")), project, Path.home(),
                                   Path(tmp) / "home")
            await _calls(tool, ctx, 3)
            per_call = statistics.median([await _calls(tool, ctx, 10) / 10 for _ in range(rounds)])
            stop_all()
            line += f"; a `true` call in the session's sandbox there: {per_call * 1000:.1f} ms"
        print(line)


async def main(n: int = 50, rounds: int = 5) -> int:
    found = probe(os.environ.get("PATH"))
    if not found.ok:
        print(f"## sandbox: skipped ({found.reason})")
        await walk_cost(False)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        (project / ".git" / "hooks").mkdir(parents=True)
        ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
        tools = {"unsandboxed": BashTool(), "session": BashTool(), "per-command": BashTool()}
        for name in ("session", "per-command"):
            tools[name].sandbox = Sandbox(SandboxSettings(), found, project, Path.home(), Path(tmp) / "home",
                                          reuse=name == "session")
        times: dict[str, list[float]] = {name: [] for name in tools}
        for tool in tools.values():
            await _calls(tool, ctx, 3)  # warm-up: the session's sandbox, the temp dir, the page cache
        for _ in range(rounds):
            for name, tool in tools.items():
                times[name].append(await _calls(tool, ctx, n))
        stop_all()
    med = {name: statistics.median(t) for name, t in times.items()}
    p = med["unsandboxed"]
    print(f"## sandbox: {n} `true` calls through the Bash tool, median of {rounds}")
    print(f"unsandboxed {p * 1000:.0f} ms ({p / n * 1000:.1f} ms/call)")
    for name in ("session", "per-command"):
        print(f"{name} sandbox {med[name] * 1000:.0f} ms ({med[name] / n * 1000:.1f} ms/call), "
              f"ratio {med[name] / p:.2f}x" + (" (goal <= 1.5x)" if name == "session" else " (the fallback)"))
    await walk_cost(True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)))
