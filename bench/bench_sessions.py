"""Scale of history: `agent -c` with 1 and with 2,000 sessions in the project.

The target: a one-shot `agent --mock -c -p hi` with 2,000 sessions within 1.2x its time with one. Also
the in-process cost of finding the session (`latest_session`, via the index) against the old way (stat
every transcript and sort), and of listing all sessions. Usage: `python bench/bench_sessions.py [N ...]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import best_of, header, table

PY = sys.executable
RECORDS = 20  # a realistic short session: header, prompts, replies, tool rounds


def make_sessions(home: Path, project: Path, n: int) -> None:
    os.environ["AGENT_HOME"] = str(home)
    from services.config import project_dir
    from services.session import ensure_private_dir, touch_index

    base = ensure_private_dir(project_dir(project))
    body = "x" * 900
    for i in range(n):
        sid = f"20260101-{i:06d}-bench{i % 1000:03d}"
        path = base / f"{sid}.jsonl"
        lines = [{"type": "session", "version": 1, "session_id": sid, "created_at": time.time()}]
        for j in range(RECORDS):
            role = "user" if j % 2 == 0 else "assistant"
            lines.append({"type": "message", "message": {"role": role, "content": [
                {"type": "text", "text": f"{role} {i}.{j} {body}"}]}})
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        os.utime(path, (1e9 + i, 1e9 + i))
        touch_index(path, f"user {i}.0")


def old_latest(base: Path) -> Path:
    return sorted(base.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)[0]


def main(counts: list[int]) -> None:
    header(f"Resume with many sessions: `agent --mock -c -p hi`, median of 7 runs ({RECORDS} records each)")
    from services.config import project_dir
    from services.session import latest_session, list_sessions, load_transcript

    rows = []
    base_time = None
    for n in counts:
        root = Path(tempfile.mkdtemp(prefix=f"bench-sessions-{n}-"))
        home, project = root / "home", root / "project"
        project.mkdir(parents=True)
        make_sessions(home, project, n)
        env = {**os.environ, "AGENT_HOME": str(home), "QUERY_MOCK": "1"}
        env.pop("ANTHROPIC_API_KEY", None)
        args = [PY, "-m", "agent", "--mock", "-c", "-p", "hi"]
        subprocess.run(args, cwd=project, env=env, capture_output=True, check=True)  # warm-up (.pyc, index)
        t = best_of(lambda args=args, env=env, project=project: subprocess.run(
            args, cwd=project, env=env, capture_output=True, check=True), repeat=7)
        base_time = base_time or t
        base = project_dir(project)
        find = best_of(lambda project=project: latest_session(project), repeat=21)
        old = best_of(lambda base=base: old_latest(base), repeat=21)
        listing = best_of(lambda project=project: list_sessions(project), repeat=7)
        load = best_of(lambda project=project: load_transcript(latest_session(project)), repeat=21)
        rows.append([str(n), f"{t * 1000:.0f}", f"{t / base_time:.2f}", f"{find * 1000:.2f}",
                     f"{old * 1000:.2f}", f"{listing * 1000:.2f}", f"{load * 1000:.2f}"])
    table(rows, ["sessions", "agent -c ms", "x one session", "latest (index) ms", "latest (stat all) ms",
                 "list all ms", "load ms"])


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 2000])
