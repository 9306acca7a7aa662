"""Questions asked in the input area while a turn may run: the permission menu, a line of text (a note,
an MCP form field) and a numbered pick (sessions, /rewind). One question at a time; the input box's text is
kept aside and put back."""

from __future__ import annotations

from agent.repl.parts import Question, ReplParts
from agent.repl.permission_menu import rejection, visible
from agent.repl.question_menu import ask_questions
from agent.repl.state import AskEnded, AskStarted
from tools.permissions import Answer, PermissionRequest, PermissionResult


class QuestionsPart(ReplParts):
    def asking_kind(self) -> str | None:
        return self._question.kind if self._question is not None else None

    def move_selection(self, delta: int) -> None:
        if self._question is not None:
            self._question.selected = (self._question.selected + delta) % 3
            self._invalidate()

    def selected_choice(self) -> str:
        return ("once", "always", "note")[self._question.selected if self._question else 0]

    def answer(self, value: str | None) -> None:
        """Close the open question now, synchronously: keys that follow in the same read (type-ahead after
        the answer) must already reach the input box, not the question."""
        q = self._question
        if q is None:
            return
        self._question = None
        q.answer(value)
        self.session.default_buffer.reset(document=q.kept)
        self.dispatch(AskEnded())
        self.renderer.resume_live()

    async def _ask(self, question: Question) -> str | None:
        """Open a question in the input area; the input box's text is kept aside and put back after."""
        async with self._ask_lock:
            if not self.session.app.is_running:  # no prompt on screen: nobody to answer
                return None
            buf = self.session.default_buffer
            question.kept = buf.document
            buf.reset()
            self._question = question
            self.renderer.pause()
            self.renderer.asking = True
            self.dispatch(AskStarted())
            try:
                return await question.future
            finally:
                if self._question is question:  # cancelled (an interrupt) rather than answered
                    self.answer(None)

    async def ask_text(self, question: str) -> str | None:
        """One line from the user while a turn may be running (a note, a number, MCP forms)."""
        return await self._ask(Question("text", text=question))

    async def ask_yes_no(self, question: str) -> bool:
        answer = await self.ask_text(f"{question} [y/n]: ")
        return (answer or "").strip().lower() in ("y", "yes")

    async def pick(self, title: str, options: list[tuple[str, str]]) -> str | None:
        self.say(title, "bold")
        for i, (value, label) in enumerate(options, 1):
            self.say(f"{i:>2}. {label}" if value == str(i) else f"{i:>2}. {value}  {label}")
        answer = ((await self.ask_text("Number (Enter to cancel): ")) or "").strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1][0]
        for value, _ in options:
            if value == answer:
                return value
        self.say(f"No choice {answer!r}.", "yellow")
        return None

    async def ask(self, request: PermissionRequest) -> Answer | PermissionResult:
        """The permission question: Claude Code's numbered menu (Enter = Yes)."""
        if request.tool.name == "AskUserQuestion":  # the model's own questions: options, not a permission
            async with self._permission_lock:
                await self.notifier.waiting()
                return await ask_questions(self, request)
        async with self._permission_lock:  # parallel tool calls ask one at a time
            self.renderer.permission_question(request.tool.name, request.label, request.input, request.reason)
            await self.notifier.permission(request.tool.name)
            answer = await self._ask(Question("menu", request=request)) or "deny"
            note = ""
            if answer == "note":
                note = await self.ask_text("Tell the agent what to do differently (Enter to skip): ") or ""
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
        return result
