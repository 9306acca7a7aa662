"""The model catalog: Claude Code's own table of models, and the numbers the rest of the agent takes from it.

The data is `services/claude_code_models.json`, cut out of the Claude Code binary it names
(`CLAUDE_CODE_VERSION`) by tests/fixtures/claude_code/record_models.py: every model with its family,
display name, context window, output limits (`default` is what Claude Code sends as `max_tokens`,
`upper` the most it allows), price tier, capabilities (adaptive thinking, effort levels, ...), the
aliases (`opus`, `sonnet`, `haiku`, `fable`, and `best`), the retirement dates per provider and the
legacy ids Claude Code remaps to the latest Opus. Updating the catalog is re-running the recorder;
the default model is an alias (`DEFAULT_MODEL`), so it moves with the catalog.

Dated ids (`claude-sonnet-4-5-20250929`), cloud ids (`us.anthropic.claude-...-v1:0`) and the `[1m]`
suffix find their base entry. An unknown id still works (a gateway may serve anything): it gets what
Claude Code assumes (a 1M window, 32000 `max_tokens`), unless the endpoint told us better (`learn`).
Everything here is a pure function of its arguments; callers pass the environment in.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

# none: no thinking; budget: {"type": "enabled", "budget_tokens": N}; adaptive: {"type": "adaptive"}
# (a budget is still accepted); adaptive_only: adaptive is the only form (no budget; Claude Code
# sends it even when asked to turn thinking off: the model rejects "disabled").
Thinking = Literal["none", "budget", "adaptive", "adaptive_only"]

DATA_FILE = Path(__file__).with_name("claude_code_models.json")
_DATA: dict[str, Any] = json.loads(DATA_FILE.read_text(encoding="utf-8"))
CLAUDE_CODE_VERSION: str = _DATA["claude_code_version"]
_CATALOG: dict[str, Any] = _DATA["catalog"]
RETIREMENT: dict[str, Any] = _DATA["retirement"]
LEGACY_REMAP: tuple[str, ...] = tuple(_DATA["legacy_remap_to_opus"])
# What Claude Code sent to each model with no setting at all (recorded): thinking, output_config, ...
SENT_BY_DEFAULT: dict[str, dict[str, Any]] = _DATA.get("sent_by_default", {})

PROVIDER = "first_party"  # the Anthropic API, or an Anthropic-compatible ANTHROPIC_BASE_URL
RETIREMENT_PROVIDER = "firstParty"
DEFAULT_MODEL = "default"  # Claude Code's "Default (recommended)": the catalog's `best` alias
LONG_CONTEXT_THRESHOLD = 200_000  # kept for callers; a price carries its own threshold
ONE_M_SUFFIX = "[1m]"
ONE_M_BETA = "context-1m-2025-08-07"
ONE_M = 1_000_000
UNKNOWN_WINDOW = ONE_M  # what Claude Code assumes for a model it does not know
WINDOW_SETTING = "CLAUDE_CODE_MAX_CONTEXT_TOKENS"  # Claude Code's way to give an unknown model its window
REMAP_OPT_OUT = "CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP"
MOCK_MODEL = "mock"
# Claude Code's ANTHROPIC_DEFAULT_<ALIAS>_MODEL variables exist for these aliases.
OVERRIDABLE_ALIASES = ("opus", "sonnet", "haiku")
_EFFORT_CAPS = (("effort", ("low", "medium", "high")), ("xhigh_effort", ("xhigh",)), ("max_effort", ("max",)))
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._:/@\[\]-]")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float  # 5-minute cache write
    cache_read: float
    long_input: float | None = None  # when a request's input exceeds `long_above`
    long_output: float | None = None
    long_above: int = LONG_CONTEXT_THRESHOLD
    cache_write_1h: float | None = None


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output: int  # the most `max_tokens` may be
    default_max_tokens: int  # what Claude Code sends
    thinking: Thinking
    price: Price
    display_name: str = ""
    family: str = ""
    capabilities: tuple[str, ...] = ()
    default_effort: str | None = None
    efforts: tuple[str, ...] = ()  # the effort levels the model takes
    native_1m: bool = False  # a 1M window without the beta
    supports_1m: bool = False  # `[1m]` (with the context-1m beta) gives it a 1M window
    knowledge_cutoff: str | None = None
    effort_sent: str | None = None  # the `output_config.effort` Claude Code sends by default; None: none


def _price(tier: Any) -> Price:
    t = _CATALOG["pricing_tiers"][tier] if isinstance(tier, str) else tier
    long = t.get("long_prompt") or {}
    return Price(t["input"], t["output"], t.get("cache_write_5m", t["input"] * 1.25),
                 t.get("cache_read", t["input"] * 0.1), long.get("input"), long.get("output"),
                 long.get("above_prompt_tokens", LONG_CONTEXT_THRESHOLD), t.get("cache_write_1h"))


def _version(model_id: str) -> tuple[int, int]:
    """(major, minor) of `claude-<family>-<major>[-<minor>]` or `claude-<major>-<minor>-<family>`."""
    m = re.match(r"claude-[a-z]+-(\d+)(?:-(\d))?$", model_id) or re.match(r"claude-(\d+)(?:-(\d))?-[a-z]+$", model_id)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def _thinking(model_id: str, caps: tuple[str, ...]) -> Thinking:
    # As recorded from the binary: the adaptive_thinking capability, else adaptive from 4.6 on
    # (Mythos 5 lists no capabilities and gets adaptive), budget thinking on 4.0-4.5, none before.
    if "adaptive_thinking" in caps:
        return "adaptive_only" if "rejects_disabled_thinking" in caps else "adaptive"
    version = _version(model_id)
    if version >= (4, 6):
        return "adaptive"
    return "budget" if version >= (4, 0) else "none"


def _entry(m: dict[str, Any]) -> ModelInfo:
    caps = tuple(m.get("capabilities") or ())
    ctx = m.get("context") or {}
    out = m.get("max_output_tokens") or {"default": 32_000, "upper": 32_000}
    efforts = tuple(level for cap, levels in _EFFORT_CAPS if cap in caps for level in levels)
    return ModelInfo(
        id=m["id"], context_window=int(ctx.get("window") or 200_000), max_output=int(out["upper"]),
        default_max_tokens=int(out["default"]), thinking=_thinking(m["id"], caps), price=_price(m["pricing"]),
        display_name=m.get("display_name", ""), family=m.get("family", ""), capabilities=caps,
        default_effort=m.get("default_effort"), efforts=efforts, native_1m=bool(ctx.get("native_1m")),
        supports_1m=bool(ctx.get("supports_1m_beta") or ctx.get("native_1m")),
        knowledge_cutoff=m.get("knowledge_cutoff"),
        effort_sent=((SENT_BY_DEFAULT.get(m["id"]) or {}).get("output_config") or {}).get("effort"),
    )


CATALOG: dict[str, ModelInfo] = {m["id"]: _entry(m) for m in _CATALOG["models"]}
CATALOG[MOCK_MODEL] = ModelInfo(MOCK_MODEL, 200_000, 32_000, 32_000, "none", Price(0, 0, 0, 0), "Mock", "mock")
ALIASES: dict[str, str] = {name: a["default"] for name, a in _CATALOG["aliases"].items()}
BEST_ALIAS: str = _CATALOG.get("best") or "opus"
# What an unknown id gets: Claude Code's assumptions (1M window, 32000 max_tokens), no thinking (an
# unknown endpoint may reject the parameter), and the Sonnet tier's prices as the estimate.
UNKNOWN = ModelInfo("", UNKNOWN_WINDOW, 32_000, 32_000, "none", _price("tier_3_15"))
# Limits an endpoint told us for ids outside the catalog (Models API), for this process.
_learned: dict[str, ModelInfo] = {}


def alias_names() -> list[str]:
    """Every name /model and --model take besides ids: the catalog's aliases and Claude Code's extras."""
    return [*ALIASES, "best", "default", "opusplan"]


def resolve_model(name: str, env: Mapping[str, str] | None = None) -> str:
    """An alias (any case; `sonnet[1m]` too) becomes its model id, with Claude Code's
    `ANTHROPIC_DEFAULT_<ALIAS>_MODEL` from `env` winning; anything else is returned stripped.
    `default` and `best` are the catalog's best alias; `opusplan` is Sonnet outside plan mode."""
    env = env or {}
    name = name.strip()
    lower = name.lower()
    suffix = ONE_M_SUFFIX if lower.endswith(ONE_M_SUFFIX) else ""
    alias = lower.removesuffix(ONE_M_SUFFIX)
    if alias in ("default", "best"):
        alias = BEST_ALIAS
    elif alias == "opusplan":
        alias = "sonnet"
    if alias not in ALIASES:
        return name
    override = env.get(f"ANTHROPIC_DEFAULT_{alias.upper()}_MODEL") if alias in OVERRIDABLE_ALIASES else None
    target = (override or "").strip() or ALIASES[alias]
    found = lookup(target)
    if suffix and not (found and found.native_1m):  # a native 1M model needs no suffix (recorded)
        return target + suffix
    return target


def canonical(model: str) -> str:
    """The catalog form of an id: lower case, no `[1m]`, no cloud prefix (`us.anthropic.`), no
    version tail (`-v1:0`, `@20250514`, `-20250929`); `claude-opus-4` is `claude-opus-4-0`."""
    key = model.strip().lower().removesuffix(ONE_M_SUFFIX)
    if "anthropic." in key:
        key = key.rsplit("anthropic.", 1)[1]
    key = re.sub(r"(-v\d+(:\d+)?|@\d{8}|-\d{8}|-latest)$", "", key)
    key = re.sub(r"(-v\d+(:\d+)?|@\d{8}|-\d{8})$", "", key)
    if key not in CATALOG and f"{key}-0" in CATALOG:
        key = f"{key}-0"
    return key


def lookup(model: str) -> ModelInfo | None:
    """The catalog entry (or what an endpoint told us) for a model id in any of its forms, or None."""
    key = canonical(model)
    return CATALOG.get(key) or _learned.get(model.strip()) or _learned.get(key)


def learn(model: str, window: int | None, max_tokens: int | None) -> ModelInfo:
    """Remember an endpoint's limits for an id outside the catalog (the Models API's
    `max_input_tokens` / `max_tokens`), so its window and `max_tokens` are the real ones."""
    base = UNKNOWN
    info = replace(base, id=model, context_window=window or base.context_window,
                   max_output=max_tokens or base.max_output,
                   default_max_tokens=min(base.default_max_tokens, max_tokens or base.default_max_tokens))
    _learned[model.strip()] = info
    return info


def info(model: str) -> ModelInfo:
    return lookup(model) or UNKNOWN


def is_known(model: str) -> bool:
    return lookup(model) is not None


def context_window(model: str, env: Mapping[str, str] | None = None) -> int:
    """The window: 1M for `[1m]` on a model that supports it; for an unknown id, `CLAUDE_CODE_MAX_CONTEXT_TOKENS`
    from `env` when it is a positive integer, else what the endpoint told us, else Claude Code's assumption."""
    found = lookup(model)
    if found is None or found.id not in CATALOG:
        raw = (env or {}).get(WINDOW_SETTING, "").strip()
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
    if found is not None and model.strip().lower().endswith(ONE_M_SUFFIX) and found.supports_1m:
        return ONE_M
    return (found or UNKNOWN).context_window


def max_output_tokens(model: str) -> int:
    return info(model).max_output


def price(model: str) -> Price:
    return info(model).price


def thinking_support(model: str) -> Thinking:
    return info(model).thinking


def default_max_tokens(model: str, env: Mapping[str, str] | None = None) -> int:
    """What we send as `max_tokens`: `CLAUDE_CODE_MAX_OUTPUT_TOKENS` when set (capped at the model's
    maximum), else the model's default. A malformed value is ignored here; config reports it."""
    if env is None:
        import os  # callers that predate the env argument: the process environment

        env = os.environ
    raw = env.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "").strip()
    limit = info(model).max_output
    if raw.isdigit() and int(raw) > 0:
        return min(int(raw), limit)
    return info(model).default_max_tokens


def wire_model(model: str) -> tuple[str, list[str]]:
    """The id sent to the API and the betas it needs: `[1m]` is never sent; it asks for the
    context-1m beta, unless the model has a native 1M window."""
    name = model.strip()
    if not name.lower().endswith(ONE_M_SUFFIX):
        return name, []
    base = name[: -len(ONE_M_SUFFIX)]
    found = lookup(base)
    return base, ([] if found is not None and found.native_1m else [ONE_M_BETA])


def safe_name(model: str) -> str:
    """A model name as it may be shown: only id characters, at most 128 (Claude Code's rule)."""
    cleaned = _SAFE_NAME.sub("", model)
    if not cleaned:
        return "(unrecognized model name)"
    return cleaned if len(cleaned) <= 128 else cleaned[:128] + "\u2026"


# ---- retirement and legacy remapping --------------------------------------------------------------

def legacy_target(model: str, env: Mapping[str, str] | None = None) -> str | None:
    """The model Claude Code sends instead of a legacy Opus id (the latest Opus), or None."""
    env = env or {}
    if model.strip().lower() not in LEGACY_REMAP or env.get(REMAP_OPT_OUT, "").strip() not in ("", "0"):
        return None
    return resolve_model("opus", env)


def _retirement_date(text: str) -> datetime.date | None:
    try:
        return datetime.datetime.strptime(text, "%B %d, %Y").date()
    except ValueError:
        return None


def retirement_notice(model: str, today: datetime.date, env: Mapping[str, str] | None = None) -> str | None:
    """Claude Code's one line for a legacy id it remaps, a retired model or one that will retire;
    None for any other model. A date is past from its own day on (Claude Code compares with UTC)."""
    target = legacy_target(model, env)
    entry = RETIREMENT.get(canonical(model))
    if target is not None:
        display = info(target).display_name or target
        remapped = entry.get("remappedTo", "the latest Opus") if entry else "the latest Opus"
        return (f"\u26a0 {model.strip()} is automatically remapped to {display} ({remapped}). "
                f"Set {REMAP_OPT_OUT}=1 to keep the requested model.")
    if not entry:
        return None
    when = entry["retirementDates"].get(RETIREMENT_PROVIDER)
    day = _retirement_date(when) if when else None
    if day is None:
        return None
    verb = "was retired on" if day <= today else "will be retired on"
    return f"\u26a0 {entry['modelName']} {verb} {when}. Consider switching to a newer model."


def is_retired(model: str, today: datetime.date) -> bool:
    entry = RETIREMENT.get(canonical(model))
    when = entry["retirementDates"].get(RETIREMENT_PROVIDER) if entry else None
    day = _retirement_date(when) if when else None
    return day is not None and day <= today


def unknown_model_notice(model: str, env: Mapping[str, str] | None = None) -> str | None:
    """For an id neither the catalog nor the endpoint described: what window we assume and how to set
    the real one (Claude Code's notice, in this agent's name). None when known or when the window is set."""
    if is_known(model) or model == MOCK_MODEL or canonical(model) in RETIREMENT:  # retired: said otherwise
        return None
    raw = (env or {}).get(WINDOW_SETTING, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return None
    return (f'The agent doesn\'t recognize the model "{safe_name(model)}" (it knows the models of Claude Code '
            f"{CLAUDE_CODE_VERSION}), so it assumes a context window of 1m tokens. Set {WINDOW_SETTING} "
            "to its real window, or check it against the endpoint with /model.")


def model_notices(model: str, today: datetime.date, env: Mapping[str, str] | None = None) -> list[str]:
    """The lines said once when a model is taken (at start, on /model)."""
    return [n for n in (retirement_notice(model, today, env), unknown_model_notice(model, env)) if n]


def today_utc() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


# ---- /model's refusal ----------------------------------------------------------------------------

def suggestion(name: str, today: datetime.date) -> str | None:
    """The known name closest to a typo (an alias or a catalog id not retired), as Claude Code offers it."""
    import difflib

    lower = name.strip().lower()
    names = [*alias_names(), *[i for i in CATALOG if i != MOCK_MODEL and not is_retired(i, today)]]
    if f"claude-{lower}" in names:
        return f"claude-{lower}"
    close = difflib.get_close_matches(lower, names, n=1, cutoff=0.75)
    return close[0] if close else None


def known_models_line(today: datetime.date) -> str:
    ids = [i for i in CATALOG if i != MOCK_MODEL and not is_retired(i, today)]
    return "Known models: " + ", ".join([*alias_names(), *ids])


def not_recognized(name: str, today: datetime.date) -> str:
    """Claude Code's refusal of a model id, word for word."""
    hint = suggestion(name, today)
    tail = f" Did you mean '{hint}'?" if hint else " Run /model to see available models."
    return f'Model "{safe_name(name)}" is not a recognized model id.{tail}'
