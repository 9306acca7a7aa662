"""A Bash command line on a real shell grammar (tree-sitter-bash): its simple commands, the files it
redirects output to, and everything it does that cannot be proved from the text alone.

The permission gate allows a command by rules only when `problems` is empty and every simple command
is allowed; a problem (a parse error, `eval`, an expansion whose value can run code such as
`${x@P}`, a function definition, an assignment that changes how later commands run, a here-string
into a shell) means "ask". A word whose value is only known at run time is None: a prefix rule can
still match the static words before it, an exact rule cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "busybox"})
# Interpreters and privilege/indirection wrappers: "always" stores the exact command only.
INTERPRETERS = SHELLS | frozenset({
    "python", "python2", "python3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "irb",
    "sudo", "doas", "su", "env", "xargs", "eval", "exec", "source", ".", "command", "builtin", "nohup",
    "time", "nice", "timeout", "ssh", "osascript", "awk", "gawk", "sed", "find", "docker", "npx", "uvx",
})
# Wrappers that run their arguments as a command: deny and ask rules also look behind them.
WRAPPERS = frozenset({"sudo", "doas", "env", "nohup", "time", "nice", "timeout", "command", "builtin", "exec",
                      "xargs", "stdbuf", "ionice", "chrt", "setsid", "strace"})
SAFE_ASSIGNMENTS = frozenset({"LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "FORCE_COLOR", "CI", "TERM",
                              "COLUMNS", "PYTHONUNBUFFERED", "RUST_BACKTRACE", "DEBUG"})
NOT_WRITES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_PLAIN_EXPANSION = re.compile(r"\$\{#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}\Z")
_PLAIN_ARITH = re.compile(r"\$\(\([0-9\s+\-*/%()<>=!&|^~]*\)\)\Z")
_GLOB = re.compile(r"[*?\[]")
_RECURSE = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "do_group",
                      "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement",
                      "case_statement", "case_item"})


@dataclass
class SimpleCommand:
    words: list[str | None]  # None: known only at run time
    text: str

    @property
    def name(self) -> str | None:
        return self.words[0] if self.words else None


@dataclass
class ParsedCommand:
    commands: list[SimpleCommand] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # redirection targets written to (as written, ~ expanded)
    problems: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", errors="replace"))


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str | None:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        n = body[i + 1]
        if n in _ANSI:
            out.append(_ANSI[n])
            i += 2
        elif n == "x" and re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]):
            h = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]).group(0)  # type: ignore[union-attr]
            out.append(chr(int(h, 16)))
            i += 2 + len(h)
        elif n in "01234567":
            o = re.match(r"[0-7]{1,3}", body[i + 1:]).group(0)  # type: ignore[union-attr]
            out.append(chr(int(o, 8)))
            i += 1 + len(o)
        else:
            return None  # \u, \c and friends: do not guess
    return "".join(out)


class _Walker:
    def __init__(self, source: bytes = b"") -> None:
        self.out = ParsedCommand()
        self.source = source

    def problem(self, text: str) -> None:
        if text not in self.out.problems:
            self.out.problems.append(text)

    # -- words ---------------------------------------------------------------------------------
    def word(self, node: Any) -> str | None:
        """The static value of a word node, or None (its dynamic parts are still checked)."""
        t = node.type
        if t in ("word", "number", "variable_name"):
            return re.sub(r"\\(.)", r"\1", _text(node).replace("\\\n", ""), flags=re.S)
        if t == "raw_string":
            return _text(node)[1:-1]
        if t == "ansi_c_string":
            return _ansi_c(_text(node)[2:-1])
        if t == "command_name":
            return self.word(node.named_children[0]) if node.named_child_count == 1 else self._dynamic(node)
        if t in ("string", "concatenation"):
            parts = []
            static = True
            for child in node.children:
                if t == "string" and not child.is_named:
                    continue  # the quotes
                if child.type == "string_content":
                    parts.append(re.sub(r'\\([$`"\\\n])', r"\1", _text(child)).replace("\\\n", ""))
                    continue
                value = self.word(child)
                if value is None:
                    static = False
                else:
                    parts.append(value)
            return "".join(parts) if static else None
        return self._dynamic(node)

    def _dynamic(self, node: Any) -> str | None:
        t = node.type
        if t == "simple_expansion":
            return None
        if t == "expansion":
            if not _PLAIN_EXPANSION.match(_text(node)):
                self.problem(f"expansion {_text(node)} (its value is only known when it runs)")
            return None
        if t in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self.statement(child)
            return None
        if t == "arithmetic_expansion":
            if not _PLAIN_ARITH.match(_text(node)):
                self.problem(f"arithmetic {_text(node)}")
            return None
        if t == "brace_expression":
            return _text(node)
        self.problem(f"unsupported word {t}")
        return None

    # -- statements -----------------------------------------------------------------------------
    def statement(self, node: Any) -> None:
        t = node.type
        if node.is_error or node.is_missing:
            self.problem("the command does not parse")
            return
        if t == "comment":
            return
        if t in _RECURSE:
            for child in node.named_children:
                if t == "case_statement" and child.type != "case_item":
                    self.word(child)  # the value cased on
                elif t == "case_item" and child.type not in _RECURSE and not child.type.endswith(("statement", "command")):
                    self.word(child)  # a pattern
                else:
                    self.statement(child)
            return
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            name = None
            if body is not None:
                self.statement(body)
                if body.type == "command":
                    cmd_name = body.child_by_field_name("name")
                    name = self.word(cmd_name) if cmd_name is not None else None
            for child in node.children_by_field_name("redirect"):
                self.redirect(child, name)
            return
        if t == "command":
            self.command(node)
            return
        if t in ("declaration_command", "unset_command"):
            words: list[str | None] = []
            for child in node.children:
                if not child.is_named:
                    words.append(_text(child))
                elif child.type == "variable_assignment":
                    words.append(self.assignment_text(child))
                else:
                    words.append(self.word(child))
            self.out.commands.append(SimpleCommand(words, _text(node)))
            return
        if t == "variable_assignment":
            self.assignment_text(node)
            self.problem(f"the assignment {_text(node)[:40]} changes how later commands run")
            return
        if t == "for_statement":
            var = node.child_by_field_name("variable")
            if var is not None and not _text(var).islower():
                self.problem(f"the loop variable {_text(var)} may change how commands run")
            for child in node.named_children:
                if child.type == "do_group":
                    self.statement(child)
                elif child is not var:
                    self.word(child)
            return
        if t == "function_definition":
            self.problem("a function definition can stand in for any command")
            return
        if t == "test_command":
            self.problem("a [[ ]] test can evaluate expressions")
            return
        self.problem(f"unsupported shell syntax ({t})")

    def assignment_text(self, node: Any) -> str | None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        v = "" if value is None else self.word(value)
        if name is None or v is None:
            return None
        return f"{_text(name)}={v}"

    def command(self, node: Any) -> None:
        # tree-sitter-bash sometimes glues the next line onto a command (`a | b | cat x<newline>rm y` parses
        # as `cat x rm y`); bash never continues a command over a bare newline, so that parse is refused.
        children = [c for c in node.children if c.type != "comment"]
        for prev, nxt in zip(children, children[1:], strict=False):
            raw = self.source[prev.end_byte:nxt.start_byte]
            if raw.startswith(b"\\\n"):
                # `c\<newline>at x`: bash removes the pair and runs `cat`; the grammar splits the word.
                self.problem("a line continuation inside a word")
            if b"\n" in raw.replace(b"\\\n", b""):
                self.problem("the parser joined two lines into one command")
        words: list[str | None] = []
        assigns: list[Any] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                assigns.append(child)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                continue
            elif child.type == "comment":
                continue
            else:
                words.append(self.word(child))
        name_node = node.child_by_field_name("name")
        if name_node is None:  # only assignments (`A=1 >x`)
            for a in assigns:
                self.statement(a)
        for a in assigns:
            name = a.child_by_field_name("name")
            self.assignment_text(a)
            if name is None or _text(name) not in SAFE_ASSIGNMENTS:
                self.problem(f"the environment prefix {_text(a)[:40]} changes how the command runs")
        if words:
            if words[0] is None:
                self.problem("the command name is only known when it runs")
            elif words[0] == "eval":
                self.problem("eval runs text as a command")
            self.out.commands.append(SimpleCommand(words, _text(node)))
        for child in node.named_children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.redirect(child, words[0] if words else None)

    def redirect(self, node: Any, command_name: str | None) -> None:
        t = node.type
        if t in ("heredoc_redirect", "herestring_redirect"):
            if command_name is None or command_name in SHELLS or command_name in INTERPRETERS:
                self.problem(f"input fed to {command_name or 'a command'} runs as code")
            for child in node.named_children:
                if child.type == "heredoc_body":
                    for part in child.named_children:
                        if part.type in ("command_substitution", "expansion", "arithmetic_expansion"):
                            self._dynamic(part)
                elif child.type not in ("heredoc_start", "heredoc_end"):
                    self.word(child)
            return
        op = "".join(_text(c) for c in node.children if not c.is_named)
        dest = node.child_by_field_name("destination")
        if dest is None:
            self.problem("a redirection without a target")
            return
        if ">" not in op:
            self.word(dest)  # a read: `< file`
            return
        if dest.type == "number" and "&" in op:
            return  # `2>&1`, `>&2`: descriptor duplication
        value = self.word(dest)
        if value is None:
            self.problem(f"the redirection target {_text(dest)} is only known when it runs")
            return
        if value == "-" and "&" in op:
            return  # `>&-` closes
        if _GLOB.search(value):
            self.problem(f"the redirection target {value} is a pattern")
            return
        if value.startswith("~"):
            import os.path

            value = os.path.expanduser(value)
        if value not in NOT_WRITES:
            self.out.writes.append(value)


def parse_command(command: str) -> ParsedCommand:
    """The simple commands, written files and unprovable parts of a Bash command line."""
    source = command.encode("utf-8", errors="surrogateescape")
    walker = _Walker(source)
    try:
        tree = _parser().parse(source)
    except Exception as exc:  # the grammar never raises on text, but the binding might
        walker.problem(f"the command could not be parsed ({type(exc).__name__})")
        return walker.out
    root = tree.root_node
    if root.has_error:
        walker.problem("the command does not parse")
    for child in root.named_children:
        walker.statement(child)
    if "\x00" in command:
        walker.problem("the command contains a NUL byte")
    for cmd in walker.out.commands:
        for w in cmd.words:
            if w is not None and "/environ" in w and "/proc" in w:
                walker.problem("reads a process environment (/proc/*/environ)")
    return walker.out


# -- rules -------------------------------------------------------------------------------------------


def _split_rule(text: str) -> list[str] | None:
    import shlex

    try:
        return shlex.split(text)
    except ValueError:
        return None


def rule_matches(content: str, cmd: SimpleCommand) -> bool:
    """One rule's content against one simple command's words (never against the raw line).

    `git status:*` and `git status *`: these words first, anything after; a `*` elsewhere: a wildcard
    over the command's words joined by spaces; otherwise exactly these words."""
    content = content.strip()
    words = cmd.words
    prefix_form = content.endswith(":*") or content.endswith(" *")
    if prefix_form:
        prefix = _split_rule(content[:-2])
        if not prefix or len(words) < len(prefix):
            return False
        return all(w is not None and w == p for w, p in zip(words, prefix, strict=False))
    if any(w is None for w in words):
        return False
    if "*" in content:
        regex = ".*".join(re.escape(p) for p in " ".join(content.split()).split("*"))
        return re.fullmatch(regex, " ".join(words), re.S) is not None  # type: ignore[arg-type]
    exact = _split_rule(content)
    return exact is not None and exact == words


def unwrapped(cmd: SimpleCommand) -> list[SimpleCommand]:
    """The command and what it runs behind wrappers (`sudo rm` -> `rm`), for deny and ask rules."""
    out = [cmd]
    words = cmd.words
    i = 0
    while i < len(words) and words[i] in WRAPPERS:
        i += 1
        while i < len(words) and _option_like(words[i]):
            i += 1
        if i < len(words):
            out.append(SimpleCommand(words[i:], cmd.text))
    return out


def always_rule_content(command: str) -> str | None:
    """What an "always" answer stores for a Bash command: never broader than the first word plus a
    sub-command (`git status:*`); an interpreter or wrapper gets the exact command; None when the line
    is compound or not provable (then "always" is not offered)."""
    import shlex

    parsed = parse_command(command)
    if parsed.problems or len(parsed.commands) != 1 or parsed.writes:
        return None
    words = parsed.commands[0].words
    if not words or any(w is None for w in words):
        return None
    static = [w for w in words if w is not None]
    first = static[0]
    if first in INTERPRETERS or "/" in first:
        return " ".join(shlex.quote(w) for w in static)
    if first in SUBCOMMAND_TOOLS:
        if len(static) > 1 and re.fullmatch(r"[A-Za-z][\w.-]*", static[1]):
            return f"{shlex.quote(first)} {shlex.quote(static[1])}:*"
        return " ".join(shlex.quote(w) for w in static)  # `git -C x status`: no safe prefix
    return f"{shlex.quote(first)}:*"


# Commands whose second word is a sub-command (`git status`), so "always" stops there.
SUBCOMMAND_TOOLS = frozenset({"git", "npm", "pnpm", "yarn", "cargo", "go", "kubectl", "pip", "pip3", "uv", "poetry",
                              "make", "dotnet", "gradle", "mvn", "brew", "apt", "apt-get", "gh", "terraform",
                              "helm", "systemctl", "rustup", "conda", "composer", "bundle", "rake", "swift"})


def _option_like(word: str | None) -> bool:
    """A wrapper's option or assignment (`-n`, `X=1`, a duration), skipped to find the wrapped command."""
    return word is not None and (word.startswith("-") or "=" in word or word.replace(".", "").isdigit())
