"""Claude Code's command-line flags for `agent`, parsed with argparse (light to import: `--help` is instant)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from services.session import PICK_SESSION

OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
# Claude Code's newer name for the default mode.
MODE_ALIASES = {"manual": "default"}
# Flags of Claude Code's that this agent accepts and ignores with a one-line notice (SDK clients pass them).
# Those Claude Code's --help shows are options in ours too; the ones it hides are named in the epilog.
IGNORED_VALUE_FLAGS = ("--task-budget", "--thinking-display", "--resume-session-at", "--resume-drops-turn",
                       "--plugin-dir", "--agent", "--name")
IGNORED_BOOL_FLAGS = ("--include-hook-events", "--session-mirror", "--ide", "--bare")
IGNORED_HIDDEN = ("--task-budget", "--thinking-display", "--resume-session-at", "--resume-drops-turn",
                  "--session-mirror")
EPILOG = f"""Also accepted and ignored (hidden in Claude Code's help too):
  {", ".join(IGNORED_HIDDEN)}
Claude Code's hidden Setup flags: --init and --maintenance run the Setup hooks first; --init-only runs
them and exits.
"""

DESCRIPTION = """A ReAct coding agent for the terminal, driven by Claude.

  agent                      start the interactive REPL
  agent "fix the tests"      the REPL with this first message (on a terminal), else one task and exit
  agent -p "fix the tests"   run one task and exit
  echo "task" | agent -p     read the task from stdin
  agent mcp | doctor | config | trust   manage MCP servers, check the setup, settings, folder trust

Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL for any Anthropic-compatible
server). Without a key, --mock runs a built-in offline model that drives the real tools.
"""


class UsageError(Exception):
    pass


class UnknownOption(UsageError):
    """An option the parser does not have: Claude Code's message, with its suggestion (agent/suggest.py)."""

    def __init__(self, flag: str, candidates: list[str]):
        from agent.suggest import unknown_option_message

        super().__init__(unknown_option_message(flag, candidates))
        self.flag = flag


def visible_long_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The long options --help shows: the only ones Claude Code suggests."""
    return [flag for action in parser._actions if action.help is not argparse.SUPPRESS
            for flag in action.option_strings if flag.startswith("--")]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit 2, like every other usage error
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="agent", usage="agent [options] [prompt]\n       agent mcp|doctor|config|trust ...", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                add_help=False, allow_abbrev=False)
    a = p.add_argument
    a("prompt", nargs="*", help="the task (omit it to start the REPL)")
    a("-p", "--print", dest="print_mode", action="store_true", help="one-shot: print the response and exit")
    a("--output-format", choices=OUTPUT_FORMATS, default="text", help="one-shot output: text, json, stream-json")
    a("--input-format", choices=INPUT_FORMATS, default="text",
      help="one-shot input: text, or stream-json (user messages and control requests as JSON lines on stdin)")
    a("--include-partial-messages", action="store_true", help="stream-json: also the raw API stream events")
    a("--replay-user-messages", action="store_true", help="stream-json input: echo user messages back")
    a("--verbose", action="store_true", help="stream-json needs it; text mode also shows tool lines on stderr")
    a("-d", "--debug", nargs="?", const="all", default=None, metavar="FILTER",
      help="debug mode: tracebacks and TRACE lines on stderr")
    a("--model", help="model id or alias (opus, sonnet, haiku, fable, default); default: ANTHROPIC_MODEL, "
                      "the model setting, else the `default` alias (Claude Code's default)")
    a("--fallback-model", help="model(s) to use when the main one is overloaded (comma-separated)")
    a("--max-turns", type=_positive_int, help="model calls per task (default 100)")
    a("--max-budget-usd", type=_positive_float, help="stop sending requests once the session's cost reaches this (USD; /budget raises it)")
    a("--permission-mode", help="default (or manual), acceptEdits, plan, bypassPermissions, dontAsk (deny "
                                "what would ask); auto runs as default")
    a("--dangerously-skip-permissions", action="store_true", help="bypassPermissions: every tool runs")
    a("--allow-dangerously-skip-permissions", action="store_true",
      help="accepted: bypassPermissions can be chosen without it")
    a("--allowedTools", "--allowed-tools", dest="allowed_tools", nargs="+", action="extend", default=[],
      metavar="RULES", help='comma or space separated rules to allow, e.g. "Bash(git status:*) Edit"')
    a("--disallowedTools", "--disallowed-tools", dest="disallowed_tools", nargs="+", action="extend",
      default=[], metavar="RULES", help="comma or space separated rules to deny")
    a("--tools", nargs="*", action="extend", default=None, metavar="TOOLS",
      help='the built-in tools to offer: "" for none, "default" for all, or names ("Bash,Edit,Read")')
    a("--system-prompt", help="replace the system prompt")
    a("--system-prompt-file", help="replace the system prompt with this file's text")
    a("--append-system-prompt", help="add text to the end of the system prompt")
    a("--append-system-prompt-file", help="add this file's text to the end of the system prompt")
    a("--mcp-config", nargs="+", action="extend", default=[], metavar="CONFIGS",
      help="MCP servers from JSON files or JSON strings")
    a("--strict-mcp-config", action="store_true", help="only the servers of --mcp-config")
    a("--add-dir", dest="add_dirs", nargs="+", action="extend", default=[], metavar="DIRS",
      help="more directories the tools may read and write")
    a("--settings", help="a settings file or JSON string")
    a("--setting-sources", help="comma-separated setting sources to load (user, project, local)")
    a("--session-id", help="use this session id (a UUID)")
    a("-c", "--continue", dest="continue_", action="store_true", help="continue the most recent session")
    a("-r", "--resume", nargs="?", const=PICK_SESSION, default=None, metavar="ID",
      help="resume a session (no id: pick one in the REPL)")
    a("--fork-session", action="store_true", help="with --resume/--continue: continue under a new session id")
    a("--no-session-persistence", action="store_true", help="one-shot: write no transcript")
    a("--json-schema", help="one-shot: a JSON Schema the final answer must satisfy (structured_output)")
    a("--permission-prompt-tool", help="stdio: ask the SDK host (control protocol) instead of denying")
    a("--max-thinking-tokens", type=_positive_int, help=argparse.SUPPRESS)
    a("--betas", nargs="+", action="extend", default=[], help="beta headers to send (anthropic-beta)")
    a("--agents", metavar="JSON|FILE", help='custom sub-agents: {"name": {"description", "prompt", '
                                            '"tools"?, "model"?}}, or a file holding that JSON')
    a("--disable-slash-commands", action="store_true", help="accepted; has no effect here")
    a("--effort", choices=("low", "medium", "high", "xhigh", "max"), help="effort level (models that take one)")
    a("--thinking", choices=("adaptive", "enabled", "disabled"),
      help="enabled or adaptive: thinking on; disabled: off (where the model allows it)")
    # Claude Code's hidden Setup flags: run the Setup hooks (trigger init or maintenance) first; --init-only
    # runs Setup and SessionStart, then exits.
    a("--init", action="store_true", help=argparse.SUPPRESS)
    a("--init-only", action="store_true", help=argparse.SUPPRESS)
    a("--maintenance", action="store_true", help=argparse.SUPPRESS)
    # Accepted so that SDK clients and scripts written for Claude Code run; each says it is ignored.
    for flag in (*IGNORED_VALUE_FLAGS, *IGNORED_BOOL_FLAGS):
        shown = argparse.SUPPRESS if flag in IGNORED_HIDDEN else "accepted and ignored (Claude Code's)"
        kind: dict[str, Any] = {"action": "store_true"} if flag in IGNORED_BOOL_FLAGS else {"metavar": "X"}
        a(flag, dest="ignored_" + flag.strip("-").replace("-", "_"), help=shown, **kind)
    a("-C", "--cwd", help="work in this directory")
    a("--mock", action="store_true", help="the offline mock model (no key, no network)")
    a("-v", "--version", action="store_true", help="print the version")
    a("-h", "--help", action="store_true", help="show this help")
    return p


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {raw!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {raw}")
    return value


def split_tool_list(values: list[str]) -> list[str]:
    """Claude Code's tool lists: comma- or space-separated, with spaces and commas inside `(...)` kept."""
    out: list[str] = []
    for value in values:
        depth, cur = 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
                continue
            cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out


def workdir_of(ns: argparse.Namespace) -> Path:
    workdir = Path(ns.cwd or Path.cwd()).expanduser().resolve()
    if not workdir.is_dir():
        raise UsageError(f"--cwd {workdir}: not a directory")
    return workdir


def parse_argv(argv: list[str]) -> argparse.Namespace:
    """Options anywhere among the prompt's words; everything after `--` is prompt (argparse's intermixed
    parsing would still read options there)."""
    tail: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1 :]
    parser = build_parser()
    ns, extras = parser.parse_known_intermixed_args(argv)
    if extras:  # the first unknown option is the error, as in Claude Code
        unknown = next((x for x in extras if x.startswith("-")), None)
        if unknown is None:
            raise UsageError(f"unrecognized arguments: {' '.join(extras)}")
        raise UnknownOption(unknown, visible_long_flags(parser))
    ns.prompt = [*(ns.prompt or []), *tail]
    return ns
