"""The interactive REPL: prompt-toolkit input, rich rendering, slash commands, interrupts, permission questions.

Input: a `PromptSession` with per-project history in the agent home, Enter submits, Alt-Enter / Esc-Enter
inserts a newline, a bracketed paste stays one message, Tab completes `/commands` and `@paths`, and a
bottom toolbar shows model, permission mode, `ctx ~N%` and cost.

A turn runs as an asyncio task while prompt-toolkit is not reading. During it, SIGINT (Ctrl-C) aborts
the turn through `engine.abort()` (a second press while it still runs cancels the task), and on a real
terminal a lone Esc does the same. At the prompt, Ctrl-C clears a non-empty line; on an empty one the
first press says `Press Ctrl-C again to exit` and a second within 1 s exits 130. Ctrl-D exits 0.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from rich.console import Console
from rich.text import Text

from agent.app import AppOptions, ResumeError, build_engine, load_resume_target, start_mcp
from agent.commands import CommandContext, CommandRouter, context_percent, default_router
from agent.errors import os_error_line, set_transcript
from agent.mcp_commands import register_mcp_commands, wait_for_prompt_server
from agent.permission_menu import menu_lines, rejection, visible
from agent.render import Renderer, make_console
from agent.skill_commands import register_skill_commands
from services.config import project_dir
from services.events import ToolEndEvent
from services.session import SessionLocked, privacy_warnings
from services.trace import trace
from tools.checkpoints import CHECKPOINTS_KEY, CheckpointStore
from tools.permissions import Answer, PermissionRequest, PermissionResult
from tools.todo import format_todos

EXIT_OK, EXIT_INTERRUPTED = 0, 130
DOUBLE_PRESS_WINDOW = 1.0  # seconds: a second Ctrl-C at an empty prompt within this exits
PROMPT = "> "
MAX_PATH_COMPLETIONS = 200


def history_path(cwd: Path) -> Path:
    return project_dir(cwd) / "prompt_history"


class ReplCompleter(Completer):
    """`/name` at the start of the line completes commands; a word starting with `@` completes paths."""

    def __init__(self, router: CommandRouter, cwd: Path):
        self.router = router
        self.cwd = cwd
        self.mcp: Any = None  # set once MCP servers start: `@server:uri` completion

    async def get_completions_async(self, document: Document, complete_event: Any):  # noqa: ANN201
        for c in self.get_completions(document, complete_event):
            yield c
        word = document.get_word_before_cursor(WORD=True)
        if self.mcp is not None and word.startswith("@") and not document.text_before_cursor.startswith("/"):
            from agent.mcp_commands import mention_completions

            for text, meta in await mention_completions(self.mcp, word[1:]):
                yield Completion("@" + text, start_position=-len(word), display_meta=meta)

    def get_completions(self, document: Document, complete_event: Any) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before and "\n" not in before:
            typed = before[1:].lower()
            for name in self.router.names():
                if name.lower().startswith(typed):
                    cmd = self.router.get(name)
                    yield Completion("/" + name, start_position=-len(before), display_meta=cmd.help if cmd else "")
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._paths(word[1:])

    def _paths(self, fragment: str) -> Iterable[Completion]:
        head, _, prefix = fragment.rpartition("/")
        base = Path(head).expanduser() if head else Path(".")
        directory = base if base.is_absolute() else self.cwd / base
        try:
            entries = sorted(directory.iterdir(), key=lambda p: p.name)
        except OSError:
            return
        count = 0
        for entry in entries:
            name = entry.name
            if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
                continue
            suffix = "/" if entry.is_dir() else ""
            yield Completion(name + suffix, start_position=-len(prefix), display=name + suffix)
            count += 1
            if count >= MAX_PATH_COMPLETIONS:
                return


def _key_bindings(cycle_mode: Callable[[], None] | None = None) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("escape", "enter")
    @kb.add("c-j")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @kb.add("enter")
    def _enter(event: Any) -> None:
        buf = event.current_buffer
        if buf.document.text_before_cursor.endswith("\\") and not buf.document.text_after_cursor:
            buf.delete_before_cursor(1)  # `\` then Enter: a newline, as in Claude Code
            buf.insert_text("\n")
        else:
            buf.validate_and_handle()

    @kb.add("escape", "escape")
    def _rewind(event: Any) -> None:  # Esc Esc at the prompt: /rewind, as in Claude Code
        event.app.exit(result="/rewind")

    @kb.add("s-tab")
    def _cycle(event: Any) -> None:
        if cycle_mode is not None:
            cycle_mode()
            event.app.invalidate()

    @kb.add("c-c")
    def _ctrl_c(event: Any) -> None:
        buf = event.current_buffer
        if buf.text:
            buf.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return kb


def _menu_bindings(state: dict[str, int]) -> KeyBindings:
    """The permission menu's keys: arrows/j/k move, Enter takes the highlighted row, digits and y/a/n pick,
    Esc/Ctrl-C/Ctrl-D refuse."""
    kb = KeyBindings()
    picks = {"1": "once", "2": "always", "3": "note", "y": "once", "Y": "once", "a": "always", "A": "always",
             "n": "deny", "N": "deny"}
    for key, value in picks.items():

        def _make(v: str) -> Callable[[Any], None]:
            def handler(event: Any) -> None:
                event.app.exit(result=v)

            return handler

        kb.add(key)(_make(value))

    @kb.add("up")
    @kb.add("k")
    def _up(event: Any) -> None:
        state["selected"] = (state["selected"] - 1) % 3
        event.app.invalidate()

    @kb.add("down")
    @kb.add("j")
    @kb.add("tab")
    def _down(event: Any) -> None:
        state["selected"] = (state["selected"] + 1) % 3
        event.app.invalidate()

    @kb.add("enter")
    def _enter(event: Any) -> None:
        event.app.exit(result=("once", "always", "note")[state["selected"]])

    @kb.add("escape", eager=True)
    @kb.add("c-c")
    @kb.add("c-d")
    def _deny(event: Any) -> None:
        event.app.exit(result="deny")

    return kb


class Repl:
    def __init__(
        self,
        opts: AppOptions,
        deps: Any = None,
        *,
        input: Any = None,
        output: Any = None,
        console: Console | None = None,
        history: History | None = None,
        clock: Callable[[], float] = time.monotonic,
        router: CommandRouter | None = None,
        raw_stdin: bool | None = None,
    ):
        self.opts = opts
        self.cwd = opts.cwd
        self.console = console or make_console()
        self.clock = clock
        self.router = router or default_router()
        self.engine = build_engine(opts, deps=deps, ask=self.ask)
        register_skill_commands(self.router, getattr(self.engine, "skills", []) or [])
        self.mcp: Any = None
        self.renderer = Renderer(self.console, {t.name: t for t in self.engine.tools}, self.cwd)
        self._pt_input = input
        self._pt_output = output
        if history is None:
            path = history_path(self.cwd)
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                history = FileHistory(str(path))
            except OSError:
                history = InMemoryHistory()
        self.session: PromptSession = PromptSession(
            input=input,
            output=output,
            history=history,
            completer=ReplCompleter(self.router, self.cwd),
            complete_while_typing=False,
            key_bindings=_key_bindings(self.cycle_mode),
            bottom_toolbar=self.toolbar,
            prompt_continuation=lambda width, line_number, is_soft_wrap: " " * width,
            enable_history_search=False,
        )
        self._question_session: PromptSession = PromptSession(input=input, output=output)
        self._last_idle_interrupt: float | None = None
        self._turn_task: asyncio.Task | None = None
        self._aborting = False
        self._terminating = False
        self._ask_lock = asyncio.Lock()
        # Esc-to-interrupt needs the real terminal (cbreak mode + a reader on stdin).
        if raw_stdin is None:
            raw_stdin = input is None and sys.stdin.isatty() and os.name == "posix"
        self._raw_stdin = raw_stdin
        self._saved_tty: Any = None
        self._sigint_installed = False
        self._typeahead = ""  # text typed while a turn ran (cbreak mode), offered at the next prompt
        self.queued: list[str] = []  # lines submitted (Enter) while a turn ran: sent when it ends, in order
        self._exit_after_turn = False  # Ctrl-D typed while a turn ran
        self._pending_inject: list[Any] = []  # `!command` runs, given to the model with the next prompt
        self.ctx = CommandContext(self.engine, self.console, self.cwd, self.router, opts=opts, pick=self.pick)
        self.ctx.extras["repl"] = self
        # Checkpoints of the files each turn's Edit/Write calls change (/rewind, Esc Esc).
        self.checkpoints = CheckpointStore(self.engine.session_dir / "checkpoints", self.engine.record)
        self.engine.state.extras[CHECKPOINTS_KEY] = self.checkpoints
        self.router.register("rewind", self.cmd_rewind, "restore the conversation and/or code to an earlier prompt")
        self.next_default = ""  # text put back in the input box (a rewound prompt)

    # -- the prompt --------------------------------------------------------------------------
    def toolbar(self) -> str:
        e = self.engine
        cost = e.usage.cost(e.config.model)
        queued = f" · {len(self.queued)} queued" if self.queued else ""
        return (f" {e.config.model} · {e.gate.mode} (shift+tab) · ctx ~{context_percent(e)}% · ${cost:.2f}"
                f"{queued} · /help")

    def cycle_mode(self) -> None:
        """Shift+Tab: default -> acceptEdits -> plan -> default (bypassPermissions only if it was chosen)."""
        order = ["default", "acceptEdits", "plan"]
        if self.opts.permission_mode == "bypassPermissions":
            order.append("bypassPermissions")
        mode = self.engine.gate.mode
        self.engine.gate.mode = order[(order.index(mode) + 1) % len(order)] if mode in order else "default"

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    async def _question(self, message: str, key_bindings: KeyBindings | None = None) -> str:
        # A PromptSession keeps the key bindings of its last prompt: always pass this question's own.
        return await self._question_session.prompt_async(
            message, key_bindings=key_bindings or KeyBindings(), set_exception_handler=False
        )

    async def pick(self, title: str, options: list[tuple[str, str]]) -> str | None:
        self.say(title, "bold")
        for i, (value, label) in enumerate(options, 1):
            self.say(f"{i:>2}. {value}  {label}")
        try:
            answer = (await self._question("Number (Enter to cancel): ")).strip()
        except (KeyboardInterrupt, EOFError):
            return None
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1][0]
        for value, _ in options:
            if value == answer:
                return value
        self.say(f"No session {answer!r}.", "yellow")
        return None

    # -- permission questions ------------------------------------------------------------------
    async def ask(self, request: PermissionRequest) -> Answer | PermissionResult:
        async with self._ask_lock:
            self.renderer.permission_question(request.tool.name, request.label, request.input, request.reason)
            self._stop_esc_reader()
            state = {"selected": 0}
            try:
                answer = await self._question_session.prompt_async(
                    lambda: FormattedText(menu_lines(request, state["selected"])),
                    key_bindings=_menu_bindings(state), set_exception_handler=False)
                note = ""
                if answer == "note":
                    note = await self._question("Tell the agent what to do differently (Enter to skip): ")
            except (KeyboardInterrupt, EOFError):
                answer, note = "deny", ""
            finally:
                # prompt-toolkit took SIGINT over while it was reading; take it back for the turn.
                if self._turn_task is not None and not self._turn_task.done():
                    self._install_sigint()
                    self._start_esc_reader()
            result: Answer | PermissionResult
            if answer == "once":
                self.say("Allowed once.", "dim")
                result = "once"
            elif answer == "always":
                rule = getattr(request, "always_rule", None) or f"{request.tool.name} (this session)"
                self.say(f"Allowed from now on: {visible(rule)}", "dim")
                result = "always"
            elif answer == "note" and note.strip():
                self.say("Denied; the agent was told what to do instead.", "yellow")
                result = PermissionResult("deny", message=rejection(note))
            else:
                self.say("Denied.", "yellow")
                result = "deny"
            self.renderer.resume_live()
            return result

    # -- interrupts ----------------------------------------------------------------------------
    def interrupt(self) -> None:
        """Ctrl-C while a turn runs: abort it; a second press while it still runs cancels it."""
        task = self._turn_task
        if task is None or task.done():
            return
        if not self._aborting:
            self._aborting = True
            if self.engine.abort():
                return
        task.cancel()

    def _terminate(self) -> None:
        """SIGTERM / SIGHUP (issue 15): end like Ctrl-C ends a turn, then leave the REPL."""
        self._terminating = True
        task = self._turn_task
        if task is not None and not task.done():
            self._aborting = True
            if not self.engine.abort():
                task.cancel()
        for session in (self.session, self._question_session):
            app = session.app
            if app.is_running:
                app.exit(exception=EOFError())

    def _esc(self) -> None:
        task = self._turn_task
        if task is not None and not task.done() and not self._aborting:
            self._aborting = True
            if not self.engine.abort():
                task.cancel()

    def _install_sigint(self) -> None:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.interrupt)
            self._sigint_installed = True
        except (NotImplementedError, RuntimeError, ValueError):
            self._sigint_installed = False

    def _remove_sigint(self) -> None:
        if self._sigint_installed:
            try:
                asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
            self._sigint_installed = False

    def _start_esc_reader(self) -> None:
        if not self._raw_stdin or self._saved_tty is not None:
            return
        try:
            import termios
            import tty

            fd = sys.stdin.fileno()
            self._saved_tty = termios.tcgetattr(fd)
            tty.setcbreak(fd, termios.TCSANOW)  # keys arrive at once; Ctrl-C still raises SIGINT
            asyncio.get_running_loop().add_reader(fd, self._on_stdin, fd)
        except Exception:
            self._saved_tty = None

    def _on_stdin(self, fd: int) -> None:
        try:
            data = os.read(fd, 1024)
        except OSError:
            return
        self._take_keys(data.decode("utf-8", "ignore"))

    def _take_keys(self, text: str) -> None:
        """Keys typed while a turn runs: a lone Esc interrupts; other text is kept for the next prompt."""
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\x1b":
                if i + 1 < len(text) and text[i + 1] in "[O":  # an arrow / function key: skip it
                    i += 2
                    while i < len(text) and not ("@" <= text[i] <= "~"):
                        i += 1
                    i += 1
                    continue
                self._esc()
            elif ch in "\x7f\x08":
                self._typeahead = self._typeahead[:-1]
            elif ch in "\r\n":
                # Enter while a turn runs queues the line; it is sent when the turn ends (Claude Code's way).
                line, self._typeahead = self._typeahead.strip(), ""
                if line:
                    self.queued.append(line)
                    self.say(f"queued: {visible(line)}", "dim")
            elif ch == "\x04":
                self._exit_after_turn = True
                self.say("Ctrl-D: exiting when this turn ends", "dim")
            elif ch.isprintable() or ch == "\t":
                self._typeahead += ch
            i += 1

    def _stop_esc_reader(self) -> None:
        if self._saved_tty is None:
            return
        try:
            import termios

            fd = sys.stdin.fileno()
            asyncio.get_running_loop().remove_reader(fd)
            termios.tcsetattr(fd, termios.TCSANOW, self._saved_tty)
        except Exception:
            pass
        self._saved_tty = None

    # -- turns ---------------------------------------------------------------------------------
    async def run_turn(self, text: str, inject: list | None = None) -> None:
        inject = [*self._carry_over(), *(inject or [])]
        self.checkpoints.directory = self.engine.session_dir / "checkpoints"  # /clear starts a new session
        self.checkpoints.record = self.engine.record
        self.checkpoints.begin_turn(-1)  # set once the prompt is in the history (first event below)
        async def consume() -> None:
            async for ev in self.engine.run_turn(text, inject_before=inject or None):
                if self.checkpoints.turn < 0:  # the turn's checkpoints are keyed by its prompt's index
                    self.checkpoints.begin_turn(_last_prompt_index(self.engine.messages))
                self.renderer.event(ev)
                if isinstance(ev, ToolEndEvent) and ev.name == "TodoWrite" and ev.ok:
                    # The plan changed: show it compactly.
                    self.say(format_todos(self.engine.state.extras.get("todos") or []), "dim")

        self._aborting = False
        task = asyncio.ensure_future(consume())
        self._turn_task = task
        self._install_sigint()
        self._start_esc_reader()
        try:
            await asyncio.wait({task})
        finally:
            self._stop_esc_reader()
            self._remove_sigint()
            self._turn_task = None
            self.renderer.close()
        if task.cancelled():
            self.say("Interrupted", "yellow")
        elif task.exception() is not None:
            exc = task.exception()
            if isinstance(exc, OSError):  # disk full, read-only...: one line naming the path (issue 21)
                self.say(os_error_line(exc), "bold red")
            else:
                self.say(f"Error: {type(exc).__name__}: {exc}", "bold red")

    # -- the loop ------------------------------------------------------------------------------
    def banner(self) -> None:
        e = self.engine
        head = Text("react-agent", style="bold")
        head.append(f"  {e.config.model} · {e.gate.mode} · {self.cwd}", style="dim")
        self.console.print(head)
        self.say("/help for commands · Alt-Enter for a new line · Ctrl-C interrupts · Ctrl-D exits", "dim")

    def start(self, continue_: bool = False, resume: str | None = None) -> int | None:
        """Resume the requested session, if any. Returns an exit code when the REPL cannot start."""
        try:
            loaded = load_resume_target(self.cwd, continue_, resume)
        except ResumeError as exc:
            self.say(f"error: {exc}", "bold red")
            return 1
        self.banner()
        set_transcript(lambda: self.engine.paths.transcript)
        for warning in privacy_warnings(self.cwd):
            self.say(f"warning: {warning}", "yellow")
        if loaded is not None:
            for warning in loaded.warnings:
                self.say(f"warning: {warning}", "yellow")
            try:
                fork = (self.opts.session_id or True) if self.opts.fork_session else False
                self.engine.resume(loaded, fork=fork)
            except SessionLocked as exc:
                self.say(f"error: {exc}", "bold red")
                return 1
            self.checkpoints.load(loaded.records)
            self.show_past(loaded.messages)
            self.say(f"Resumed session {loaded.session_id} ({len(loaded.messages)} messages).", "dim")
        return None

    async def cmd_rewind(self, ctx: Any, args: str) -> None:
        """Pick an earlier prompt; restore the conversation to just before it, the code, or both."""
        prompts = [(i, m) for i, m in enumerate(self.engine.messages)
                   if m.get("role") == "user" and not m.get("meta") and _prompt_text(m)]
        if not prompts:
            self.say("Nothing to rewind to yet.", "dim")
            return
        options = [(str(i), _prompt_text(m).splitlines()[0][:100]) for i, m in prompts[-20:]]
        picked = await self.pick("Rewind to just before which prompt?", options)
        if picked is None:
            return
        index = int(picked)
        changed = self.checkpoints.files_since(index)
        how = await self.pick("Restore:", [("both", f"conversation and code ({len(changed)} files)"),
                                           ("conversation", "conversation only"),
                                           ("code", f"code only ({len(changed)} files)")])
        if how is None:
            return
        if how in ("both", "code"):
            restored, problems = self.checkpoints.restore(index)
            self.say(f"Restored {len(restored)} file(s)." + (" Bash changes are not restored." if restored else ""),
                     "dim")
            for p in problems:
                self.say(f"not restored: {visible(p)}", "yellow")
        if how in ("both", "conversation"):
            text = _prompt_text(self.engine.messages[index])
            self.engine.replace_history(self.engine.messages[:index])
            self.next_default = text  # the prompt comes back in the input box, to edit and send again
            self.say(f"Conversation rewound to before: {visible(text.splitlines()[0][:100])}", "dim")

    def show_past(self, messages: list[Any], limit: int = 40) -> None:
        """The earlier conversation, compactly: the user's prompts, the answers' first lines, tool calls."""
        from agent.render import past_lines

        lines = past_lines(messages)
        if len(lines) > limit:
            self.say(f"… {len(lines) - limit} earlier lines", "dim")
            lines = lines[-limit:]
        for style, text in lines:
            self.console.print(Text(visible(text), style=style))

    async def handle_line(self, line: str) -> int | None:
        """One submitted line: a slash command or a message to the model. Returns an exit code to stop."""
        text = line.strip()
        if not text:
            return None
        if text.startswith("!"):
            await self.bash_mode(text[1:].strip())
            return None
        if text.startswith("#") and not text.startswith("#!"):
            await self.remember(text[1:].strip())
            return None
        if self.router.is_command(text):
            if self.mcp is not None:  # a prompt of a server still starting: wait for it
                await wait_for_prompt_server(self.router, self.mcp, text)
            result = await self.router.dispatch(text, self.ctx)
            if result.exit:
                return result.exit_code
            if result.run_turn is not None:
                turn_text, inject = result.run_turn
                await self.run_turn(turn_text, inject)
            return None
        inject: list = []
        if self.mcp is not None and "@" in text:
            from services.mcp.content import expand_mentions

            out = await expand_mentions(self.mcp, text, self.engine.session_dir / "tool-results")
            for w in out.warnings:
                self.say(f"warning: {w}", "yellow")
            for n in out.notices:
                self.say(n, "dim")
            inject = out.messages
        await self.run_turn(text, inject or None)
        return None

    async def ask_text(self, question: str) -> str | None:
        """One line from the user while a turn may be running (MCP forms, prompt arguments)."""
        async with self._ask_lock:
            self.renderer.pause()
            self._stop_esc_reader()
            try:
                # Empty bindings: prompt-toolkit keeps the last call's (the keys of a permission question).
                return await self._question(question, key_bindings=KeyBindings())
            except (KeyboardInterrupt, EOFError):
                return None
            finally:
                if self._turn_task is not None and not self._turn_task.done():
                    self._install_sigint()
                    self._start_esc_reader()
                self.renderer.resume_live()

    async def ask_yes_no(self, question: str) -> bool:
        answer = await self.ask_text(f"{question} [y/n]: ")
        return (answer or "").strip().lower() in ("y", "yes")

    def _carry_over(self) -> list[Any]:
        """What the model is told before the next prompt: `!command` runs and finished background tasks."""
        from services.messages import user_message
        from tools.background_tasks import registry

        out, self._pending_inject = self._pending_inject, []
        for note in registry(self.engine.state).take_notifications():
            out.append(user_message(note, meta={"origin": "task-notification"}))
        return out

    async def bash_mode(self, command: str) -> None:
        """`!command`: run it now in the session's directory; command and output go to the next prompt."""
        from services.messages import user_message
        from tools.bash import run_direct

        if not command:
            self.say("Usage: !command (runs in bash; its output goes to the model with your next message)", "dim")
            return
        out, code = await run_direct(command, self.engine.state.cwd)
        if out:
            self.console.print(Text(visible(out.rstrip("\n"))))
        if code:
            self.say(f"exit {code}", "yellow")
        self._pending_inject += [
            user_message(f"<bash-input>{command}</bash-input>", meta={"origin": "bash-mode"}),
            user_message(f"<bash-stdout>{out.rstrip()}</bash-stdout><bash-stderr></bash-stderr>"
                         + (f"\n[exit code {code}]" if code else ""), meta={"origin": "bash-mode"}),
        ]

    async def remember(self, note: str) -> None:
        """`# note`: append the note to a memory file the agent reads (project memory, or the user's own)."""
        from services.config import agent_home

        if not note:
            self.say("Usage: # note to remember", "dim")
            return
        project = Path(self.engine.prompt_builder.memory_path) if getattr(self.engine, "prompt_builder", None) \
            else self.cwd / ".agents" / "memory" / "MEMORY.md"
        user = agent_home() / "AGENTS.md"
        choice = await self.pick("Save this memory to:", [("1", f"project memory  {project}"),
                                                          ("2", f"user memory     {user}")])
        if choice is None:
            self.say("Not saved.", "dim")
            return
        target = project if choice == "1" else user
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "a", encoding="utf-8") as fh:
                fh.write(("" if not target.stat().st_size or target.read_text(encoding="utf-8").endswith("\n")
                          else "\n") + f"- {note}\n")
        except OSError as exc:
            self.say(f"Could not save to {target}: {exc.strerror}", "red")
            return
        self.say(f"Saved to {target}", "dim")

    async def start_mcp(self) -> None:
        """Start MCP servers in the background (if any are configured): `/mcp`, prompt commands as servers
        become ready, and the answers to their sampling and elicitation requests. Their tools reach the
        model before its next call (the engine's refresher), with a notice."""
        from agent.mcp_hooks import make_elicitation_handler, make_sampling_handler

        self.mcp = await start_mcp(self.cwd, warn=lambda w: self.say(f"warning: {w}", "yellow"),
                                   opts=self.opts)
        register_mcp_commands(self.router, self.mcp, ask=self.ask_text)
        if self.mcp is not None:
            from agent.app import mcp_refresher

            self.session.completer.mcp = self.mcp  # type: ignore[union-attr]
            self.mcp.handlers.progress = self.renderer.progress
            notify = lambda text: self.say(text, "dim")  # noqa: E731
            self.mcp.handlers.sample = make_sampling_handler(self.engine, self.ask_yes_no, notify)
            self.mcp.handlers.elicit = make_elicitation_handler(self.ask_text, notify)
            blocked = {r for r in self.engine.gate.disallowed_tools if "(" not in r}
            refresh = mcp_refresher(self.engine, self.mcp, blocked)

            def refresh_and_render() -> list[tuple[str, str]]:
                notices = refresh()
                self.renderer.tools.update({t.name: t for t in self.engine.tools})
                return notices

            self.engine.refresh_tools = refresh_and_render
            self.engine.prompt_source = _with_instructions(self.engine.prompt_source, self.mcp)

    @staticmethod
    def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # A stray task's exception (a tool's helper task, say) must not garble the screen.
        exc = context.get("exception")
        trace("repl.loop_exception", message=context.get("message", ""), error=type(exc).__name__ if exc else "")

    async def run(self, continue_: bool = False, resume: str | None = None, initial_prompt: str | None = None) -> int:
        asyncio.get_running_loop().set_exception_handler(self._loop_exception)
        self._terminating = False
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                asyncio.get_running_loop().add_signal_handler(sig, self._terminate)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        from agent.commands import cmd_resume
        from services.session import PICK_SESSION

        pick = resume == PICK_SESSION
        code = self.start(continue_, None if pick else resume)
        if code is None and pick:
            await cmd_resume(self.ctx, "")
        if code is not None:
            self.engine.close()
            return code
        try:
            await self.start_mcp()
            if initial_prompt:  # `agent "task"` on a terminal: the task is the first message
                code = await self.handle_line(initial_prompt)
                if code is not None:
                    return code
            while True:
                if self.queued:  # lines typed during the last turn, in order
                    line = self.queued.pop(0)
                    self.say(f"{PROMPT}{visible(line)}", "bold")
                    code = await self.handle_line(line)
                    if code is not None:
                        return code
                    continue
                if self._exit_after_turn:
                    return EXIT_OK
                try:
                    typed, self._typeahead = (self.next_default or self._typeahead.strip("\n")), ""
                    self.next_default = ""
                    line = await self.session.prompt_async(PROMPT, default=typed, set_exception_handler=False)
                except KeyboardInterrupt:
                    now = self.clock()
                    last = self._last_idle_interrupt
                    if last is not None and now - last <= DOUBLE_PRESS_WINDOW:
                        return EXIT_INTERRUPTED
                    self._last_idle_interrupt = now
                    self.say("Press Ctrl-C again to exit", "dim")
                    continue
                except EOFError:
                    return EXIT_INTERRUPTED if self._terminating else EXIT_OK
                self._last_idle_interrupt = None
                code = await self.handle_line(line)
                if code is not None:
                    return code
                if self._terminating:
                    return EXIT_INTERRUPTED
        finally:
            self.renderer.close()
            self.engine.close()  # background tasks are killed with the session
            if self.mcp is not None:
                await self.mcp.close()


def _with_instructions(source: Any, mcp: Any) -> Any:
    """The system prompt plus the MCP servers' instructions (sorted by server: byte-stable)."""
    from agent.app import _with_mcp_instructions

    return lambda: _with_mcp_instructions(source(), mcp)


def ask_folder_trust(cwd: Path, home: Path) -> bool:
    """Issue 15: on first open of a folder with its own configuration, ask once whether to trust it.

    The answer is recorded in the agent home either way ("no" is not asked again: `agent trust` changes
    it). A folder without project configuration is not asked about and stays untrusted.
    """
    from services.settings import load_settings
    from services.trust import folder_requests, trust

    requests = folder_requests(cwd, load_settings(cwd, home, trusted=False).ignored)
    if not requests.has_config or _trust_answered(cwd, home):
        return False
    out = sys.stderr
    out.write(f"\nThis folder has its own agent configuration: {cwd}\n")
    out.write(f"Files: {', '.join(requests.files)}\n")
    for want in requests.wants or ["only restrictions (deny/ask rules)"]:
        out.write(f"  - {want}\n")
    out.write("Trusting it lets these run and apply. Only trust folders whose contents you trust.\n")
    out.write("Trust this folder? [y/N] ")
    out.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except (KeyboardInterrupt, EOFError, OSError):
        answer = ""
    _record_answer(cwd, home)
    if answer in ("y", "yes"):
        trust(cwd, home)
        out.write("Trusted. (agent trust --revoke undoes it.)\n")
        return True
    out.write("Not trusted: only its deny/ask rules apply. (agent trust trusts it later.)\n")
    return False


def _answered_file(home: Path) -> Path:
    return home / "trust-asked.txt"


def _trust_answered(cwd: Path, home: Path) -> bool:
    try:
        return str(cwd.resolve()) in _answered_file(home).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False


def _record_answer(cwd: Path, home: Path) -> None:
    try:
        home.mkdir(parents=True, exist_ok=True)
        with _answered_file(home).open("a", encoding="utf-8") as fh:
            fh.write(str(cwd.resolve()) + "\n")
    except OSError:
        pass


def run_repl(opts: AppOptions, continue_: bool = False, resume: str | None = None,
             initial_prompt: str | None = None) -> int:
    repl = Repl(opts)
    try:
        return asyncio.run(repl.run(continue_=continue_, resume=resume, initial_prompt=initial_prompt))
    except KeyboardInterrupt:  # a SIGINT that landed between the prompt and a turn
        sys.stderr.write("Interrupted\n")
        return EXIT_INTERRUPTED


def _prompt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text").strip()


def _last_prompt_index(messages: list[dict[str, Any]]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not messages[i].get("meta") and _prompt_text(messages[i]):
            return i
    return len(messages)
