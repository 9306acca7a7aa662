"""The command line, with Claude Code's flags: `agent` (REPL), `agent -p` (one shot), `agent <subcommand>`.

Kept light at import time (argparse, no typer/rich/SDK): `--help` and `--version` must be instant, and a
one-shot run starts importing the SDK in the background (`agent/sdk_preload.py`) before anything else, so
the time to the first request is the SDK's import and little more.
"""

from __future__ import annotations

import argparse
import os
import sys

from agent import __version__
from agent.exit_codes import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from agent.flags import UnknownOption, UsageError, build_parser, parse_argv
from agent.subcommands.dispatch import COMPLETE_VAR, COMPLETION_FLAGS, SUBCOMMANDS
from services.session import PICK_SESSION


def fail(message: str, code: int = EXIT_ERROR) -> int:
    sys.stderr.write(f"error: {message}\n")
    return code


def main(argv: list[str] | None = None) -> None:
    from agent.errors import debug_enabled, guard

    argv = list(sys.argv[1:] if argv is None else argv)
    # One guard for every entry point (REPL, one-shot in each format, headless, subcommands): an OSError
    # is one line naming the path and what was kept, a closed pipe exits quietly, Ctrl-C is one word; no
    # traceback without --debug.
    sys.exit(guard(lambda: _main(argv), debug=debug_enabled(argv)))


def _main(argv: list[str]) -> int:
    # The first words that are subcommands; any other first word is (part of) the prompt, as in Claude Code.
    if argv and argv[0] in SUBCOMMANDS:
        from agent.subcommands.dispatch import run_subcommand

        return run_subcommand(argv[0], argv[1:])
    if (argv and argv[0] in COMPLETION_FLAGS) or COMPLETE_VAR in os.environ:
        from agent.subcommands.dispatch import run_completion

        return run_completion(argv)
    try:
        ns = parse_argv(argv)
    except UnknownOption as exc:  # Claude Code's lines and exit code (recorded: cli_usage.json)
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR
    except UsageError as exc:
        return fail(f"{exc} (see agent --help)", EXIT_USAGE)
    if ns.help:
        sys.stdout.write(build_parser().format_help())
        return EXIT_OK
    if ns.version:
        sys.stdout.write(f"agent {__version__}\n")
        return EXIT_OK
    try:
        return run(ns)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)


def run(ns: argparse.Namespace) -> int:
    from agent.invocation import build_invocation
    from services.config import ConfigError

    try:
        inv = build_invocation(ns)  # UsageError on bad combinations; reads stdin for -p without a prompt
    except ConfigError as exc:
        return fail(str(exc))
    if not inv.settings.mock:
        from agent.sdk_preload import preload_sdk

        preload_sdk()  # the SDK's import overlaps settings, tools and the system prompt
    from services.trace import trace, turn_on

    if ns.debug:
        turn_on()

    trace("cli.start", mode="repl" if inv.interactive else "oneshot")
    try:
        if inv.interactive:
            from agent.repl.session import run_repl

            return run_repl(inv.app, continue_=inv.continue_, resume=inv.resume, initial_prompt=inv.prompt or None)
        if inv.init_only:
            from agent.headless.oneshot import run_init_only

            return run_init_only(inv)
        if inv.resume == PICK_SESSION:
            return fail("--resume without an id picks a session in the REPL; in one-shot runs pass the id",
                        EXIT_USAGE)
        if inv.input_format == "stream-json":
            from agent.headless.run import run_headless

            return run_headless(inv)
        from agent.headless.oneshot import run_oneshot

        return run_oneshot(inv)
    except ConfigError as exc:  # e.g. API_MAX_RETRIES=abc, read when the model is built
        return fail(str(exc))


if __name__ == "__main__":
    main()
