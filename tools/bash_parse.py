"""A Bash command line on a real shell grammar (tree-sitter-bash): its simple commands with each word's
value as bash computes it (tools/shell_words.py), the files it redirects output to, and everything it does
that cannot be proved from the text alone.

The permission gate allows a command by rules only when `problems` is empty and every simple command
is allowed; a problem (a parse error, `eval`, an expansion whose value can run code such as
`${x@P}`, a function definition, an assignment that changes how later commands run, a here-string
into a shell) means "ask". A word whose value is only known at run time is unknown (`Word.value is
None`); an allow rule never matches a command with an unknown word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tools.shell_names import INTERPRETERS, SAFE_ASSIGNMENTS, SHELLS
from tools.shell_words import (
    UNKNOWN,
    Piece,
    Word,
    ansi_c,
    double_quoted,
    expand,
    remove_continuations,
    unquoted_pieces,
)

# Shell keywords: where the grammar puts one in a command's place, it has misread a compound command.
RESERVED = frozenset({"{", "}", "(", ")", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                      "case", "esac", "select", "function", "!", "[[", "]]", "in"})
NOT_WRITES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_PLAIN_EXPANSION = re.compile(r"\$\{#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}\Z")
_PLAIN_ARITH = re.compile(r"\$\(\([0-9\s+\-*/%()<>=!&|^~]*\)\)\Z")
_RECURSE = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "do_group",
                      "negated_command", "if_statement", "elif_clause", "else_clause", "while_statement",
                      "case_statement", "case_item"})
_REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
_DYNAMIC = ("simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion")


@dataclass
class SimpleCommand:
    args: list[Word]
    text: str

    @property
    def words(self) -> list[str | None]:
        """Each word's value (a pattern as written), None when only the running shell knows it."""
        return [a.value for a in self.args]

    @property
    def name(self) -> str | None:
        return self.args[0].value if self.args and not self.args[0].glob else None


@dataclass
class Redirect:
    target: Word
    command: int | None  # index into ParsedCommand.commands of the command it belongs to
    input_only: bool = False


@dataclass
class ParsedCommand:
    commands: list[SimpleCommand] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)  # output redirections (targets as words)
    problems: list[str] = field(default_factory=list)

    @property
    def writes(self) -> list[str | None]:
        """Output redirection targets: their values, None when unknown or a pattern."""
        return [r.target.value if r.target.known else None for r in self.redirects if not r.input_only]


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", errors="replace"))


class _Walker:
    def __init__(self, source: bytes, home: str | None) -> None:
        self.out = ParsedCommand()
        self.source = source
        self.home = home

    def problem(self, text: str) -> None:
        if text not in self.out.problems:
            self.out.problems.append(text)

    # -- words ---------------------------------------------------------------------------------
    def words(self, node: Any) -> list[Word]:
        """The words bash makes of one word node (brace expansion may make several)."""
        return expand(self.pieces(node), self.home)

    def word(self, node: Any) -> Word:
        """One word's value; a brace expansion into several words counts as unknown."""
        out = self.words(node)
        return out[0] if len(out) == 1 else UNKNOWN

    def pieces(self, node: Any) -> list[Piece]:
        t = node.type
        if t in ("word", "number", "variable_name", "brace_expression"):
            return unquoted_pieces(_text(node))
        if t == "raw_string":
            return [Piece(_text(node)[1:-1], quoted=True)]
        if t == "ansi_c_string":
            value = ansi_c(_text(node)[2:-1])
            return [Piece("", dynamic=True)] if value is None else [Piece(value, quoted=True)]
        if t == "command_name":
            if node.named_child_count == 1:
                return self.pieces(node.named_children[0])
            return self._dynamic(node)
        if t in ("string", "translated_string"):
            return self._string(node)
        if t == "concatenation":
            return [p for child in node.children for p in self.pieces(child)]
        return self._dynamic(node)

    def _string(self, node: Any) -> list[Piece]:
        out: list[Piece] = []
        for child in node.children:
            if not child.is_named:
                continue  # the quotes
            if child.type == "string_content":
                out.append(Piece(double_quoted(_text(child)), quoted=True))
            elif child.type == "string":
                out.extend(self._string(child))
            else:
                out.extend(self._dynamic(child))
        return out

    def _dynamic(self, node: Any) -> list[Piece]:
        t = node.type
        if t == "expansion" and not _PLAIN_EXPANSION.match(_text(node)):
            self.problem(f"expansion {_text(node)} (its value is only known when it runs)")
        elif t in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self.statement(child)
        elif t == "arithmetic_expansion" and not _PLAIN_ARITH.match(_text(node)):
            self.problem(f"arithmetic {_text(node)}")
        elif t not in _DYNAMIC:
            self.problem(f"unsupported word {t}")
        return [Piece(_text(node), dynamic=True)]

    # -- statements -----------------------------------------------------------------------------
    def statement(self, node: Any) -> None:
        t = node.type
        if node.is_error or node.is_missing:
            self.problem("the command does not parse")
        elif t == "comment":
            return
        elif t in _RECURSE:
            self._compound(node)
        elif t == "redirected_statement":
            self._redirected(node)
        elif t == "command":
            self.command(node, [])
        elif t in ("declaration_command", "unset_command"):
            self._declaration(node)
        elif t == "variable_assignment":
            self.assignment(node)
            self.problem(f"the assignment {_text(node)[:40]} changes how later commands run")
        elif t == "for_statement":
            self._for(node)
        elif t == "function_definition":
            self.problem("a function definition can stand in for any command")
        elif t == "test_command":
            self.problem("a [[ ]] test can evaluate expressions")
        else:
            self.problem(f"unsupported shell syntax ({t})")

    def _compound(self, node: Any) -> None:
        t = node.type
        for child in node.named_children:
            if t == "case_statement" and child.type != "case_item":
                self.word(child)  # the value cased on
            elif t == "case_item" and child.type not in _RECURSE and not child.type.endswith(("statement", "command")):
                self.word(child)  # a pattern
            else:
                self.statement(child)

    def _redirected(self, node: Any) -> None:
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        if body is not None and body.type == "command":
            self.command(body, redirects)
            return
        if body is not None:
            self.statement(body)
        for child in redirects:
            if self._redirect(child, None):
                self.problem("words after a redirection of a compound command")

    def _declaration(self, node: Any) -> None:
        args: list[Word] = []
        for child in node.children:
            if not child.is_named:
                args.append(Word(_text(child)))
            elif child.type == "variable_assignment":
                args.append(self.assignment(child))
            else:
                args.extend(self.words(child))
        self.out.commands.append(SimpleCommand(args, _text(node)))

    def _for(self, node: Any) -> None:
        var = node.child_by_field_name("variable")
        if var is not None and not _text(var).islower():
            self.problem(f"the loop variable {_text(var)} may change how commands run")
        for child in node.named_children:
            if child.type == "do_group":
                self.statement(child)
            elif child is not var:
                self.words(child)

    def assignment(self, node: Any) -> Word:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        v = Word("") if value is None else self.word(value)
        if name is None or v.value is None:
            return UNKNOWN
        return Word(f"{_text(name)}={v.value}", v.glob)

    def _check_newlines(self, nodes: list[Any]) -> None:
        """Bash never continues a command over a bare newline; the grammar sometimes glues the next line
        onto a command (`a | b | cat x<newline>rm y` parses as `cat x rm y`): that parse is refused."""
        for prev, nxt in zip(nodes, nodes[1:], strict=False):
            if b"\n" in self.source[prev.end_byte:nxt.start_byte]:
                self.problem("the parser joined two lines into one command")

    def joined_words(self, nodes: list[Any]) -> list[Word]:
        """The words of argument nodes in source order; nodes with nothing between them are one bash word
        the grammar split (`.e"n"\\v`), so their pieces are joined before expansion."""
        out: list[Word] = []
        group: list[Piece] = []
        for i, n in enumerate(nodes):
            group += self.pieces(n)
            if i + 1 == len(nodes) or nodes[i + 1].start_byte != n.end_byte:
                out += expand(group, self.home)
                group = []
        return out

    def command(self, node: Any, outer_redirects: list[Any]) -> None:
        inner_redirects = [c for c in node.named_children if c.type in _REDIRECTS]
        arg_nodes = [c for c in node.named_children
                     if c.type not in _REDIRECTS and c.type not in ("variable_assignment", "comment")]
        for r in [*inner_redirects, *outer_redirects]:
            arg_nodes.extend(_target_and_extras(r)[1])
        arg_nodes.sort(key=lambda n: n.start_byte)
        self._check_newlines([c for c in node.children if c.type != "comment"])
        self._check_newlines(arg_nodes)
        args = self.joined_words(arg_nodes)
        self._assignments(node, bool(args))
        index = None
        if args:
            if args[0].value is None or args[0].glob:
                self.problem("the command name is only known when it runs")
            elif args[0].value in RESERVED:
                self.problem(f"the keyword {args[0].value} where a command should be (the grammar misread the line)")
            elif args[0].value == "eval":
                self.problem("eval runs text as a command")
            index = len(self.out.commands)
            self.out.commands.append(SimpleCommand(args, _text(node)))
        for r in [*inner_redirects, *outer_redirects]:
            self._redirect(r, index)

    def _assignments(self, node: Any, has_command: bool) -> None:
        for a in (c for c in node.named_children if c.type == "variable_assignment"):
            name = a.child_by_field_name("name")
            self.assignment(a)
            if not has_command:
                self.problem(f"the assignment {_text(a)[:40]} changes how later commands run")
            elif name is None or _text(name) not in SAFE_ASSIGNMENTS:
                self.problem(f"the environment prefix {_text(a)[:40]} changes how the command runs")

    def _redirect(self, node: Any, index: int | None) -> bool:
        """Record one redirection; True when it carried words that belong to the command."""
        if node.type in ("heredoc_redirect", "herestring_redirect"):
            self._here(node, index)
            return node.type == "herestring_redirect" and len(node.named_children) > 1
        op = "".join(_text(c) for c in node.children if not c.is_named and c.type != "file_descriptor")
        dest_nodes, extras = _target_and_extras(node)
        if not dest_nodes:
            self.problem("a redirection without a target")
            return False
        if len(dest_nodes) == 1 and dest_nodes[0].type == "number" and "&" in op:
            return bool(extras)  # `2>&1`, `>&2`: descriptor duplication
        words = self.joined_words(dest_nodes)
        target = words[0] if len(words) == 1 else UNKNOWN  # several words: bash's "ambiguous redirect"
        if target.value == "-" and "&" in op:
            return bool(extras)  # `>&-` closes
        if ">" not in op:
            self.out.redirects.append(Redirect(target, index, input_only=True))
        elif target.value not in NOT_WRITES or target.glob:
            self.out.redirects.append(Redirect(target, index))
        return bool(extras)

    def _here(self, node: Any, index: int | None) -> None:
        cmd = self.out.commands[index] if index is not None else None
        name = cmd.name if cmd is not None else None
        base = name.rsplit("/", 1)[-1] if name else None
        if base is None or base in SHELLS or base in INTERPRETERS:
            self.problem(f"input fed to {name or 'a command'} runs as code")
        for child in node.named_children:
            if child.type == "heredoc_body":
                for part in child.named_children:
                    if part.type in ("command_substitution", "expansion", "arithmetic_expansion"):
                        self._dynamic(part)
            elif child.type == "file_redirect":
                # `cat <<EOF > out x`: the grammar hangs the rest of the line on the here-document
                self._redirect(child, index)
                extras = self.joined_words(_target_and_extras(child)[1])
                if extras and cmd is not None:
                    cmd.args.extend(extras)
                elif extras:
                    self.problem("words after a redirection of a compound command")
            elif child.type in _RECURSE or child.type in ("command", "redirected_statement"):
                self.statement(child)  # `cat <<EOF | sh`, `cat <<EOF && rm x`
            elif child.type not in ("heredoc_start", "heredoc_end"):
                self.word(child)


def _target_and_extras(redirect: Any) -> tuple[list[Any], list[Any]]:
    """A redirection's target (the nodes of its one word) and the words after it. tree-sitter-bash hangs
    the words after a redirection target on the redirection (`> f x y`); bash passes them to the command."""
    if redirect.type == "herestring_redirect":
        return list(redirect.named_children[:1]), list(redirect.named_children[1:])
    if redirect.type != "file_redirect":
        return [], []
    dest = redirect.child_by_field_name("destination")
    named = [c for c in redirect.named_children if c.type != "file_descriptor"]
    if dest is None:
        return [], []
    after = [c for c in named if c.start_byte >= dest.start_byte]
    target = after[:1]
    for n in after[1:]:
        if n.start_byte != target[-1].end_byte:
            break
        target.append(n)
    return target, after[len(target):]


_WORDLIKE = frozenset({"word", "string", "raw_string", "concatenation", "simple_expansion", "expansion",
                       "command_substitution", "process_substitution", "ansi_c_string", "number",
                       "translated_string", "brace_expression", "command_name", "arithmetic_expansion"})


def _split_words(root: Any) -> bool:
    """Two word nodes side by side with nothing between them, outside a concatenation: bash reads one
    word there, the grammar two (`.e"n"\\v`). Walked without recursion: the tree may be deep."""
    stack = [root]
    while stack:
        node = stack.pop()
        children = node.children
        if node.type not in ("concatenation", "string", "translated_string", "command", "file_redirect"):
            for prev, nxt in zip(children, children[1:], strict=False):
                if prev.type in _WORDLIKE and nxt.type in _WORDLIKE and prev.end_byte == nxt.start_byte:
                    return True
        stack.extend(children)
    return False


def parse_command(command: str, home: str | None = None) -> ParsedCommand:
    """The simple commands, redirections and unprovable parts of a Bash command line."""
    text = remove_continuations(command)
    source = text.encode("utf-8", errors="surrogateescape")
    walker = _Walker(source, home)
    try:
        tree = _parser().parse(source)
    except Exception as exc:  # the grammar never raises on text, but the binding might
        walker.problem(f"the command could not be parsed ({type(exc).__name__})")
        return walker.out
    root = tree.root_node
    if root.has_error:
        walker.problem("the command does not parse")
    if _split_words(root):
        walker.problem("the parser split one word in two where it cannot be joined")
    try:
        for child in root.named_children:
            walker.statement(child)
    except RecursionError:
        walker.problem("the command nests too deep to check")
    if "\x00" in command:
        walker.problem("the command contains a NUL byte")
    return walker.out
