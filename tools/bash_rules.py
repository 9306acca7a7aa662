"""Permission rules on Bash command lines: which rules match which commands, and what an "always"
answer may store.

Allow rules match the words of each simple command; an unknown word never matches (unknown means ask).
Deny and ask rules match every command the line runs, by basename (`/bin/rm` is `rm`), behind wrappers and
inside `bash -c` strings (tools/shell_wrappers.py).
"""

from __future__ import annotations

import re
import shlex

from tools.bash_checks import Analysis, analyze
from tools.command_effects import in_table
from tools.shell_names import INTERPRETERS
from tools.shell_words import Word
from tools.shell_wrappers import WRAPPERS, Run

# Commands whose second word is a sub-command (`git status`), so "always" stops there.
SUBCOMMAND_TOOLS = frozenset({"git", "npm", "pnpm", "yarn", "cargo", "go", "kubectl", "pip", "pip3", "uv", "poetry",
                              "make", "dotnet", "gradle", "mvn", "brew", "apt", "apt-get", "gh", "terraform",
                              "helm", "systemctl", "rustup", "conda", "composer", "bundle", "rake", "swift"})


def _split_rule(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


def is_prefix_rule(content: str) -> bool:
    content = content.strip()
    return content.endswith(":*") or content.endswith(" *") or "*" in content


def words_match(content: str, words: list[str | None], *, unknown_tail: bool = False) -> bool:
    """One rule's content against one command's words (never the raw line).

    `git status:*` and `git status *`: these words first, anything after; a `*` elsewhere: a wildcard
    over the words joined by spaces; otherwise exactly these words. `unknown_tail`: unknown words after
    the prefix still match (deny and ask rules: `rm $X` is still `rm`)."""
    content = content.strip()
    if content.endswith(":*") or content.endswith(" *"):
        prefix = _split_rule(content[:-2])
        if not prefix or len(words) < len(prefix):
            return False
        if not unknown_tail and any(w is None for w in words):
            return False
        return all(w is not None and w == p for w, p in zip(words, prefix, strict=False))
    if any(w is None for w in words):
        return False
    if "*" in content:
        regex = ".*".join(re.escape(p) for p in " ".join(content.split()).split("*"))
        return re.fullmatch(regex, " ".join(w or "" for w in words), re.S) is not None
    exact = _split_rule(content)
    return exact is not None and exact == words


def rule_matches(content: str, cmd: object) -> bool:
    """Allow semantics on one simple command (`SimpleCommand` or `Run`)."""
    return words_match(content, list(cmd.words) if hasattr(cmd, "words") else [a.value for a in cmd.args])  # type: ignore[attr-defined]


def run_words(run: Run) -> list[str | None]:
    """A run's words with its name as a basename (`/bin/rm -rf x` -> `rm -rf x`)."""
    words = [a.value if not a.glob else None for a in run.args]
    if words:
        words[0] = run.name
    return words


def deny_matches(content: str, analysis: Analysis) -> bool:
    """A deny or ask rule matches when any command the line runs matches it."""
    return any(words_match(content, run_words(run), unknown_tail=True) for run in analysis.all_runs())


def _could_match(content: str, words: list[str | None]) -> bool:
    """Whether the rule would match for some value of the unknown words (`rm $X` against `rm -rf:*`)."""
    if None not in words:
        return False
    content = content.strip()
    prefix_form = content.endswith(":*") or content.endswith(" *")
    if "*" in content and not prefix_form:
        return True  # a wildcard in the middle: an unknown word may fill it
    wanted = _split_rule(content[:-2] if prefix_form else content)
    if wanted is None:
        return True
    for i, w in enumerate(words):
        if w is None:
            return True  # an unquoted unknown word may split into any words, or none
        if i >= len(wanted) or w != wanted[i]:
            return False
    return False


def deny_may_match(content: str, analysis: Analysis) -> bool:
    """Some command of the line may be the one a deny rule names, once its unknown words are known."""
    return any(_could_match(content, run_words(run)) for run in analysis.all_runs())


def _chain_allowed(chain: list[Run], contents: list[str], code: bool) -> bool:
    """One simple command is allowed when a rule matches it, or when it is a transparent wrapper
    (`timeout 5`, `nice`, `nohup`...) and rules match every command it runs."""
    def ok(run: Run) -> bool:
        words = [a.value for a in run.args]
        return any(words_match(c, words) for c in contents if not (code and is_prefix_rule(c)))
    if ok(chain[0]):
        return True
    inner = [r for r in chain[1:] if r.name not in WRAPPERS]
    return bool(inner) and all(r.transparent and ok(r) for r in inner)


def allowed_by_rules(analysis: Analysis, contents: list[str], harmless: set[int]) -> bool:
    """Every simple command allowed by some rule (a harmless `cd` counts), nothing unprovable; a line
    with an option that runs code is allowed only by an exact rule."""
    if analysis.problems or not analysis.runs:
        return False
    code = bool(analysis.runs_code)
    for chain in analysis.runs:
        if id(chain[0]) in harmless:
            continue
        if not _chain_allowed(chain, contents, code):
            return False
    return True


def always_rule_content(command: str, home: str | None = None) -> str | None:
    """What an "always" answer stores for a Bash command: never broader than the first word plus a
    sub-command (`git status:*`); an interpreter, a wrapper or a command whose options write files or run
    code gets the exact command; None when the line is compound or not provable (then "always" is not
    offered)."""
    analysis = analyze(command, home)
    parsed = analysis.parsed
    if analysis.problems or len(parsed.commands) != 1 or parsed.redirects:
        return None
    args = parsed.commands[0].args
    if not args or any(not a.known for a in args):
        return None
    static = [a.value or "" for a in args]
    exact = " ".join(shlex.quote(w) for w in static)
    first = static[0]
    writes = any(u.file.access != "read" for u in analysis.uses)
    if analysis.runs_code or writes or first in INTERPRETERS or "/" in first or in_table(static) \
            or len(analysis.runs[0]) > 1:
        return exact
    if first in SUBCOMMAND_TOOLS:
        if len(static) > 1 and re.fullmatch(r"[A-Za-z][\w.-]*", static[1]):
            return f"{shlex.quote(first)} {shlex.quote(static[1])}:*"
        return exact  # `git -C x status`: no safe prefix
    return f"{shlex.quote(first)}:*"


__all__ = ["SUBCOMMAND_TOOLS", "Word", "allowed_by_rules", "always_rule_content", "deny_matches", "deny_may_match",
           "rule_matches",
           "words_match"]
