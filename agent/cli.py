"""The command line: `agent` (REPL), `agent "prompt"` / `agent -p` (one shot), with typer.

Kept light at import time: `--help` and `--version` must be instant, so the SDK and the engine are
imported only when a conversation is about to run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from agent import __version__
from services.session import PICK_SESSION

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MAX_TURNS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
OUTPUT_FORMATS = ("text", "json", "stream-json")

HELP = """A ReAct coding agent for the terminal, driven by Claude.

  agent                      start the interactive REPL
  agent "fix the tests"      run one task and exit
  echo "task" | agent -p     read the task from stdin

Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL for any Anthropic-compatible
server). Without a key, --mock runs a built-in offline model that drives the real tools.
"""

app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agent {__version__}")
        raise typer.Exit(EXIT_OK)


def fail(message: str, code: int = EXIT_ERROR) -> None:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


@app.command(help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
def run(
    prompt: Annotated[list[str] | None, typer.Argument(help="The task. Omit it to start the REPL.")] = None,
    print_mode: Annotated[
        bool, typer.Option("--print", "-p", help="One-shot: the prompt from the argument, else from stdin.")
    ] = False,
    model: Annotated[str | None, typer.Option("--model", help="Model id (default: ANTHROPIC_MODEL).")] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1, help="Model calls per task (100).")] = None,
    output_format: Annotated[
        str, typer.Option("--output-format", help="One-shot output: text | json | stream-json.")
    ] = "text",
    permission_mode: Annotated[
        str,
        typer.Option(
            "--permission-mode", help="default | acceptEdits | plan | bypassPermissions."
        ),
    ] = "default",
    allowed_tools: Annotated[
        list[str] | None, typer.Option("--allowedTools", help="Allow rule, e.g. 'Bash(git status:*)'.")
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None, typer.Option("--disallowedTools", help="Deny rule, e.g. 'Bash(rm:*)'.")
    ] = None,
    cwd: Annotated[Path | None, typer.Option("--cwd", "-C", help="Work in this directory.")] = None,
    mock: Annotated[bool, typer.Option("--mock", help="Use the offline mock model (no key, no network).")] = False,
    continue_: Annotated[
        bool, typer.Option("--continue", "-c", help="Resume the most recent session of this project.")
    ] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")] = None,
    fork_session: Annotated[
        bool, typer.Option("--fork-session", help="With -c/-r: continue as a new session (copy of the history).")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal and OS errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    from services.config import ConfigError, Settings, has_credentials, load_dotenv_file

    if output_format not in OUTPUT_FORMATS:
        fail(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}, got {output_format!r}", EXIT_USAGE)
    from tools.permissions import MODES

    if permission_mode not in MODES:
        fail(f"--permission-mode must be one of {', '.join(MODES)}, got {permission_mode!r}", EXIT_USAGE)
    workdir = (cwd or Path.cwd()).expanduser().resolve()
    if not workdir.is_dir():
        fail(f"--cwd {workdir}: not a directory", EXIT_USAGE)
    os.chdir(workdir)
    try:
        load_dotenv_file(workdir)
        settings = Settings.from_env()
    except ConfigError as exc:
        fail(str(exc))
    if model:
        settings.model = model
    if max_turns:
        settings.max_turns = max_turns
    if mock:
        settings.mock = True
        os.environ["QUERY_MOCK"] = "1"

    text = " ".join(prompt or []).strip()
    interactive = not print_mode and not text and sys.stdin.isatty()
    if not interactive and not text:
        text = "" if sys.stdin.isatty() else sys.stdin.read().strip()
        if not text:
            fail("no prompt: pass it as an argument or on stdin (agent -p < task.txt)", EXIT_USAGE)
    if not settings.mock and not has_credentials():
        fail(
            "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), or run with --mock to try the "
            "offline model"
        )

    from agent.app import AppOptions
    from services.trace import trace

    opts = AppOptions(
        cwd=workdir,
        settings=settings,
        permission_mode=permission_mode,
        allowed_tools=list(allowed_tools or []),
        disallowed_tools=list(disallowed_tools or []),
        interactive=interactive,
        fork_session=fork_session,
    )
    trace("cli.start", mode="repl" if interactive else "oneshot")
    try:
        if interactive:
            from agent.repl import run_repl

            code = run_repl(opts, continue_=continue_, resume=resume)
        else:
            if resume == PICK_SESSION:
                fail("--resume without an id picks a session in the REPL; in one-shot runs pass the id", EXIT_USAGE)
            from agent.oneshot import run_oneshot

            code = run_oneshot(opts, text, output_format, continue_=continue_, resume=resume)
    except ConfigError as exc:  # e.g. API_MAX_RETRIES=abc, read when the model is built
        fail(str(exc))
    raise typer.Exit(code)


def with_resume_sentinel(argv: list[str]) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg in ("-r", "--resume") and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out.insert(i + 1, PICK_SESSION)
            break
    return out


def _run_app() -> int:
    try:
        app(args=with_resume_sentinel(sys.argv[1:]), prog_name="agent")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return EXIT_OK


def main() -> None:
    from agent.errors import guard

    # One guard for every entry point (REPL, one-shot in each format, subcommands): OS errors are one
    # line, a closed pipe exits quietly, no traceback without --debug (issue 21).
    sys.exit(guard(_run_app))


if __name__ == "__main__":
    main()
