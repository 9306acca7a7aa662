"""Shared fixtures: an isolated agent home, the fake Anthropic server, and the real CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parent.parent
TEST_KEY = "test-key-sk-ant-0123456789secret"
# Every outbound request of every test (in-process and CLI subprocesses, which inherit the environment)
# is checked: an invalid request raises instead of being repaired (services/request_check.py).
os.environ.setdefault("AGENT_STRICT_REQUESTS", "1")
# Every agent the tests start (CLI, SDK, pty) runs Bash without the sandbox unless the test says otherwise:
# the gate's tests see Bash as it is; tests/security/test_sandbox_cli.py and tests/test_sandbox_repl.py
# remove or override it to run the default, Bash in bubblewrap.
os.environ.setdefault("AGENT_SANDBOX", "0")


@pytest.fixture
def agent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "agent-home"
    home.mkdir()
    monkeypatch.setenv("AGENT_HOME", str(home))
    return home


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()
    try:
        yield fake
    finally:
        fake.close()
    fake.check()


@pytest.fixture
def fake_env(fake_anthropic: FakeAnthropic, agent_home: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    """In-process: the SDK talks to the fake server with a test key."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("API_MAX_RETRIES", "2")
    return fake_anthropic


def base_env(agent_home: Path, **extra: str | None) -> dict[str, str]:
    """A clean environment for the CLI: no ANTHROPIC_* from the outside, no TRACE, our home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "API_", "TRACE", "QUERY_"))}
    # pytest-xdist's workers set COLUMNS/LINES (80x24): a terminal test gets its own pty's size instead.
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    env["AGENT_HOME"] = str(agent_home)
    env["PYTHONPATH"] = str(ROOT)
    env["NO_COLOR"] = "1"
    env["AGENT_ECHO_TOOL"] = "1"  # the test-only Echo tool the CLI scenarios call
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    signalled: bool = False


class CliRunner:
    def __init__(self, agent_home: Path, cwd: Path, fake: FakeAnthropic | None):
        self.agent_home = agent_home
        self.cwd = cwd
        self.fake = fake

    def env(self, with_fake: bool = True, **extra: str | None) -> dict[str, str]:
        defaults: dict[str, str | None] = {}
        if with_fake and self.fake is not None:
            defaults = {
                "ANTHROPIC_BASE_URL": self.fake.url,
                "ANTHROPIC_API_KEY": TEST_KEY,
                "API_MAX_RETRIES": "1",
                "API_TIMEOUT_MS": "5000",
            }
        defaults.update(extra)
        return base_env(self.agent_home, **defaults)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agent", *args]

    def __call__(self, *args: str, input: str | None = None, with_fake: bool = True, timeout: float = 30,
                 **env: str | None) -> CliResult:
        # A hang is a failure, but a busy 2-core machine is not a hang: the limit is 4x what was asked.
        limit = max(timeout, 30) * 4
        try:
            proc = subprocess.run(
                self.argv(*args),
                cwd=self.cwd,
                env=self.env(with_fake, **env),
                input=input if input is not None else "",
                capture_output=True,
                text=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired as exc:
            tail = (exc.stderr or b"")[-1500:]
            raise AssertionError(f"`agent {' '.join(args)}` hung for {limit:.0f} s; stderr ends: {tail!r}") from None
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    def popen(self, *args: str, with_fake: bool = True, stdin_pipe: bool = False,
              **env: str | None) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.cwd,
            env=self.env(with_fake, **env),
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start(self, *args: str, input: str = "", **env: str | None) -> RunningCli:
        """Start the CLI and return at once: several runs can import the (slow) SDK in parallel."""
        return RunningCli(self.popen(*args, stdin_pipe=True, **env), input)


class RunningCli:
    def __init__(self, proc: subprocess.Popen, input: str):
        self.proc = proc
        self.input = input
        self.signalled = False
        self._result: CliResult | None = None

    def result(self, timeout: float = 120) -> CliResult:
        if self._result is None:
            timed_out = False
            try:
                out, err = self.proc.communicate(self.input, timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                self.proc.kill()
                out, err = self.proc.communicate()
            self._result = CliResult(self.proc.returncode, out, err, timed_out, self.signalled)
        return self._result


@pytest.fixture
def cli(agent_home: Path, workdir: Path, fake_anthropic: FakeAnthropic) -> CliRunner:
    """Runs `python -m agent ...` in `workdir` against the fake server (AGENT_HOME isolated)."""
    return CliRunner(agent_home, workdir, fake_anthropic)


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder for in-process engines, with its own agent home."""
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "home"))
    p = tmp_path / "proj"
    p.mkdir()
    return p
