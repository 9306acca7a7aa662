"""Start-up: `agent --version`, `agent --help` and time to the first model request in a one-shot --mock
run, each as a ratio to `python -c pass` and to `python -c "import anthropic"`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from common import best_of, header, table

PY = sys.executable


def run(args: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(args, capture_output=True, env=env, check=False)


def main() -> None:
    header("Start-up (median of 5 runs)")
    home = tempfile.mkdtemp(prefix="bench-home-")
    env = {**os.environ, "AGENT_HOME": home, "QUERY_MOCK": "1"}
    env.pop("ANTHROPIC_API_KEY", None)
    # One warm-up so .pyc files exist for every case.
    for args in (["-c", "import anthropic"], ["-m", "agent", "--help"], ["-m", "agent", "--mock", "echo hi"]):
        run([PY, *args], env)
    base = best_of(lambda: run([PY, "-c", "pass"]))
    sdk = best_of(lambda: run([PY, "-c", "import anthropic"]))
    cases = {
        "agent --version": [PY, "-m", "agent", "--version"],
        "agent --help": [PY, "-m", "agent", "--help"],
        "one-shot --mock (full task)": [PY, "-m", "agent", "--mock", "echo hi"],
    }
    rows = [["python -c pass", f"{base * 1000:.0f}", "1.00", f"{base / sdk:.2f}"],
            ["python -c 'import anthropic'", f"{sdk * 1000:.0f}", f"{sdk / base:.2f}", "1.00"]]
    for name, args in cases.items():
        t = best_of(lambda args=args: run(args, env))
        rows.append([name, f"{t * 1000:.0f}", f"{t / base:.2f}", f"{t / sdk:.2f}"])
    table(rows, ["command", "ms", "x python -c pass", "x import anthropic"])
    print("target: agent --help under 0.25x of the SDK import")


if __name__ == "__main__":
    main()
