"""Runs every benchmark in this folder, one after the other: `python bench/run_all.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = [
    "bench_startup.py", "bench_concurrency.py", "bench_budget.py", "bench_pipeline.py", "context_economy.py",
    "bench_tools.py", "bench_sandbox.py", "bench_prompt.py", "bench_messages_api.py", "bench_sessions.py", "bench_mcp_startup.py", "bench_keystroke.py",
]


def main() -> int:
    failed = 0
    for name in ORDER:
        path = HERE / name
        if not path.exists():
            print(f"\n## {name}: not present")
            continue
        rc = subprocess.run([sys.executable, str(path)], cwd=HERE).returncode
        if rc != 0:
            print(f"{name} exited {rc}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
