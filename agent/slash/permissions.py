"""`/permissions`: the mode, every rule in force with its scope and the file it comes from, and
`/permissions remove N` to drop one (from its file and from the running session).

The files are read again each time, so a rule the user edited by hand shows as it is on disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.rule_store import RuleStoreError, StoredRule, file_rules, remove_rule

USAGE = "Usage: /permissions [<mode> | remove <number>]"
_LIVE_LISTS = {"allow": "allowed_tools", "deny": "disallowed_tools", "ask": "ask_tools"}


def all_rules(ctx: Any) -> list[StoredRule]:
    """Files (user, project, local, --settings), then the command line, then this session's answers."""
    from services.config import agent_home
    from services.settings import load_settings

    opts = ctx.opts
    trusted = bool(getattr(opts, "trusted", False))
    extra = getattr(opts, "extra_settings", None)
    merged = load_settings(ctx.cwd, agent_home(), trusted=trusted, extra=[extra] if extra is not None else None,
                           sources=getattr(opts, "setting_sources", None))
    rules = file_rules(merged.files)
    rules += [StoredRule("allow", r, "cliArg", "command line") for r in getattr(opts, "allowed_tools", []) or []]
    rules += [StoredRule("deny", r, "cliArg", "command line") for r in getattr(opts, "disallowed_tools", []) or []]
    saved = {r.rule for r in rules if r.behavior == "allow"}
    for name, content in getattr(ctx.engine.gate, "session_rules", []):
        text = f"{name}({content})" if content is not None else name
        if text not in saved:
            rules.append(StoredRule("allow", text, "session", "this session"))
    return rules


def _source(cwd: Path, source: str) -> str:
    try:
        return str(Path(source).relative_to(cwd))
    except ValueError:
        return source


def _show(ctx: Any, rules: list[StoredRule]) -> None:
    from tools.permissions import MODES

    gate = ctx.engine.gate
    ctx.say(f"Permission mode: {gate.mode}  (switch with /permissions <{'|'.join(MODES)}>)")
    if not rules:
        ctx.say("  no rules (a \"don't ask again\" answer saves one to .claude/settings.local.json)", "dim")
        return
    untrusted = not getattr(ctx.opts, "trusted", False)
    for i, r in enumerate(rules, 1):
        note = "  (not applied: folder not trusted)" if (
            untrusted and r.behavior == "allow" and r.scope in ("project", "local")) else ""
        ctx.say(f"{i:>3}. {r.behavior:5}  {r.rule}  [{r.scope}: {_source(ctx.cwd, r.source)}]{note}")
    ctx.say("Remove one with /permissions remove <number>.", "dim")


def _forget_live(gate: Any, rule: StoredRule, still_elsewhere: bool) -> None:
    """The running session stops applying the rule (unless another source still holds it)."""
    if still_elsewhere:
        return
    live = getattr(gate, _LIVE_LISTS[rule.behavior], None)
    if isinstance(live, list):
        while rule.rule in live:
            live.remove(rule.rule)
    if rule.behavior == "allow":
        from tools.permissions import Rule

        parsed = Rule.parse(rule.rule)
        gate.session_rules[:] = [r for r in gate.session_rules if r != (parsed.tool, parsed.content)]


def _remove(ctx: Any, rules: list[StoredRule], arg: str) -> None:
    if not arg.isdigit() or not 1 <= int(arg) <= len(rules):
        ctx.say(f"No rule {arg!r}; /permissions lists them with their numbers.", "yellow")
        return
    rule = rules[int(arg) - 1]
    if rule.scope in ("user", "project", "local"):
        try:
            remove_rule(Path(rule.source), rule.rule, rule.behavior)
        except (RuleStoreError, OSError) as exc:
            ctx.say(f"Not removed: {exc}", "yellow")
            return
    others = [r for r in rules if r is not rule and (r.behavior, r.rule) == (rule.behavior, rule.rule)
              and r.scope not in ("session",)]
    _forget_live(ctx.engine.gate, rule, bool(others))
    where = _source(ctx.cwd, rule.source)
    ctx.say(f"Removed {rule.behavior} rule {rule.rule} ({rule.scope}: {where}).")
    if rule.scope in ("cliArg", "flags"):
        ctx.say("It came from the command line: this session stops applying it; the next run gets it again.", "dim")
    elif others:
        ctx.say(f"Still in force from {', '.join(_source(ctx.cwd, r.source) for r in others)}.", "dim")


def cmd_permissions(ctx: Any, args: str) -> None:
    from tools.permissions import MODES

    words = args.split()
    if not words:
        _show(ctx, all_rules(ctx))
        return
    if words[0] == "remove" and len(words) == 2:
        _remove(ctx, all_rules(ctx), words[1])
        return
    if words[0] in MODES and len(words) == 1:
        ctx.engine.gate.mode = words[0]
        ctx.say(f"Permission mode: {words[0]}.")
        return
    if len(words) == 1 and words[0] != "remove":
        ctx.say(f"Unknown mode {words[0]!r}; choose one of: {', '.join(MODES)}.", "yellow")
        return
    ctx.say(f"{USAGE}; modes: {', '.join(MODES)}.", "yellow")
