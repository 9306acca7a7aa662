"""The sandbox's cost on short commands: 50 `true` calls through the Bash tool (BashTool.call, the path the
loop takes), sandboxed (bubblewrap) vs not, alternating runs, medians. Goal: sandboxed <= 1.5x.

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
from tools.base import SessionState, ToolContext  # noqa: E402
from tools.bash import BashTool  # noqa: E402
from tools.sandbox import Sandbox, probe  # noqa: E402


async def _calls(tool: BashTool, ctx: ToolContext, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        out = await tool.call({"command": "true"}, ctx)
        assert not out.is_error, out.content
    return time.perf_counter() - started


async def main(n: int = 50, rounds: int = 5) -> int:
    found = probe(os.environ.get("PATH"))
    if not found.ok:
        print(f"## sandbox: skipped ({found.reason})")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        (project / ".git" / "hooks").mkdir(parents=True)
        ctx = ToolContext(session=SessionState(cwd=project), project_root=project)
        plain, boxed = BashTool(), BashTool()
        boxed.sandbox = Sandbox(SandboxSettings(), found, project, Path.home(), Path(tmp) / "home")
        times: dict[str, list[float]] = {"plain": [], "sandboxed": []}
        await _calls(boxed, ctx, 3)  # warm-up: the seccomp program, the temp dir, the page cache
        for _ in range(rounds):
            times["plain"].append(await _calls(plain, ctx, n))
            times["sandboxed"].append(await _calls(boxed, ctx, n))
    p, s = statistics.median(times["plain"]), statistics.median(times["sandboxed"])
    print(f"## sandbox: {n} `true` calls through the Bash tool, median of {rounds}")
    print(f"unsandboxed {p * 1000:.0f} ms ({p / n * 1000:.1f} ms/call), sandboxed {s * 1000:.0f} ms "
          f"({s / n * 1000:.1f} ms/call), ratio {s / p:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)))
