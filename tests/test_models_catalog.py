"""The model catalog, thinking parameters, per-model pricing and credential scrubbing: pure functions."""

from __future__ import annotations

import pytest

from services.models import (
    context_window,
    default_max_tokens,
    lookup,
    max_output_tokens,
    model_warning,
    price,
    resolve_model,
)
from services.scrub import scrub
from services.thinking import ThinkingOptions, thinking_request
from services.usage import Usage, request_cost


def test_aliases_and_id_forms_resolve_to_catalog_entries(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_DEFAULT_SONNET_MODEL", raising=False)
    assert resolve_model("Sonnet") == "claude-sonnet-5-5"
    assert lookup("claude-opus-4-1-20250805").id == "claude-opus-4-1"  # not Opus 4
    assert lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0").id == "claude-sonnet-4-5"
    assert lookup("claude-opus-4-8[1m]").id == "claude-opus-4-8"
    assert lookup("claude-sonnet-4-50") is None  # a prefix is not a match
    monkeypatch.setenv("ANTHROPIC_DEFAULT_SONNET_MODEL", "my-gateway-sonnet")
    assert resolve_model("sonnet") == "my-gateway-sonnet"


def test_numbers_and_the_output_limit_override(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", raising=False)
    assert context_window("claude-sonnet-4-5") == 200_000 and max_output_tokens("claude-sonnet-4-5") == 64_000
    assert default_max_tokens("claude-sonnet-4-5") >= 32_000
    # The CLAUDE_CODE_MAX_OUTPUT_TOKENS setting is passed in (Settings.max_output_tokens), never read here.
    monkeypatch.setenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "999999")
    assert default_max_tokens("claude-haiku-4-5") == default_max_tokens("claude-haiku-4-5", 0)
    assert default_max_tokens("claude-haiku-4-5", 999_999) == 64_000  # capped at the model's maximum
    assert price("mock").input == 0 and price("mock").output == 0


def test_unknown_models_warn_differently_for_custom_endpoints():
    assert model_warning("claude-sonnet-4-5", custom_endpoint=False) is None
    assert "Unknown model" in model_warning("sonet", custom_endpoint=False)
    assert "custom endpoint" in model_warning("llama-70b", custom_endpoint=True)


@pytest.mark.parametrize(
    ("model", "opts", "thinking", "effort"),
    [
        ("claude-sonnet-4-5", ThinkingOptions(budget=10_000), {"type": "enabled", "budget_tokens": 10_000}, None),
        ("claude-sonnet-4-5", ThinkingOptions(always=True), {"type": "enabled", "budget_tokens": 31_999}, None),
        ("claude-opus-4-6", ThinkingOptions(always=True, effort="low"), {"type": "adaptive"}, {"effort": "low"}),
        ("claude-opus-5-5", ThinkingOptions(budget=5000), {"type": "adaptive"}, None),  # adaptive only
        ("claude-3-5-haiku", ThinkingOptions(budget=5000), None, None),  # no thinking at all
        ("claude-sonnet-4-5", ThinkingOptions(budget=0, always=True), None, None),  # 0 turns it off
    ],
)
def test_thinking_request_per_model(model, opts, thinking, effort):
    got, output_config, max_tokens = thinking_request(model, 32_000, opts)
    assert got == thinking and output_config == effort
    if got and got["type"] == "enabled":
        assert got["budget_tokens"] < max_tokens <= max_output_tokens(model)


def test_long_context_and_cache_rates():
    small = request_cost("claude-sonnet-4-5", {"input_tokens": 100_000, "output_tokens": 1_000_000})
    assert small == pytest.approx(0.3 + 15)
    big = request_cost("claude-sonnet-4-5", {"input_tokens": 300_000})
    assert big == pytest.approx(300_000 * 6 / 1e6)
    cached = request_cost("claude-haiku-4-5", {"cache_creation_input_tokens": 1_000_000,
                                              "cache_read_input_tokens": 1_000_000})
    assert cached == pytest.approx(1.25 + 0.1)


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
