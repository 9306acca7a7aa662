"""Start-up with MCP servers: how long until the first model request, and until exit, for a one-shot run
with no server, with a server that never answers, with a server that dies at start, and with a working
server; plus the old behaviour (wait for every server, 15 s each) emulated with MCP_STARTUP_WAIT_MS.

`python bench/bench_mcp_startup.py` (median of 5 runs each; the emulated old behaviour runs once)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, header

from tests.fake_anthropic import FakeAnthropic

SERVERS = ROOT / "tests" / "mcp" / "servers"
CASES = {
    "no server": {},
    "a server that never answers": {"silent": [str(SERVERS / "hang.py"), "silent"]},
    "a server that dies at start": {"dead": [str(SERVERS / "dies.py")]},
    "a working server (calculator)": {"calc": [str(SERVERS / "calculator.py")]},
}


def run_once(servers: dict[str, list[str]], extra_env: dict[str, str]) -> tuple[float, float]:
    fake = FakeAnthropic()
    try:
        return _run(fake, servers, extra_env)
    finally:
        fake.close()


def _run(fake: FakeAnthropic, servers: dict[str, list[str]], extra_env: dict[str, str]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        if servers:
            table = {n: {"command": sys.executable, "args": a} for n, a in servers.items()}
            (root / ".mcp.json").write_text(json.dumps({"mcpServers": table}))
        fake.text("ok")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TRACE"))}
        env.update({"AGENT_HOME": str(root / "home"), "PYTHONPATH": str(ROOT), "ANTHROPIC_BASE_URL": fake.url,
                    "ANTHROPIC_API_KEY": "sk-test", "MCP_TIMEOUT": "15000", **extra_env})
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "agent", "-p", "hi"], cwd=root, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = None
        while proc.poll() is None:
            if first is None and fake.requests:
                first = time.perf_counter() - t0
            time.sleep(0.002)
        total = time.perf_counter() - t0
        if first is None:
            first = total if fake.requests else float("nan")
        return first, total


def main() -> int:
    header("MCP start-up: one-shot `agent -p hi` against the fake API")
    print("| servers | first request (median) | exit (median) |")
    print("|---|---|---|")
    base = None
    for label, servers in CASES.items():
        runs = [run_once(servers, {}) for _ in range(5)]
        first = statistics.median(r[0] for r in runs)
        total = statistics.median(r[1] for r in runs)
        base = first if base is None else base
        print(f"| {label} | {first * 1000:.0f} ms ({first / base:.2f}x) | {total * 1000:.0f} ms |")
    first, total = run_once(CASES["a server that never answers"], {"MCP_STARTUP_WAIT_MS": "15000"})
    print(f"| a server that never answers, waiting for it first (the old behaviour) | {first * 1000:.0f} ms "
          f"({first / base:.2f}x) | {total * 1000:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
