"""The sandbox's cost on short commands: 50 `true` calls through the Bash tool (BashTool.call, the path the
loop takes), unsandboxed, in the session's long-lived sandbox (the default) and with one bubblewrap per
command (the fallback), alternating runs, medians. Goal: sandboxed <= 1.5x.

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
from tools.sandbox_session import stop_all  # noqa: E402


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
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)))
