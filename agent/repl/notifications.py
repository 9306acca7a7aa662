"""The REPL's notifications: when a question waits for the user, or a long turn ends, the terminal is rung
(services/notify.py picks the channel and its bytes) and the `Notification` hooks run, with Claude Code's
messages and types. A terminal that cannot be written is left alone; a hook's failure is its own report."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from services import notify
from services.hooks import Hooks
from services.trace import trace

DEFAULT_TURN_SECONDS = 60.0  # a turn at least this long rings when it ends


class TerminalNotifier:
    def __init__(self, write: Callable[[str], None], hooks: Callable[[], Hooks], setting: str | None,
                 env: Mapping[str, str], turn_seconds: float = DEFAULT_TURN_SECONDS) -> None:
        self.write = write
        self.hooks = hooks
        self.channel = notify.resolve(setting, env)
        self.env = dict(env)
        self.turn_seconds = turn_seconds

    async def notify(self, message: str, notification_type: str) -> None:
        seq = notify.sequence(self.channel, message, self.env)
        if seq:
            with contextlib.suppress(OSError):
                self.write(seq)
        trace("repl.notify", channel=self.channel, type=notification_type)
        with contextlib.suppress(Exception):  # a hook never stops the question from being asked
            await self.hooks().notification(message, notification_type)

    async def permission(self, tool: str) -> None:
        await self.notify(notify.PERMISSION_MESSAGE.format(tool=tool), notify.PERMISSION_TYPE)

    async def waiting(self) -> None:
        await self.notify(notify.WAITING_MESSAGE, notify.IDLE_TYPE)

    async def turn_ended(self, seconds: float) -> None:
        if seconds >= self.turn_seconds:
            await self.waiting()
