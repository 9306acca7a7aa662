"""Token accounting: the rough estimate and the usage-anchored canonical count."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from services.messages import (
    assistant_message,
    image_block,
    text_block,
    tool_result_block,
    tool_use_block,
    user_message,
)
from services.tokens import (
    IMAGE_TOKENS,
    count_tokens_exact,
    estimate_tokens,
    token_count_with_estimation,
    usage_tokens,
)


def test_text_chars_over_four_rounded_up():
    assert estimate_tokens([user_message("abcde")]) == 2
    assert estimate_tokens([user_message("abcd")]) == 1
    assert estimate_tokens([]) == 0


def test_images_and_documents_fixed_cost():
    big = "A" * 4_000_000  # base64 size must not count
    img = user_message([image_block("image/png", big)])
    assert estimate_tokens([img]) == IMAGE_TOKENS == 2000
    doc = user_message([{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": big}}])  # type: ignore[list-item]
    assert estimate_tokens([doc]) == 2000
    in_result = user_message([tool_result_block("t", [text_block("x" * 40), image_block("image/png", big)])])
    assert estimate_tokens([in_result]) == 2000 + 10


def test_json_read_counts_chars_over_two():
    body = "{" + "x" * 398 + "}"  # 400 chars
    msgs = [
        assistant_message([tool_use_block("j", "Read", {"file_path": "data.json"}),
                           tool_use_block("p", "Read", {"file_path": "main.py"})]),
        user_message([tool_result_block("j", body), tool_result_block("p", body)]),
    ]
    uses = estimate_tokens(msgs[:1])
    assert estimate_tokens(msgs) - uses == 200 + 100
    # A JSON Read whose tool_use precedes the slice is still recognised through the full history.
    assert estimate_tokens(msgs[1:], json_read_ids={"j"}) == 300


def test_usage_sum():
    assert usage_tokens({"input_tokens": 10, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30,
                         "output_tokens": 5}) == 65
    assert usage_tokens(None) == 0


def test_anchor_at_last_usage_plus_estimate():
    usage = {"input_tokens": 1000, "output_tokens": 50}
    msgs = [
        user_message("q" * 400),
        assistant_message([text_block("a")], usage={"input_tokens": 5, "output_tokens": 5}),
        user_message("r" * 400),
        assistant_message([tool_use_block("t1", "Bash", {})], usage=usage),
        user_message([tool_result_block("t1", "z" * 4000)]),
    ]
    assert token_count_with_estimation(msgs) == 1050 + 1000
    assert token_count_with_estimation(msgs[:1]) == 100  # no usage: the whole estimate


def test_split_response_anchors_at_first_record():
    usage = {"input_tokens": 1000, "output_tokens": 50}
    a1 = assistant_message([tool_use_block("t1", "Bash", {})], usage=usage)
    a1["meta"] = {"message_id": "msg_A"}
    a2 = assistant_message([tool_use_block("t2", "Bash", {})], usage=usage)
    a2["meta"] = {"message_id": "msg_A"}
    prev = assistant_message([text_block("x")], usage={"input_tokens": 1, "output_tokens": 1})
    prev["meta"] = {"message_id": "msg_0"}
    msgs = [user_message("go"), prev, a1, user_message([tool_result_block("t1", "y" * 4000)]),
            a2, user_message([tool_result_block("t2", "z" * 4000)])]
    # Both interleaved results are counted (and a2's own tool_use block).
    est_a2 = estimate_tokens([a2])
    assert token_count_with_estimation(msgs) == 1050 + 1000 + est_a2 + 1000


def test_synthetic_assistant_skipped():
    real = assistant_message([text_block("a")], usage={"input_tokens": 100, "output_tokens": 0})
    fake = assistant_message([text_block("b" * 40)], usage={"input_tokens": 9999, "output_tokens": 0})
    fake["meta"] = {"synthetic": True}
    assert token_count_with_estimation([real, fake]) == 100 + 10


def test_exact_count_through_client():
    class Messages:
        def __init__(self):
            self.kwargs = None

        def count_tokens(self, **kw):
            self.kwargs = kw
            return SimpleNamespace(input_tokens=42)

    client = SimpleNamespace(messages=Messages())
    n = asyncio.run(count_tokens_exact(client, "m", [user_message("hi")], system="sys"))
    assert n == 42 and client.messages.kwargs["system"] == "sys"

    class Broken:
        def count_tokens(self, **kw):
            raise RuntimeError("no network")

    assert asyncio.run(count_tokens_exact(SimpleNamespace(messages=Broken()), "m", [])) is None
