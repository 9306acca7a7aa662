"""The session's spending cap (`--max-budget-usd`, settings' `maxBudgetUsd`) as pure logic.

The front ends ask it before each model request (`refuse`) and after each turn (`notices`); it says each
threshold once per limit: a warning when spending passes 80%, the stop line when it reaches the limit.
Raising the limit (`/budget <usd>`) arms both again.
"""

from __future__ import annotations

from dataclasses import dataclass

WARN_FRACTION = 0.8


def money(value: float) -> str:
    return f"${value:.2f}" if value >= 1 or value == 0 else f"${value:.4f}".rstrip("0").rstrip(".")


def spent_line(limit: float) -> str:
    return f"The budget of {money(limit)} is spent: no further request is sent. /budget <usd> raises it."


@dataclass
class Budget:
    limit: float | None = None
    warned: bool = False  # the 80% line was said for this limit
    stopped: bool = False  # the stop line was said for this limit

    def is_spent(self, spent: float) -> bool:
        return self.limit is not None and spent >= self.limit

    def refuse(self, spent: float) -> str | None:
        """Before a request: the reason it must not be sent, or None."""
        if not self.is_spent(spent):
            return None
        assert self.limit is not None
        self.warned = self.stopped = True  # this line says it all
        return spent_line(self.limit)

    def notices(self, spent: float) -> list[str]:
        """After a request or a turn: the lines due now (each said once per limit)."""
        if self.limit is None:
            return []
        if spent >= self.limit:
            if self.stopped:
                return []
            self.warned = self.stopped = True
            return [spent_line(self.limit)]
        if spent >= WARN_FRACTION * self.limit and not self.warned:
            self.warned = True
            return [f"warning: {money(spent)} of the {money(self.limit)} budget is spent "
                    f"({spent / self.limit:.0%}); requests stop at {money(self.limit)}."]
        return []

    def raise_to(self, limit: float) -> None:
        self.limit, self.warned, self.stopped = limit, False, False

    def status(self, spent: float) -> str:
        if self.limit is None:
            return f"Spent {money(spent)}; no budget set (/budget <usd> sets one)."
        left = max(self.limit - spent, 0.0)
        return f"Spent {money(spent)} of the {money(self.limit)} budget; {money(left)} remaining."


def parse_usd(text: str) -> float | None:
    """A budget typed by the user: a positive amount, `$` allowed; None when it is not one."""
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        return None
    return value if value > 0 and value == value and value != float("inf") else None
