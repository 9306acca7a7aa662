"""Benchmark the codebase tools against the plain programs they wrap (not a test; run by hand).

    .venv/bin/python bench/bench_tools.py [--files 20000] [--mb 200]

Generates a tree under /tmp (kept between runs), then times Grep and Glob against plain `rg` with the same
arguments, Read of a 250 KB file, Edit on a 200 KB file, and Bash against subprocess.run; prints ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import best_of, header  # noqa: E402
from tools.base import SessionState, ToolContext  # noqa: E402
from tools.bash import BashTool  # noqa: E402
from tools.edit import EditTool  # noqa: E402
from tools.glob import GlobTool  # noqa: E402
from tools.grep import GrepTool  # noqa: E402
from tools.read import ReadTool  # noqa: E402
from tools.ripgrep import rg_path  # noqa: E402

TREE = Path("/tmp/agent-bench-tree")


def make_tree(files: int, mb: int) -> None:
    marker = TREE / f".generated-{files}-{mb}"
    if marker.exists():
        return
    TREE.mkdir(parents=True, exist_ok=True)
    per_file = max(1, mb * 1024 * 1024 // files)
    line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    body = (line * (per_file // len(line) + 1))[:per_file]
    for i in range(files):
        d = TREE / f"d{i % 200:03d}" / f"s{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        extra = f"needle_{i}\n" if i % 97 == 0 else ""
        (d / f"f{i:05d}.{'py' if i % 3 else 'txt'}").write_text(body + extra)
    marker.write_text("")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    header("Tools against the plain programs they wrap")
    make_tree(args.files, args.mb)
    ctx = ToolContext(session=SessionState(cwd=TREE), project_root=TREE)
    rg = rg_path()
    loop = asyncio.new_event_loop()

    def call(tool, inp):
        return lambda: loop.run_until_complete(tool.call(inp, ctx.for_call("bench")))

    rows = []
    base = [rg, "--no-config", "--hidden", "--max-columns", "500", "--glob", "!.git"]
    plain = best_of(lambda: subprocess.run([*base, "-l", "-e", "needle_"], cwd=TREE, capture_output=True))
    tool = best_of(call(GrepTool(), {"pattern": "needle_"}))
    rows.append(("Grep files_with_matches", tool, plain))
    plain = best_of(lambda: subprocess.run([*base, "-n", "-e", "needle_"], cwd=TREE, capture_output=True))
    tool = best_of(call(GrepTool(), {"pattern": "needle_", "output_mode": "content"}))
    rows.append(("Grep content", tool, plain))
    plain = best_of(lambda: subprocess.run([rg, "--files", "--hidden", "--glob", "*.txt"], cwd=TREE, capture_output=True))
    tool = best_of(call(GlobTool(), {"pattern": "**/*.txt"}))
    rows.append(("Glob **/*.txt", tool, plain))
    # The same work in plain rg: Glob lists newest first, so rg sorting by mtime is the like-for-like baseline.
    plain = best_of(lambda: subprocess.run([rg, "--files", "--hidden", "--glob", "*.txt", "--sortr", "modified"],
                                         cwd=TREE, capture_output=True))
    rows.append(("Glob vs rg --sortr modified", tool, plain))
    plain = best_of(lambda: subprocess.run(["bash", "-c", "echo hi"], capture_output=True))
    tool = best_of(call(BashTool(), {"command": "echo hi"}))
    rows.append(("Bash echo", tool, plain))
    print(f"tree: {args.files} files, ~{args.mb} MB under {TREE}")
    print(f"{'operation':28} {'tool ms':>9} {'plain ms':>9} {'ratio':>6}")
    for name, t, p in rows:
        print(f"{name:28} {t * 1000:9.1f} {p * 1000:9.1f} {t / p:6.2f}")

    f = Path("/tmp/agent-bench-read.txt")
    f.write_text("".join(f"line {i} " + "x" * 40 + "\n" for i in range(5000)))  # ~250 KB
    reader = ReadTool()

    def read_once():
        ctx.session.read_state.clear()
        loop.run_until_complete(reader.call({"file_path": str(f), "offset": 1, "limit": 2000}, ctx.for_call("r")))

    print(f"Read 250 KB file (2000 lines): {best_of(read_once) * 1000:.2f} ms")
    g = Path("/tmp/agent-bench-edit.txt")
    editor = EditTool()

    def edit_once():
        g.write_text("".join(f"row {i} " + "y" * 30 + "\n" for i in range(5500)))  # ~200 KB
        loop.run_until_complete(reader.call({"file_path": str(g), "offset": 1, "limit": 1}, ctx.for_call("r2")))
        t = time.perf_counter()
        loop.run_until_complete(editor.call({"file_path": str(g), "old_string": "row 4000 ", "new_string": "ROW 4000 "}, ctx.for_call("e")))
        return time.perf_counter() - t

    print(f"Edit 200 KB file: {statistics.median(edit_once() for _ in range(5)) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
