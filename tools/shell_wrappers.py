"""What a simple command runs: itself, the command behind each wrapper (read with the wrapper's real
option grammar: `env -u X rm`, `timeout -s KILL 5 rm`, `nice -n 5 rm`), the commands inside a
`bash -c` string (parsed again, a few levels deep), `find -exec` and `xargs`.

A wrapper option this module does not know, or a command word whose value is unknown, gives a `Run`
whose name is unknown: a deny rule in force then makes the line ask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tools.shell_names import SAFE_ASSIGNMENTS, SHELLS
from tools.shell_words import UNKNOWN, Word

MAX_DEPTH = 8  # wrappers and `bash -c "bash -c ..."` nesting looked into; deeper is unknown


@dataclass(frozen=True)
class Grammar:
    flags: str = ""  # short options without an argument
    with_arg: str = ""  # short options that take one
    long_flags: frozenset[str] = frozenset()
    long_with_arg: frozenset[str] = frozenset()
    positionals: int = 0  # words before the command (timeout's duration)
    assignments: bool = False  # NAME=VALUE words before the command (env, sudo)
    numeric: bool = False  # `nice -10`
    transparent: bool = True  # an allow rule on the wrapped command covers the line
    no_command: str = ""  # short options after which nothing runs (`command -v`)


def _g(**kw: object) -> Grammar:
    for key in ("long_flags", "long_with_arg"):
        if key in kw:
            kw[key] = frozenset(str(kw[key]).split())
    return Grammar(**kw)  # type: ignore[arg-type]


WRAPPERS: dict[str, Grammar] = {
    "env": _g(flags="i0v", with_arg="uCS", assignments=True, transparent=False,
              long_flags="--ignore-environment --null --debug --block-signal --default-signal --ignore-signal",
              long_with_arg="--unset --chdir --split-string"),
    "sudo": _g(flags="AbEHiKklnPSsVB", with_arg="CDghpRrTtUu", assignments=True, transparent=False,
               long_flags="--askpass --background --preserve-env --set-home --login --non-interactive "
                          "--preserve-groups --shell --stdin --reset-timestamp --remove-timestamp --bell",
               long_with_arg="--close-from --chdir --group --host --prompt --role --type --other-user "
                             "--command-timeout --user --chroot"),
    "doas": _g(flags="nsL", with_arg="uC", transparent=False),
    "timeout": _g(flags="v", with_arg="sk", positionals=1, long_flags="--preserve-status --foreground --verbose",
                  long_with_arg="--signal --kill-after"),
    "nice": _g(with_arg="n", numeric=True, long_with_arg="--adjustment"),
    "nohup": _g(),
    "stdbuf": _g(with_arg="ioe", long_with_arg="--input --output --error"),
    "ionice": _g(flags="t", with_arg="cn", no_command="pPu", long_with_arg="--class --classdata"),
    "chrt": _g(flags="abdfiorRv", with_arg="TPD", positionals=1, no_command="p", transparent=False),
    "setsid": _g(flags="cfw"),
    "time": _g(flags="pvaq", with_arg="of", long_flags="--portability --verbose --append --quiet",
               long_with_arg="--output --format"),
    "command": _g(flags="p", no_command="vV"),
    "builtin": _g(),
    "exec": _g(flags="cl", with_arg="a", transparent=False),
    "coproc": _g(),
    "xargs": _g(flags="0oprtxeil", with_arg="aEdILnPs", transparent=False,
                long_flags="--null --open-tty --interactive --no-run-if-empty --verbose --exit --show-limits",
                long_with_arg="--arg-file --delimiter --max-lines --max-args --max-procs --max-chars --replace "
                              "--eof --process-slot-var"),
    "strace": _g(flags="cfhiqrtTvVxyzACDFkZwd", with_arg="abeEIoOpPsSuUX", transparent=False),
    "taskset": _g(flags="ac", positionals=1, transparent=False),
    "chroot": _g(positionals=1, long_with_arg="--userspec --groups", transparent=False),
    "unbuffer": _g(flags="p"),
    "watch": _g(flags="bcdeghtxpr", with_arg="nqs", transparent=False),
    "flock": _g(flags="sxnuoFv", with_arg="wE", positionals=1, transparent=False),
}
# Commands that run their words as a shell command line.
_TEXT_AS_CODE = frozenset({"eval", "trap", "watch"})
# Commands that run commands the line does not show (`parallel rm ::: a`): under a deny rule, they ask.
RUNS_UNSEEN = frozenset({"parallel", "fc", "enable", "sem"})
# Options whose argument is a command line for `sh -c`.
_SHELL_STRING_OPTION = {"su": ("-c", "--command"), "script": ("-c", "--command"), "flock": ("-c", "--command"),
                        "runuser": ("-c", "--command"), "sg": ("-c",)}


@dataclass
class Run:
    args: list[Word]  # the command as it runs, name first
    via: list[str] = field(default_factory=list)  # the wrappers in front of it, outermost first
    transparent: bool = True  # every wrapper in front leaves an allow rule on this command meaningful
    cwd_moved: bool = False  # a wrapper changed directory (`env -C`): relative paths are unknown

    @property
    def name(self) -> str | None:
        """The command's basename (`/bin/rm` -> `rm`), None when unknown or a pattern."""
        if not self.args or self.args[0].value is None or self.args[0].glob:
            return None
        return self.args[0].value.rsplit("/", 1)[-1] or None


def basename(word: Word) -> str | None:
    if word.value is None or word.glob:
        return None
    return word.value.rsplit("/", 1)[-1]


def runs(args: list[Word], home: str | None = None, depth: int = 0) -> tuple[list[Run], list[str]]:
    """Every command `args` runs (itself first), and what could not be proved on the way."""
    out = [Run(list(args))]
    problems: list[str] = []
    if depth > MAX_DEPTH:
        return [Run([UNKNOWN], ["(nesting)"], False)], ["commands nested too deep to follow"]
    name = basename(args[0]) if args else None
    inner: list[list[Word]] = []
    transparent = False
    moved = False
    if name in WRAPPERS and name != "watch":
        start = _command_start(args, WRAPPERS[name])
        transparent = WRAPPERS[name].transparent
        moved = any(a.value is not None and a.value.startswith(("-C", "--chdir", "-D")) for a in args[1:start or 1])
        if start is None:
            inner = [[UNKNOWN]]
        elif start < len(args):
            inner = [_xargs_words(args, start) if name == "xargs" else args[start:]]
        if inner and inner[0] and inner[0][0].value in _KEYWORDS:
            inner = [[UNKNOWN]]  # `time { rm f; }`, `coproc X { rm f; }`: a compound command the grammar misread
        if name == "env":
            inner += _split_strings(args, home, problems, depth)
        problems += _unsafe_assignments(args[1:start] if start else args[1:])
    elif name in SHELLS or name in _SHELL_STRING_OPTION:
        inner = _shell_strings(args, name, home, problems, depth)
    elif name in _TEXT_AS_CODE:
        inner = _text_as_code(args, name, home, problems, depth)
    elif name in RUNS_UNSEEN:
        inner = [[UNKNOWN]]
    elif name == "find":
        inner = _find_exec(args)
    for words in inner:
        for run in runs(words, home, depth + 1)[0] if words else []:
            run.via.insert(0, name or "?")
            run.transparent = run.transparent and transparent
            run.cwd_moved = run.cwd_moved or moved
            out.append(run)
    return out, problems


def _text_as_code(args: list[Word], name: str | None, home: str | None, problems: list[str],
                  depth: int) -> list[list[Word]]:
    """`eval a b` and `watch a b` run their words joined by spaces; `trap 'cmd' SIG` runs its first word."""
    words = args[1:]
    if name == "trap":
        words = [w for w in words if w.value != "--"][:1]
        if words and words[0].value is not None and words[0].value.startswith("-"):
            return []  # `trap -p`, `trap -l`
    elif name == "watch":
        start = _command_start(args, WRAPPERS["watch"])
        words = args[start:] if start is not None else [UNKNOWN]
    if any(w.value is None or w.glob for w in words):
        return [[UNKNOWN]]
    return _parse_inner(" ".join(w.value or "" for w in words), home, problems, depth) if words else []


_KEYWORDS = frozenset({"{", "(", "if", "while", "until", "for", "case", "select", "function", "!", "[[", "time"})


def _xargs_words(args: list[Word], start: int) -> list[Word]:
    """The command xargs runs: words holding the replace string (`-I {}`) come from input, and input
    words are added at the end."""
    replace = None
    for i, a in enumerate(args[1:start], start=1):
        v = a.value or ""
        if v == "-I" and i + 1 < start:
            replace = args[i + 1].value
        elif v.startswith("-I") and len(v) > 2:
            replace = v[2:]
        elif v.startswith("-i") or v == "--replace":
            replace = v[2:] or "{}"
        elif v.startswith("--replace="):
            replace = v.split("=", 1)[1] or "{}"
    inner = args[start:]
    if replace:
        inner = [UNKNOWN if a.value is None or replace in a.value else a for a in inner]
    return [*inner, UNKNOWN]


def _command_start(args: list[Word], g: Grammar) -> int | None:
    """Index of the wrapped command in `args` (len(args) if none), None when the options are unprovable."""
    i = 1
    while i < len(args):
        w = args[i].value
        if w is None or args[i].glob:
            return None
        if w == "--":
            i += 1
            break
        step = _option_width(w, args[i + 1:], g)
        if step is None:
            return None
        if step == -1:
            return len(args)  # `command -v x`: nothing runs
        if step == 0:
            break
        i += step
    while g.assignments and i < len(args) and args[i].value and re.match(r"[A-Za-z_]\w*=", args[i].value or ""):
        i += 1
    i += g.positionals
    return min(i, len(args))


def _option_width(w: str, rest: list[Word], g: Grammar) -> int | None:
    """How many words option `w` takes (0: not an option, -1: nothing runs), None when it is unknown."""
    if not w.startswith("-") or w == "-":
        return 0
    if w.startswith("--"):
        name = w.split("=", 1)[0]
        if name in g.long_with_arg:
            return 1 if "=" in w else 2
        return 1 if name in g.long_flags else None
    if g.numeric and w[1:].isdigit():
        return 1
    for k, c in enumerate(w[1:], start=1):
        if c in g.no_command:
            return -1
        if c in g.with_arg:
            return 1 if k + 1 < len(w) else 2
        if c not in g.flags:
            return None
    return 1


def _unsafe_assignments(words: list[Word]) -> list[str]:
    out = []
    for w in words:
        m = re.match(r"([A-Za-z_]\w*)=", w.value or "")
        if m and m.group(1) not in SAFE_ASSIGNMENTS:
            out.append(f"the environment setting {m.group(1)}= changes how the command runs")
    return out


def _parse_inner(text: str | None, home: str | None, problems: list[str], depth: int) -> list[list[Word]]:
    if text is None:
        return [[UNKNOWN]]
    from tools.bash_parse import parse_command

    parsed = parse_command(text, home)
    problems.extend(f"inside a nested command line: {p}" for p in parsed.problems)
    if parsed.redirects:
        problems.append("a nested command line redirects output")
    return [c.args for c in parsed.commands]


def _shell_strings(args: list[Word], name: str | None, home: str | None, problems: list[str],
                   depth: int) -> list[list[Word]]:
    """`bash -c STRING`, `bash -xc STRING`, `su -c STRING`: the commands in the string."""
    i, has_c = 1, False
    string_options = _SHELL_STRING_OPTION.get(name or "", ())
    while i < len(args):
        w = args[i].value
        if w is None:
            return [[UNKNOWN]]
        if w in string_options or (name in SHELLS and re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", w)):
            has_c = True
            i += 1
            if name not in SHELLS:
                break
            continue
        if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
        elif w.startswith(("-", "+")) and w not in ("-", "--"):
            i += 1
        else:
            break
    if not has_c and name in SHELLS and (i >= len(args) or args[i].value == "-"):
        return [[UNKNOWN]]  # `... | sh`: the commands come from input the line does not show
    if not has_c or i >= len(args):
        return []
    word = args[i]
    return _parse_inner(word.value if not word.glob else None, home, problems, depth)


def _split_strings(args: list[Word], home: str | None, problems: list[str], depth: int) -> list[list[Word]]:
    """`env -S 'rm -rf x'` splits its string into a command."""
    out: list[list[Word]] = []
    for i, a in enumerate(args[1:], start=1):
        v = a.value or ""
        if v in ("-S", "--split-string") or v.startswith(("-S", "--split-string=")):
            text = v.split("=", 1)[1] if "=" in v else (v[2:] or (args[i + 1].value if i + 1 < len(args) else ""))
            out += _parse_inner(text, home, problems, depth)
    return out


def _find_exec(args: list[Word]) -> list[list[Word]]:
    """`find ... -exec CMD {} ;`: CMD with each `{}` an unknown file name."""
    out: list[list[Word]] = []
    i = 1
    while i < len(args):
        if args[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j].value not in (";", "+"):
                j += 1
            out.append([UNKNOWN if a.value is None or "{}" in a.value else a for a in args[i + 1:j]] or [UNKNOWN])
            i = j
        i += 1
    return out
