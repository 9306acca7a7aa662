"""The model choice through the real CLI (`python -m agent -p`) against the fake server, compared with
what Claude Code 2.1.332 sent for the same choice (tests/fixtures/claude_code/models/recorded.json)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

RECORDED = json.loads((Path(__file__).parent / "fixtures/claude_code/models/recorded.json").read_text())["cases"]
TODAY = datetime.datetime.now(datetime.UTC).date()


def _sent(fake) -> dict:
    assert len(fake.requests) == 1
    return fake.requests[0].body


def test_only_an_api_key_sends_claude_codes_default_and_max_tokens(cli, fake_anthropic):
    fake_anthropic.text("ok")
    r = cli("-p", "hi")
    assert r.code == 0 and r.stdout.strip() == "ok" and r.stderr == ""
    body = _sent(fake_anthropic)
    recorded = RECORDED["default"]["requests"][0]
    assert (body["model"], body["max_tokens"]) == (recorded["model"], recorded["max_tokens"]) == ("claude-opus-5-5",
                                                                                                     128_000)


@pytest.mark.parametrize("alias", ["sonnet", "opus", "haiku", "fable", "opusplan", "Opus", "sonnet[1m]", "default"])
def test_aliases_resolve_as_claude_codes(cli, fake_anthropic, alias):
    fake_anthropic.text("ok")
    assert cli("-p", "hi", "--model", alias).code == 0
    recorded = RECORDED[f"alias_{alias}"]["requests"][0]
    body = _sent(fake_anthropic)
    assert (body["model"], body["max_tokens"]) == (recorded["model"], recorded["max_tokens"])


@pytest.mark.parametrize("model", ["claude-haiku-5-5", "claude-fable-5", "claude-sonnet-5", "claude-sonnet-4-6",
                                   "claude-opus-4-8", "claude-mythos-5-2"])
def test_newest_models_carry_their_own_max_tokens(cli, fake_anthropic, model):
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--model", model)
    assert r.code == 0 and r.stderr == ""
    assert _sent(fake_anthropic)["max_tokens"] == RECORDED[f"model_{model}"]["requests"][0]["max_tokens"]


def _expected(name: str, date: str) -> str:
    day = datetime.datetime.strptime(date, "%B %d, %Y").date()
    verb = "was retired on" if day <= TODAY else "will be retired on"
    return f"\u26a0 {name} {verb} {date}. Consider switching to a newer model.\n"


@pytest.mark.parametrize(("model", "name", "date"), [("claude-sonnet-4-5", "Claude Sonnet 4.5", "November 30, 2026"),
                                                     ("claude-opus-4-5", "Claude Opus 4.5", "January 22, 2027")])
def test_retired_and_retiring_models_are_said_once_and_still_used(cli, fake_anthropic, model, name, date):
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--model", model)
    assert r.code == 0 and r.stdout.strip() == "ok"
    assert r.stderr == _expected(name, date)  # Claude Code's exact line, once, nothing else
    assert _sent(fake_anthropic)["model"] == model


def test_legacy_opus_is_remapped_unless_opted_out(cli, fake_anthropic):
    fake_anthropic.text("ok")
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--model", "claude-opus-4-1")
    assert r.stderr == RECORDED["model_claude-opus-4-1"]["stderr"]
    assert fake_anthropic.requests[0].body["model"] == "claude-opus-5-5"
    r = cli("-p", "hi", "--model", "claude-opus-4-1", CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP="1")
    assert r.code == 0 and fake_anthropic.requests[1].body["model"] == "claude-opus-4-1"


def test_one_m_suffix_is_a_beta_never_part_of_the_id(cli, fake_anthropic):
    fake_anthropic.text("ok")
    assert cli("-p", "hi", "--model", "claude-opus-4-6[1m]").code == 0
    req = fake_anthropic.requests[0]
    assert req.body["model"] == "claude-opus-4-6"
    assert "context-1m-2025-08-07" in req.headers.get("anthropic-beta", "")


def test_precedence_flag_env_setting_and_alias_overrides(cli, fake_anthropic, workdir):
    home_settings = Path(cli.agent_home) / "settings.json"
    for _ in range(5):
        fake_anthropic.text("ok")
    cli("-p", "hi", ANTHROPIC_MODEL="sonnet")
    cli("-p", "hi", "--model", "sonnet", ANTHROPIC_MODEL="haiku")
    cli("-p", "hi", ANTHROPIC_DEFAULT_OPUS_MODEL="claude-opus-4-8")
    cli("-p", "hi", "--model", "haiku", ANTHROPIC_DEFAULT_HAIKU_MODEL="claude-haiku-4-5")
    home_settings.write_text(json.dumps({"model": "haiku"}))
    cli("-p", "hi")
    sent = [(r.body["model"], r.body["max_tokens"]) for r in fake_anthropic.requests]
    recorded = [(RECORDED[n]["requests"][0]["model"], RECORDED[n]["requests"][0]["max_tokens"]) for n in (
        "env_ANTHROPIC_MODEL_sonnet", "flag_beats_env", "default_opus_model_env", "default_haiku_model_env",
        "setting_model_haiku")]
    assert sent == recorded


def test_an_unknown_id_still_works_with_an_assumed_or_set_window(cli, fake_anthropic):
    fake_anthropic.text("ok")
    fake_anthropic.text("ok")
    r = cli("-p", "hi", "--model", "my-gateway-model")
    assert r.code == 0 and "doesn't recognize the model \"my-gateway-model\"" in r.stderr
    assert "context window of 1m tokens" in r.stderr and r.stderr.count("\n") == 1
    assert fake_anthropic.requests[0].body["max_tokens"] == RECORDED["unknown_model"]["requests"][0]["max_tokens"]
    r = cli("-p", "hi", "--model", "my-gateway-model", CLAUDE_CODE_MAX_CONTEXT_TOKENS="300000")
    assert r.code == 0 and r.stderr == ""


THINKING_KEYS = ("model", "max_tokens", "thinking", "output_config", "context_management")
THINKING_BETAS = ("interleaved-thinking-2025-05-14", "context-management-2025-06-27", "effort-2025-11-24")


@pytest.mark.parametrize("name", ["default", "model_claude-sonnet-4-5", "model_claude-opus-4-5", "alias_haiku",
                                  "thinking_off_claude-haiku-4-5", "thinking_off_claude-opus-5-5",
                                  "thinking_setting_false_claude-opus-4-6", "thinking_flag_disabled_claude-haiku-4-5",
                                  "thinking_budget_5000_claude-haiku-4-5", "thinking_budget_5000_claude-opus-4-6",
                                  "thinking_effort_low_claude-opus-4-6", "thinking_effort_low_claude-haiku-4-5",
                                  "thinking_tools_claude-haiku-4-5"])
def test_thinking_fields_through_the_cli_are_claude_codes(cli, fake_anthropic, name):
    """Thinking on by default and its switches, sent as Claude Code 2.1.332 sent them (recorded)."""
    from tests.fake_anthropic import thinking_block, tool_block

    case = RECORDED[name]
    if case["settings"]:
        (Path(cli.agent_home) / "settings.json").write_text(json.dumps(case["settings"]))
    if name.startswith("thinking_tools"):  # a reply that thinks, then calls a tool: the block goes back signed
        fake_anthropic.reply(thinking_block("", "sig-recorded-1"), tool_block("Echo", {"message": "x"}))
    fake_anthropic.text("ok")
    r = cli("-p", "hi", *case["args"], **case["env"])
    assert r.code == 0, r.stderr
    assert len(fake_anthropic.requests) == len(case["requests"])
    for ours, theirs in zip(fake_anthropic.requests, case["requests"], strict=True):
        assert {k: ours.body.get(k) for k in THINKING_KEYS} == {k: theirs.get(k) for k in THINKING_KEYS}
        betas = ours.headers.get("anthropic-beta", "").split(",")
        assert [b for b in betas if b in THINKING_BETAS] == [b for b in theirs["betas"] if b in THINKING_BETAS]
        if theirs.get("assistant_blocks"):
            sent = [[b["type"] for b in m["content"]] for m in ours.body["messages"] if m["role"] == "assistant"]
            assert sent == theirs["assistant_blocks"]
            assert ours.body["messages"][1]["content"][0]["signature"] == "sig-recorded-1"  # untouched


def test_thinking_tokens_are_output_tokens_in_the_result(cli, fake_anthropic):
    from tests.fake_anthropic import thinking_block

    fake_anthropic.reply(thinking_block("", "sig-1"), "ok", output_tokens=900)  # the API counts thinking in it
    res = json.loads(cli("-p", "hi", "--output-format", "json").stdout)
    assert res["usage"]["output_tokens"] == 900
    assert res["total_cost_usd"] == pytest.approx((12 * 4 + 900 * 20) / 1e6)  # Opus 5.5: $4 in, $20 out
