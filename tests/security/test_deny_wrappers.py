"""Deny rules on what runs: the basename, behind every wrapper with its real option grammar, inside
`bash -c` strings, after `coproc`/`exec`/`command`/`builtin`; an unknown command word under a deny rule
asks (in every mode, bypass included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.bash_gate import decide, make_project
from tools.base import ToolContext


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_project(tmp_path)


DENIED = [
    "rm f", "/bin/rm f", "/usr/bin/rm -rf x", "./rm f", "r\\m f", "'rm' f", "r''m f", "$'rm' f", "r\\\nm f",
    "coproc rm f", "exec rm f", "command rm f", "command -p rm f", "builtin rm f", "time rm f", "time -p rm f",
    "nohup rm f", "nohup rm f &", "env rm f", "env -u X rm f", "env -i rm f", "env -u X -i /bin/rm f",
    "env -- rm f", "env -C /tmp rm f", "env --unset=X rm f", "env -S 'rm f'", "env LANG=C rm f",
    "timeout 5 rm f", "timeout -s KILL 5 rm f", "timeout --signal=KILL -k 1 5 rm f", "timeout --preserve-status 5s rm f",
    "nice rm f", "nice -n 5 rm f", "nice -10 rm f", "nice --adjustment=5 rm f", "stdbuf -oL rm f",
    "stdbuf -o 0 -e 0 rm f", "sudo rm f", "sudo -u root rm f", "sudo -E -H rm f", "sudo -- rm f", "doas rm f",
    "xargs rm", "xargs -0 rm", "xargs -n 1 -P 4 rm", "xargs -I{} rm {}", "find . -exec rm {} \\;",
    "find . -execdir /bin/rm {} +", "find . -ok rm {} \\;", "bash -c 'rm f'", "sh -c 'rm f'", "zsh -c 'rm f'",
    "bash -xc 'rm f'", "bash -o pipefail -c 'rm f'", "bash --norc -c 'rm f'", "dash -c \"rm f\"",
    "bash -c 'bash -c \"rm f\"'", "sh -c 'ls; rm f'", "sh -c 'echo $(rm f)'", "timeout 5 bash -c 'nice rm f'",
    "ls && rm f", "ls | xargs rm", "echo $(rm f)", "(rm f)", "{ rm f; }", "if true; then rm f; fi",
    "ionice -c 3 rm f", "setsid rm f", "chrt 5 rm f", "taskset 1 rm f", "flock /tmp/l rm f", "su -c 'rm f'",
    "unbuffer rm f", "watch rm f", "watch -n 1 'rm f'", "nice env timeout 5 command rm f", "eval 'rm f'",
    "eval rm f", "command eval 'ls; rm f'", "trap 'rm f' EXIT", "trap -- 'rm f' EXIT", r"bash -c 'eval rm\ f'",
]


@pytest.mark.parametrize("command", DENIED)
async def test_deny_rule_reaches_the_command(command: str, ctx: ToolContext) -> None:
    for mode in ("default", "bypassPermissions"):
        outcome, _ = await decide(command, ctx, ["Bash"], mode=mode, deny=["Bash(rm:*)"])
        assert outcome == "deny", (mode, command)


UNKNOWN_NAMES = [
    "$(echo rm) f", "`echo rm` f", "$CMD f", "${CMD} f", "\"$X\" f", "r?m f", "/bin/r* f", "env $C f",
    "timeout 5 $C f", "xargs $C", "bash -c \"$S\"", "sh -c $S", "env --frobnicate rm f", "nice -x rm f",
    "find . -exec $C {} \\;", "env -S \"$S\"", "parallel rm ::: a", "eval \"$X\"", "trap \"$X\" EXIT",
    "echo 'rm f' | sh", "cat <<EOF | bash\nrm f\nEOF", "bash -s < cmds.txt", "sh - < cmds.txt",
    "coproc X { rm f; }", "time { rm f; }", "(( a[$(rm f)] ))", "let 'a[$(rm f)]'", "f() { rm f; }; f",
    "xargs -I{} sh -c 'echo {}'", "xargs -i sh -c 'echo {}'", "xargs --replace=Q sh -c 'echo Q'",
    "git -c core.pager='rm f' -p log", "rg --pre ./evil x", "ssh -o ProxyCommand='rm f' h",
]


@pytest.mark.parametrize("command", UNKNOWN_NAMES)
async def test_unknown_command_under_a_deny_rule_asks(command: str, ctx: ToolContext) -> None:
    for mode in ("default", "acceptEdits", "bypassPermissions"):
        outcome, request = await decide(command, ctx, ["Bash"], mode=mode, deny=["Bash(rm:*)"])
        assert outcome in ("ask", "deny"), (mode, command)
        if outcome == "ask":
            assert request is not None and request.always_rule is None


@pytest.mark.parametrize("command", ["rm $X", "rm \"$X\"", "$R -rf x", "rm $(echo -rf) x", "timeout 5 rm $F"])
async def test_unknown_words_where_a_deny_rule_looks_ask(command: str, ctx: ToolContext) -> None:
    outcome, _ = await decide(command, ctx, ["Bash"], mode="bypassPermissions", deny=["Bash(rm -rf:*)"])
    assert outcome == "ask", command
    assert (await decide("echo x $X", ctx, ["Bash"], deny=["Bash(echo -n:*)"]))[0] == "allow"
    assert (await decide("echo $X", ctx, ["Bash"], deny=["Bash(echo -n:*)"]))[0] == "ask"


async def test_unknown_command_without_deny_rules_follows_the_mode(ctx: ToolContext) -> None:
    assert (await decide("$(echo ls)", ctx, [], mode="bypassPermissions"))[0] == "allow"
    assert (await decide("$(echo ls)", ctx, ["Bash(ls:*)"]))[0] == "ask"


@pytest.mark.parametrize("command", [
    "ls rm", "echo rm", "grep rm f", "command -v rm", "git rm --cached f", "rmdir x", "npm run rm",
])
async def test_rm_as_a_word_is_not_rm(command: str, ctx: ToolContext) -> None:
    assert (await decide(command, ctx, ["Bash"], deny=["Bash(rm:*)"]))[0] == "allow", command


async def test_ask_rules_look_behind_wrappers_too(ctx: ToolContext) -> None:
    from tools.bash import BashTool
    from tools.permissions import PermissionGate

    gate = PermissionGate(allowed_tools=["Bash"], ask_tools=["Bash(git push:*)"])
    for command in ("timeout 60 git push", "bash -c 'git push'", "/usr/bin/git push origin"):
        verdict = await gate.authorize(BashTool(), {"command": command}, ctx)
        assert not verdict.allowed, command


async def test_wrapped_allow_needs_a_transparent_wrapper(ctx: ToolContext) -> None:
    rules = ["Bash(git status:*)"]
    assert (await decide("timeout 5 git status", ctx, rules))[0] == "allow"
    assert (await decide("nohup git status", ctx, rules))[0] == "allow"
    for command in ("sudo git status", "bash -c 'git status'", "env PATH=. git status", "xargs git status",
                    "env -C /tmp git status", "timeout 5 bash -c 'git status'"):
        assert (await decide(command, ctx, rules))[0] == "ask", command
