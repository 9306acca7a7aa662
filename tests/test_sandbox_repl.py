"""The REPL with the sandbox on (a real terminal, a real bwrap): `!command` runs sandboxed, `/sandbox`
shows the state and turns it off for the session."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.test_repl_pty import PROMPT_READY, finish, spawn  # noqa: E402
from tools.sandbox import probe  # noqa: E402

pytestmark = pytest.mark.skipif(not probe(os.environ.get("PATH")).ok, reason="bubblewrap does not work here")


def test_bang_runs_in_the_sandbox_until_sandbox_off(cli) -> None:
    home = Path(tempfile.mkdtemp(prefix="agent-sbx-repl-", dir="/var/tmp"))  # outside the private /tmp
    try:
        child = spawn(cli, "--mock", with_fake=False, AGENT_SANDBOX="1", HOME=str(home))
        child.send(f"!echo in > made.txt; echo x > {home}/out.txt; echo rc=$?\r")
        child.expect_exact("rc=1")
        child.expect_exact(PROMPT_READY)
        assert (Path(cli.cwd) / "made.txt").read_text() == "in\n"
        assert not (home / "out.txt").exists()
        child.send("/sandbox\r")
        child.expect_exact("sandbox: on, auto-allow, no network")
        child.expect_exact(PROMPT_READY)
        child.send("/sandbox off\r")
        child.expect_exact("sandbox: off")
        child.expect_exact(PROMPT_READY)
        child.send(f"!echo x > {home}/out.txt; echo rc=$?\r")
        child.expect_exact("rc=0")
        child.expect_exact(PROMPT_READY)
        child.send("\x04")
        assert finish(child) == 0
        assert (home / "out.txt").read_text() == "x\n"
    finally:
        shutil.rmtree(home, ignore_errors=True)
