"""`/budget`: what the session has spent against its budget; `/budget <usd>` sets or raises it (a spent
budget stops requests until it is raised)."""

from __future__ import annotations

from typing import Any

from agent.loop.budget_guard import spent
from services.budget import Budget, money, parse_usd

USAGE = "Usage: /budget [<usd>]  (e.g. /budget 5)"


def cmd_budget(ctx: Any, args: str) -> None:
    budget: Budget | None = getattr(ctx.engine, "budget", None)
    now = spent(ctx.engine)
    if not args.strip():
        ctx.say((budget or Budget()).status(now))
        return
    value = parse_usd(args)
    if value is None:
        ctx.say(f"Not an amount: {args.strip()[:40]!r}. {USAGE}", "yellow")
        return
    if budget is None:
        ctx.say("This session has no budget guard (budgets hold in the REPL and in -p / stream-json runs).",
                "yellow")
        return
    budget.raise_to(value)
    state = "already spent: raise it further to continue" if budget.is_spent(now) else "requests continue"
    ctx.say(f"Budget set to {money(value)} ({money(now)} spent; {state}).")
