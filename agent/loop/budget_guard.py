"""The session's budget put in front of the provider: no request is sent once the engine's usage cost
(sub-agents and summaries included) has reached the limit; the 80% warning is said as it is passed.
The REPL installs it; the headless runs keep Claude Code's own `error_max_budget_usd` result."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from services.budget import Budget
from services.model_types import CallModel, ModelError, ModelEvent, ModelRequest


def spent(engine: Any) -> float:
    return float(engine.usage.spent(engine.config.model))


def install_budget(engine: Any, limit: float | None, say: Callable[[str], None]) -> Budget:
    """Wrap `engine`'s model calls with a budget of `limit` (None: none until `/budget` sets one)."""
    budget = Budget(limit)
    engine.budget = budget

    def wrap(call: CallModel) -> CallModel:
        def guarded(request: ModelRequest) -> AsyncIterator[ModelEvent]:
            async def gen() -> AsyncIterator[ModelEvent]:
                now = spent(engine)
                reason = budget.refuse(now)
                if reason is not None:  # checked before each request: the one in flight always finishes
                    raise ModelError(reason)
                for line in budget.notices(now):
                    say(line)
                async for event in call(request):
                    yield event

            return gen()

        return guarded

    engine.wrap_model(wrap)
    return budget
