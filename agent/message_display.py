"""Claude Code's MessageDisplay hooks: a hook may rewrite what the user is shown of the assistant's text.

Display-only: the stored message, the transcript and what the model sees are untouched. In the REPL the
hook sees the reply as it streams, a batch of whole lines at a time (`index` counting up, `final` on the
last, which may end mid-line); in `-p` (as Claude Code 2.1.332 does) it sees each finished message once,
with `index` 0 and `final` true, and what it returns is what text, json and stream-json print.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

from services.events import AssistantEvent, RetryEvent, TextDeltaEvent
from services.hooks import Hooks
from services.messages import Message

EVENT = "MessageDisplay"


def _text(message: Message) -> str:
    # Claude Code joins the text blocks as they are, with nothing between them.
    return "".join(str(b.get("text") or "") for b in message.get("content") or [] if b.get("type") == "text")


def shown_copy(message: Message, shown: str) -> Message:
    """The message as displayed: its text blocks replaced by one block of `shown` where the first was."""
    content: list[Any] = []
    placed = False
    for block in message.get("content") or []:
        if block.get("type") != "text":
            content.append(block)
        elif not placed:
            content.append({**block, "text": shown})
            placed = True
    return {**message, "content": content}


class MessageDisplay:
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self.turn_id = str(uuid.uuid4())

    def active(self) -> bool:
        return self.hooks.wants(EVENT)

    def new_turn(self) -> None:
        self.turn_id = str(uuid.uuid4())

    async def _ask(self, message_id: str, index: int, final: bool, delta: str) -> str:
        try:
            shown = await self.hooks.message_display({"turn_id": self.turn_id, "message_id": message_id,
                                                      "index": index, "final": final, "delta": delta})
        except Exception:  # noqa: BLE001 - a broken display hook shows the original, never ends the turn
            return delta
        return delta if shown is None else shown

    async def whole(self, message: Message) -> Message:
        """A finished message as it is to be printed (`-p`): one hook call, final."""
        text = _text(message)
        if not text or not self.active():
            return message
        shown = await self._ask(str(uuid.uuid4()), 0, True, text)
        return message if shown == text else shown_copy(message, shown)

    async def stream(self, events: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The REPL's events with each message's streamed text passed through the hooks by whole lines."""
        if not self.active():
            async for ev in events:
                yield ev
            return
        pending, index, message_id = "", 0, str(uuid.uuid4())
        async for ev in events:
            if isinstance(ev, TextDeltaEvent):
                pending += ev.text
                cut = pending.rfind("\n") + 1
                if cut:
                    lines, pending = pending[:cut], pending[cut:]
                    shown = await self._ask(message_id, index, False, lines)
                    index += 1
                    if shown:
                        yield TextDeltaEvent(shown)
                continue
            if isinstance(ev, AssistantEvent) and (pending or index):
                shown = await self._ask(message_id, index, True, pending)
                if shown:
                    yield TextDeltaEvent(shown)
            if isinstance(ev, AssistantEvent | RetryEvent):  # a message ended, or its attempt was dropped
                pending, index, message_id = "", 0, str(uuid.uuid4())
            yield ev
