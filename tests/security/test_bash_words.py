"""Words as bash sees them: continuations, braces, quoted newlines, ANSI-C quoting and tilde are computed
the way bash would; what cannot be computed (variables, substitutions, patterns whose matches matter,
`~-`, `~+`, an unknown `~user`) asks. `cd` is harmless only with one literal directory inside the project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.bash_gate import PREFIX_RULES, decide, make_project
from tools.base import SessionState, ToolContext
from tools.bash_parse import parse_command
from tools.glob import GlobTool
from tools.grep import GrepTool
from tools.permissions import PermissionGate
from tools.shell_words import Piece, expand, remove_continuations


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return make_project(tmp_path)


def values(command: str) -> list[list[str | None]]:
    return [c.words for c in parse_command(command).commands]


@pytest.mark.parametrize("command,expected", [
    ("ec\\\nho a\\\nb", [["echo", "ab"]]),
    ('echo "a\\\nb"', [["echo", "ab"]]),
    ("echo 'a\\\nb'", [["echo", "a\\\nb"]]),  # single quotes keep it
    ("echo $'a\\x41\\101\\n'", [["echo", "aAA\n"]]),
    ("echo .gi{t..t}/h{a,b}", [["echo", ".git/ha", ".git/hb"]]),
    ("echo {a,'b,c'}x", [["echo", "ax", "b,cx"]]),
    ('echo "{a,b}"', [["echo", "{a,b}"]]),
    ("echo {01..03}", [["echo", "01", "02", "03"]]),
    ("echo {a..c..2}", [["echo", "a", "c"]]),
    ("echo {1..100000}", [["echo", None]]),  # too many words: unknown
    ("echo ${x}", [["echo", None]]),
    ("echo a$(true)b", [["true"], ["echo", None]]),
    ("echo envir\"\"on", [["echo", "environ"]]),
    ("echo ~root/x \\~ '~' ~-/x ~+ ~nosuchuser1234/x", [["echo", "/root/x", "~", "~", None, None, None]]),
    ("echo x > f y z", [["echo", "x", "y", "z"]]),  # words after a redirection target belong to the command
])
def test_word_values(command: str, expected: list[list[str | None]]) -> None:
    assert values(command) == expected


def test_continuations_are_removed_where_bash_removes_them() -> None:
    assert remove_continuations("a\\\nb 'c\\\nd' \"e\\\nf\" # g\\\nh") == "ab 'c\\\nd' \"ef\" # g\\\nh"
    assert remove_continuations("a\\\\\nb") == "a\\\\\nb"  # an escaped backslash, then a real newline


def test_unclosed_bracket_is_literal_and_closed_one_is_a_pattern() -> None:
    assert expand([Piece("a[2J")])[0].glob is False
    assert expand([Piece("envir?n")])[0].glob and expand([Piece("a[bc]")])[0].glob
    assert expand([Piece("*", quoted=True)])[0].glob is False


# -- the gate ------------------------------------------------------------------------------------------

# Lines that write outside the project or a protected path, or read a secret, hidden by word forms.
# `{P}` is the project, `{O}` a directory outside it.
HIDDEN = [
    'cd ";touch X;#" 2>> {P}/.\\\n./home/.bashrc',
    "cd sub 2>> {P}/.\\\n./x",
    "echo x >> {P}/.\\\n./x",
    "echo x > .gi{{t..t}}/hooks/pre-commit",
    "echo x > .gi{{t,t}}/hooks/pre-commit",
    "echo x > '.git'\\\n/hooks/pre-commit",
    "echo x > \".claude/settings\\\n.json\"",
    "echo x > .cl\\\naude/settings.json",
    "echo x > $'.git/hooks/pre-commit'",
    "echo x > $'\\x2egit/hooks/pre-commit'",
    "echo x > $'\\056git/hooks/pre-commit'",
    "echo x > \"$HOME/.bashrc\"",
    "echo x > ~/.bashrc",
    "echo x > ~root/.bashrc",
    "echo x > ~-/x",
    "echo x > ~+/x",
    "echo x > $(echo /tmp/x)",
    "echo x > `echo /tmp/x`",
    "echo x > /tmp/*",
    "echo x > {O}/{{a,b}}",
    "echo x > escape/x",
    "echo x>escape/x",
    "cp README.md {P}/.\\\n./x",
    "cp README.md .gi{{t..t}}/hooks/",
    "cat /proc/$PPID/environ",
    "cat /proc/self/envir\"\"on",
    "cat /proc/self/envir?n",
    "cat /pro?/self/environ",
    "cat /proc/*/environ",
    "cat $'/proc/self/environ'",
    "cat /proc/self/environ",
    "cat ~/.ssh/id_rsa",
    "ls {O}",
]


@pytest.mark.parametrize("template", HIDDEN)
async def test_hidden_targets_never_pass_prefix_rules(template: str, ctx: ToolContext) -> None:
    command = template.format(P=ctx.project_root, O=ctx.project_root.parent / "elsewhere")
    for mode in ("default", "acceptEdits"):
        outcome, request = await decide(command, ctx, PREFIX_RULES, mode=mode)
        assert outcome != "allow", (mode, command)
        assert request is None or request.always_rule is None or ":*" not in request.always_rule, command


@pytest.mark.parametrize("command", [
    "cd sub", "cd sub/deep", "cd ./sub", "cd sub && ls", "cd 'sub'", "cd sub/../sub",
])
async def test_cd_into_the_project_is_harmless(command: str, ctx: ToolContext) -> None:
    assert (await decide(command, ctx, ["Bash(ls:*)"]))[0] == "allow"


@pytest.mark.parametrize("command", [
    "cd", "cd -", "cd -L sub", "cd -P sub", "cd -- sub", "cd ~", "cd ~-", "cd ~+", "cd $D", "cd {sub,..}",
    "cd ..", "cd /", "cd escape", "cd nonexistent", "cd s*", "cd sub sub", "pushd sub", "popd", "builtin cd sub",
    "command cd sub", "cd $(pwd)",
])
async def test_cd_in_any_other_form_asks(command: str, ctx: ToolContext) -> None:
    outcome, _ = await decide(command, ctx, ["Bash(ls:*)"])
    assert outcome == "ask", command


async def test_cd_tilde_minus_never_raises(ctx: ToolContext) -> None:
    for command in ("cd ~-", "cd ~- && ls", "echo > ~-/x", "ls ~+/x"):
        for mode in ("default", "acceptEdits", "plan", "bypassPermissions"):
            await decide(command, ctx, ["Bash(cd:*)", "Bash(ls:*)"], mode=mode)


async def test_chained_cd_is_followed_from_every_place(ctx: ToolContext) -> None:
    """From project/sub/deep, `cd ../.. && cd ..` leaves the project: the second cd starts from the first."""
    ctx.session.cwd = ctx.project_root / "sub" / "deep"
    assert (await decide("cd ../.. && cd .. && ls", ctx, ["Bash(ls:*)"]))[0] == "ask"
    assert (await decide("cd ../.. && cd .. ; echo x > y", ctx, ["Bash(echo:*)", "Bash(cd:*)"]))[0] == "ask"
    assert (await decide("cd ../.. && ls", ctx, ["Bash(ls:*)"]))[0] == "allow"


async def test_unknown_words_ask_under_prefix_rules(ctx: ToolContext) -> None:
    for command in ('echo "$HOME"', "cat $F", "ls $(pwd)", "git status $X", "echo $((1+2))", "echo ~-"):
        assert (await decide(command, ctx, PREFIX_RULES))[0] == "ask", command


async def test_search_tools_stay_in_the_project_after_bash_left_it(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "elsewhere" / "secret.txt").write_text("needle outside\n")
    (ctx.project_root / "inside.txt").write_text("needle inside\n")
    ctx.session.cwd = tmp_path / "elsewhere"  # where an allowed `cd` left Bash
    grep = await GrepTool().call({"pattern": "needle"}, ctx)
    assert "inside.txt" in str(grep.content) and "secret" not in str(grep.content)
    glob = await GlobTool().call({"pattern": "*.txt"}, ctx)
    assert "inside.txt" in str(glob.content) and "secret" not in str(glob.content)
    gate = PermissionGate(home=tmp_path / "agent-home")
    verdict = await gate.authorize(GrepTool(), {"pattern": "needle", "path": "secret.txt"}, ctx)
    assert not verdict.allowed  # a relative path still resolves where Bash is, outside: it asks


async def test_search_tools_follow_a_cd_inside_the_project(ctx: ToolContext) -> None:
    (ctx.project_root / "sub" / "a.txt").write_text("needle\n")
    (ctx.project_root / "b.txt").write_text("needle\n")
    ctx.session.cwd = ctx.project_root / "sub"
    grep = await GrepTool().call({"pattern": "needle"}, ctx)
    assert "a.txt" in str(grep.content) and "b.txt" not in str(grep.content)


def test_parse_of_hostile_text_never_raises() -> None:
    for text in ["\\", "'", "$'\\", "{", "{a,", "~", "~-", "$((", "${", "\x00", "a\\\n", "\\\n" * 50,
                 "{" * 200 + "a,b" + "}" * 200, "echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}", "cd ~-",
                 "echo " + "$(" * 300 + ")" * 300]:
        parse_command(text)


def test_session_cwd_outside_does_not_break_a_fresh_context(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    ctx = ToolContext(session=SessionState(cwd=tmp_path), project_root=project)
    assert ctx.search_dir() == project


async def test_a_broken_analysis_fails_closed(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside the Bash analysis or the path checks is a question, never a crash or an allow."""
    import tools.bash_checks as checks

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(checks, "_analyze", broken)
    outcome, request = await decide("ls unusual-line-for-the-cache-1", ctx, ["Bash(ls:*)"])
    assert outcome == "ask" and request is not None and request.always_rule is None
    monkeypatch.undo()
    monkeypatch.setattr(checks, "_reasons", broken)
    assert (await decide("ls unusual-line-for-the-cache-2", ctx, ["Bash(ls:*)"]))[0] == "ask"
    monkeypatch.setattr(checks, "places", broken)
    assert (await decide("cd sub", ctx, []))[0] == "ask"


async def test_substitutions_in_here_documents_are_commands(ctx: ToolContext) -> None:
    assert (await decide("cat <<EOF > notes.txt\n$(touch X)\nEOF", ctx, ["Bash(cat:*)"]))[0] == "ask"
    assert (await decide("cat <<'EOF' > notes.txt\n$(touch X)\nEOF", ctx, ["Bash(cat:*)"]))[0] == "allow"
