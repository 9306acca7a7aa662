"""The keystroke bench runs end to end (small sizes): every case gets its keys measured. No timing is asserted
here; the numbers are the bench's to print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pexpect")
pytest.importorskip("pyte")
ROOT = Path(__file__).resolve().parent.parent


def test_bench_keystroke_measures_every_case() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_keystroke.py"), "--lines", "200",
                          "--samples", "5"], cwd=ROOT / "bench", capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {m.group(1).strip(): int(m.group(2)) for m in re.finditer(r"^\| ([^|]+) \| (\d+) +\|", out.stdout, re.M)}
    assert rows.get("bare prompt-toolkit prompt, idle") == 5, out.stdout
    assert rows.get("agent REPL, idle") == 5, out.stdout
    streaming = {k: v for k, v in rows.items() if "streaming 200 lines" in k}
    assert len(streaming) == 2 and all(n >= 1 for n in streaming.values()), out.stdout
    assert re.search(r"streaming p95 [\d.]+ ms", out.stdout)
