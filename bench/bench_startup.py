"""Start-up: `agent --version`, `agent --help`, a whole one-shot --mock task, and the time a real one-shot run
takes to reach the API (a loopback fake server records when the request arrives), each as a ratio to
`python -c pass` and to `python -c "import anthropic"`; Claude Code's native binary beside it when installed
(`claude` on PATH, or CLAUDE_BIN)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import ROOT, best_of, header, table

PY = sys.executable
KEY = "bench-key-sk-ant-0000000000"


def time_to_request(argv: list[str], env: dict[str, str], cwd: str, repeat: int = 5) -> float:
    """Median seconds from process start to the first POST /v1/messages at a loopback fake server."""
    from tests.fake_anthropic import FakeAnthropic

    fake = FakeAnthropic()
    times = []
    try:
        for _ in range(repeat):
            fake.text("ok")
            seen = len(fake.requests)
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, cwd=cwd, env={**env, "ANTHROPIC_BASE_URL": fake.url},
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while len(fake.requests) == seen and proc.poll() is None and time.perf_counter() - t0 < 60:
                time.sleep(0.001)
            times.append(time.perf_counter() - t0)
            proc.wait(timeout=60)
    finally:
        fake.steps.clear()
        fake.close()
    times.sort()
    return times[len(times) // 2]


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
        "agent mcp --help (Typer, loaded only for subcommands)": [PY, "-m", "agent", "mcp", "--help"],
        "one-shot --mock (full task)": [PY, "-m", "agent", "--mock", "echo hi"],
    }
    rows = [["python -c pass", f"{base * 1000:.0f}", "1.00", f"{base / sdk:.2f}"],
            ["python -c 'import anthropic'", f"{sdk * 1000:.0f}", f"{sdk / base:.2f}", "1.00"]]
    for name, args in cases.items():
        t = best_of(lambda args=args: run(args, env))
        rows.append([name, f"{t * 1000:.0f}", f"{t / base:.2f}", f"{t / sdk:.2f}"])
    real_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "QUERY_", "TRACE"))}
    real_env.update(AGENT_HOME=home, ANTHROPIC_API_KEY=KEY, PYTHONPATH=str(ROOT))
    project = tempfile.mkdtemp(prefix="bench-project-")
    t = time_to_request([PY, "-m", "agent", "-p", "hi"], real_env, project)
    rows.append(["agent -p: first request reaches the API", f"{t * 1000:.0f}", f"{t / base:.2f}", f"{t / sdk:.2f}"])
    claude = os.environ.get("CLAUDE_BIN") or shutil.which("claude")
    if claude:
        cc_env = {**real_env, "HOME": tempfile.mkdtemp(prefix="bench-cc-"), "IS_SANDBOX": "1",
                  "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        c = time_to_request([claude, "-p", "hi"], cc_env, project)
        rows.append(["claude -p (native): first request", f"{c * 1000:.0f}", f"{c / base:.2f}", f"{c / sdk:.2f}"])
        rows.append(["agent -p / claude -p", "", "", f"{t / c:.2f}"])
    table(rows, ["command", "ms", "x python -c pass", "x import anthropic"])
    print("targets: agent --version <= 0.15x, agent mcp --help <= 0.4x and the first request under 1.1x of "
          "the SDK import")


if __name__ == "__main__":
    main()
