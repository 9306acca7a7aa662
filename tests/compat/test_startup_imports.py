"""Start-up stays at the SDK's floor: what each kind of run imports (never wall time).

`--version`/`--help` import nothing heavy; a one-shot run imports neither the REPL's libraries
(prompt-toolkit, rich) nor MCP when no server is configured, nor httpx/jsonschema before the first tool call.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_KEY, base_env
from tests.fake_anthropic import FakeAnthropic


def imported(args: list[str], env: dict[str, str], cwd: Path) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "agent", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, proc.stderr[-2000:]
    return names


def test_version_and_help_import_nothing_heavy(agent_home: Path, workdir: Path) -> None:
    for args in (["--version"], ["--help"]):
        names = imported(args, base_env(agent_home), workdir)
        heavy = {n for n in names if n.split(".")[0] in ("anthropic", "rich", "prompt_toolkit", "mcp", "httpx",
                                                         "jsonschema", "pydantic", "typer", "click")}
        assert heavy == set(), (args, sorted(heavy)[:10])


def test_one_shot_imports_no_repl_library_and_no_mcp(agent_home: Path, workdir: Path) -> None:
    fake = FakeAnthropic()
    try:
        fake.text("ok")
        env = base_env(agent_home, ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=TEST_KEY)
        names = imported(["-p", "hi"], env, workdir)
    finally:
        fake.close()
    assert "anthropic" in names  # the run did reach the SDK
    tops = {n.split(".")[0] for n in names}
    assert not tops & {"rich", "prompt_toolkit", "mcp", "jsonschema", "typer", "click"}, sorted(
        tops & {"rich", "prompt_toolkit", "mcp", "jsonschema", "typer", "click"})
    assert "httpx" not in names  # the SDK uses its own client; ours loads only for WebFetch/WebSearch
