"""The model catalog against what Claude Code 2.1.332 does, plus thinking parameters, pricing and scrubbing.

`services/claude_code_models.json` (the catalog cut out of the binary) and
`tests/fixtures/claude_code/models/recorded.json` (what the binary sent for each model choice) are both
made by tests/fixtures/claude_code/record_models.py; these tests hold the agent's pure functions to them.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from services import models
from services.config import DEFAULT_MODEL
from services.models import (
    context_window,
    default_max_tokens,
    legacy_target,
    lookup,
    max_output_tokens,
    not_recognized,
    price,
    resolve_model,
    retirement_notice,
    unknown_model_notice,
    wire_model,
)
from services.scrub import scrub
from services.thinking import (
    CONTEXT_MANAGEMENT_BETA,
    EFFORT_BETA,
    INTERLEAVED_THINKING_BETA,
    ThinkingOptions,
    request_extras,
    thinking_request,
)
from services.usage import Usage, request_cost

RECORDED = json.loads((Path(__file__).parent / "fixtures/claude_code/models/recorded.json").read_text())
CASES = RECORDED["cases"]
RECORDED_ON = datetime.date.fromisoformat(RECORDED["recorded_on"])
TODAY = datetime.datetime.now(datetime.UTC).date()
THINKING_BETAS = (INTERLEAVED_THINKING_BETA, CONTEXT_MANAGEMENT_BETA, EFFORT_BETA)


def _flag_model(case: dict) -> str | None:
    args = case["args"]
    return args[args.index("--model") + 1] if "--model" in args else None


def _ours(case: dict) -> str:
    """The model this agent sends for a recorded case (flag, else ANTHROPIC_MODEL, else setting, else default)."""
    env = case["env"]
    name = _flag_model(case) or env.get("ANTHROPIC_MODEL") or (case["settings"] or {}).get("model") or DEFAULT_MODEL
    requested = resolve_model(name, env)
    return wire_model(legacy_target(requested, env) or requested)[0]


def test_the_catalog_names_the_claude_code_version_it_came_from():
    assert models.CLAUDE_CODE_VERSION == "2.1.332" == RECORDED["claude_code_version"]
    assert len(models.CATALOG) > 20 and "claude-opus-5-5" in models.CATALOG


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_recorded_choice_sends_the_same_model_and_max_tokens(name):
    case = CASES[name]
    sent = case["requests"][0]
    assert _ours(case) == sent["model"]
    if not case["env"].get("ANTHROPIC_DEFAULT_SONNET_MODEL") and not name.startswith(("unknown", "model_claude-3-opus")):
        assert default_max_tokens(sent["model"], case["env"]) == sent["max_tokens"]
    assert (models.ONE_M_BETA in sent["betas"]) == (models.ONE_M_BETA in wire_model(resolve_model(
        _flag_model(case) or "default", case["env"]))[1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_notices_are_claude_codes_words_on_the_day_they_were_recorded(name):
    case = CASES[name]
    requested = resolve_model(_flag_model(case) or case["env"].get("ANTHROPIC_MODEL") or DEFAULT_MODEL, case["env"])
    warning = [line for line in case["stderr"].splitlines() if line.startswith("\u26a0")]
    ours = retirement_notice(requested, RECORDED_ON, case["env"])
    assert [ours] == warning if warning else ours is None
    # Claude Code says "doesn't recognize" for the same ids we do (the words are the agent's own).
    recognized = "doesn't recognize the model" not in case["stderr"]
    assert (unknown_model_notice(requested, case["env"]) is None) == recognized


def test_the_default_is_an_alias_and_not_retired_today():
    assert DEFAULT_MODEL in models.alias_names()  # never a dated id that can go stale
    default = resolve_model(DEFAULT_MODEL, {})
    assert default == CASES["default"]["requests"][0]["model"] == "claude-opus-5-5"
    for alias in models.alias_names():
        target = resolve_model(alias, {})
        assert not models.is_retired(target, TODAY), f"{alias} -> {target} is retired as of {TODAY}"
        assert retirement_notice(target, TODAY) is None


def test_alias_overrides_keep_claude_codes_precedence():
    env = {"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-8", "ANTHROPIC_DEFAULT_SONNET_MODEL": "gw-sonnet"}
    assert resolve_model(DEFAULT_MODEL, env) == "claude-opus-4-8"
    assert resolve_model("Sonnet", env) == "gw-sonnet" and resolve_model("opusplan", env) == "gw-sonnet"
    assert resolve_model("fable", env) == "claude-fable-5-2"  # no override variable for fable
    assert resolve_model("claude-opus-4-5", env) == "claude-opus-4-5"


def test_id_forms_find_their_entry():
    assert lookup("claude-opus-4-1-20250805").id == "claude-opus-4-1"  # not Opus 4
    assert lookup("claude-opus-4-20250514").id == "claude-opus-4-0"
    assert lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0").id == "claude-sonnet-4-5"
    assert lookup("anthropic.claude-opus-4-8").id == "claude-opus-4-8"
    assert lookup("claude-opus-4-8[1m]").id == "claude-opus-4-8"
    assert lookup("claude-sonnet-4-50") is None  # a prefix is not a match


def test_newest_models_carry_their_own_limits(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", raising=False)
    expect = {"claude-opus-5-5": (1_000_000, 128_000, 128_000), "claude-haiku-5-5": (1_000_000, 128_000, 128_000),
              "claude-sonnet-5-5": (1_000_000, 128_000, 128_000), "claude-fable-5": (1_000_000, 64_000, 128_000),
              "claude-sonnet-4-6": (200_000, 32_000, 128_000), "claude-3-5-haiku": (200_000, 8192, 8192)}
    for model, (window, default, upper) in expect.items():
        assert (context_window(model), default_max_tokens(model, {}), max_output_tokens(model)) == (window, default,
                                                                                                      upper)
    assert default_max_tokens("claude-haiku-4-5", {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "999999"}) == 64_000  # capped
    assert context_window("claude-opus-4-6[1m]") == 1_000_000 and context_window("claude-opus-4-6") == 200_000


def test_thinking_support_per_model_matches_what_claude_code_sent():
    kinds = {"adaptive": ("adaptive", "adaptive_only"), "enabled": ("budget",), None: ("none",)}
    for name, case in CASES.items():
        if not name.startswith("model_") or case["env"]:
            continue
        sent = case["requests"][0]
        model = sent["model"]
        thinking = (sent.get("thinking") or {}).get("type")
        assert models.thinking_support(model) in kinds[thinking], model
        effort = (sent.get("output_config") or {}).get("effort")
        known = models.info(model)
        if known.default_effort:
            assert effort == known.default_effort, model
    # Models that refuse `disabled`: Claude Code kept adaptive thinking under MAX_THINKING_TOKENS=0.
    for name, case in CASES.items():
        if name.startswith("thinking_off_"):
            model = case["requests"][0]["model"]
            kept = case["requests"][0]["thinking"]["type"] != "disabled"
            assert kept == (models.thinking_support(model) == "adaptive_only"), model


def test_unknown_ids_get_claude_codes_assumptions_or_a_set_window(monkeypatch):
    monkeypatch.setattr(models, "_learned", {})  # what /model learned elsewhere in this process
    assert context_window("my-gateway-model") == 1_000_000 and default_max_tokens("my-gateway-model", {}) == 32_000
    assert context_window("my-gateway-model", {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "300000"}) == 300_000
    notice = unknown_model_notice("my-gateway-model\x1b[2J", {})
    assert notice and "assumes a context window of 1m tokens" in notice and "\x1b" not in notice
    assert unknown_model_notice("my-gateway-model", {"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "300000"}) is None
    learned = models.learn("gw-learned-model", 400_000, 20_000)
    assert context_window("gw-learned-model") == 400_000 and default_max_tokens("gw-learned-model", {}) == 20_000
    assert learned.id == "gw-learned-model" and unknown_model_notice("gw-learned-model", {}) is None


def test_retirement_tense_follows_the_date_and_remaps_follow_the_opt_out():
    retired_day = datetime.date(2026, 11, 30)
    assert "will be retired on November 30, 2026" in retirement_notice("claude-sonnet-4-5", datetime.date(2026, 11, 29))
    assert "was retired on November 30, 2026" in retirement_notice("claude-sonnet-4-5", retired_day)
    assert legacy_target("claude-opus-4-1", {}) == "claude-opus-5-5"
    assert legacy_target("claude-opus-4-1", {"CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP": "1"}) is None
    # Opted out, Opus 4.1 has no first-party retirement date: nothing to say; Opus 4 has one.
    assert retirement_notice("claude-opus-4-1", TODAY, {"CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP": "1"}) is None
    assert "Claude Opus 4 was retired on June 15, 2026" in retirement_notice(
        "claude-opus-4-0", TODAY, {"CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP": "1"})


def test_a_typo_is_refused_in_claude_codes_words_with_a_suggestion():
    assert not_recognized("claude-opuss-5-5", TODAY) == (
        "Model \"claude-opuss-5-5\" is not a recognized model id. Did you mean 'claude-opus-5-5'?")
    assert not_recognized("xyzzy", TODAY).endswith(" Run /model to see available models.")
    line = models.known_models_line(TODAY)
    assert "claude-opus-5-5" in line and "claude-sonnet-4-5" not in line  # retired ids are not offered


def test_prices_come_from_claude_codes_tiers():
    opus = price("claude-opus-5-5")
    assert (opus.input, opus.output, opus.cache_write, opus.cache_read) == (4, 20, 5, 0.2)
    assert request_cost("claude-haiku-5-5", {"input_tokens": 50_000}) == pytest.approx(50_000 * 0.1 / 1e6)
    assert request_cost("claude-haiku-5-5", {"input_tokens": 150_000}) == pytest.approx(150_000 * 0.5 / 1e6)
    assert request_cost("claude-sonnet-4-5", {"input_tokens": 300_000}) == pytest.approx(300_000 * 3 / 1e6)
    cached = request_cost("claude-haiku-4-5", {"cache_creation_input_tokens": 1_000_000,
                                              "cache_read_input_tokens": 1_000_000})
    assert cached == pytest.approx(1.25 + 0.1)
    assert price("mock").input == 0 and price("mock").output == 0


def _thinking_options(case: dict) -> ThinkingOptions:
    """The knobs of a recorded case, as the CLI reads them (services.thinking.options_from)."""
    args, env = case["args"], case["env"]
    budget = int(env["MAX_THINKING_TOKENS"]) if "MAX_THINKING_TOKENS" in env else None
    if "--thinking" in args and args[args.index("--thinking") + 1] == "disabled":
        budget = 0
    always = (case["settings"] or {}).get("alwaysThinkingEnabled")
    effort = args[args.index("--effort") + 1] if "--effort" in args else None
    return ThinkingOptions(budget=budget, always=always, effort=effort)


THINKING_CASES = sorted(n for n, c in CASES.items() if lookup(c["requests"][0]["model"]) is not None)


@pytest.mark.parametrize("name", THINKING_CASES)
def test_thinking_fields_are_what_claude_code_2_1_332_sent(name):
    """Thinking on by default, its switches and knobs, per model: the same fields as the binary sent."""
    case = CASES[name]
    for sent in case["requests"]:
        model = sent["model"]
        thinking, output_config, max_tokens = thinking_request(
            model, default_max_tokens(model, case["env"]), _thinking_options(case))
        assert thinking == sent.get("thinking"), name
        assert output_config == sent.get("output_config"), name
        if name != "model_claude-3-opus":  # outside the catalog: 4096 there
            assert max_tokens == sent["max_tokens"], name
        context_management, betas = request_extras(thinking, output_config)
        assert context_management == sent.get("context_management"), name
        assert [b for b in sent["betas"] if b in THINKING_BETAS] == betas, name


def test_thinking_toggle_and_an_explicit_budget():
    on = ThinkingOptions()
    assert on.toggled().off and not on.toggled().toggled().off
    assert ThinkingOptions(budget=0).toggled().budget is None  # the REPL's toggle undoes MAX_THINKING_TOKENS=0
    thinking, _, max_tokens = thinking_request("claude-haiku-4-5", 32_000, ThinkingOptions(budget=40_000))
    assert thinking["budget_tokens"] == 40_000 < max_tokens <= max_output_tokens("claude-haiku-4-5")
    assert thinking_request("my-gateway-model", 32_000, None) == (None, None, 32_000)  # unknown: nothing sent


def test_cost_is_not_repriced_when_the_model_changes():
    u = Usage()
    u.add({"input_tokens": 1_000_000}, model="claude-haiku-4-5")
    assert u.cost("claude-opus-4-1") == pytest.approx(1.0)
    u.add({"input_tokens": 1_000_000})  # an old transcript's reply: priced at the fallback model
    assert u.cost("claude-opus-4-1") == pytest.approx(16.0)


def test_scrub_removes_keys_tokens_and_configured_values(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "gw-token-123456")
    text = scrub('401: x-api-key: sk-ant-api03-AAAAbbbbCCCC "Authorization": "Bearer abc.def" gw-token-123456')
    assert "sk-ant-api03" not in text and "abc.def" not in text and "gw-token-123456" not in text
    assert scrub("nothing secret here") == "nothing secret here"
