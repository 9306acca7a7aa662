"""The Messages API layer: cost per catalog model for one reference session, and what the stream
accumulation costs against the SDK's bare iteration (a long reply with thinking, through the fake server).

Reference session: 40 requests, each 60K input tokens of which 54K cache reads and 5K cache writes,
1.5K output tokens; priced by services/usage.request_cost with each model's catalog rates.
"""

from __future__ import annotations

import asyncio
import os
import sys

from common import best_of, header, table

from services.models import CATALOG
from services.usage import Usage

REQUESTS = 40
PER_REQUEST = {"input_tokens": 1_000, "cache_read_input_tokens": 54_000, "cache_creation_input_tokens": 5_000,
               "output_tokens": 1_500}
NO_CACHE = {"input_tokens": 60_000, "output_tokens": 1_500}


def cost_table() -> None:
    rows = []
    for model, info in CATALOG.items():
        cached, plain = Usage(), Usage()
        for _ in range(REQUESTS):
            cached.add(PER_REQUEST, model=model)
            plain.add(NO_CACHE, model=model)
        rows.append([model, f"{info.context_window:,}", f"{info.max_output:,}", f"{info.default_max_tokens:,}",
                     info.thinking, f"${cached.cost():.2f}", f"${plain.cost():.2f}",
                     f"{cached.input_tokens + cached.cache_read_input_tokens + cached.cache_creation_input_tokens:,}"])
    table(rows, ["model", "window", "max out", "default max_tokens", "thinking", "session (cached)",
                 "session (no cache)", "input tokens"])


def stream_overhead() -> None:
    from agent.model.anthropic import AnthropicModel
    from services.model_types import ModelRequest, ModelResponse
    from tests.fake_anthropic import FakeAnthropic, thinking_block

    text = "word " * 40_000  # 200 KB of answer, 50K deltas of 4 characters
    thought = "step " * 10_000
    fake = FakeAnthropic()
    os.environ.update({"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "bench-key"})
    req = ModelRequest([{"role": "user", "content": [{"type": "text", "text": "go"}]}], "", [], "claude-sonnet-4-5",
                       64_000)
    model = AnthropicModel(max_retries=0)

    async def ours() -> None:
        fake.reply(thinking_block(thought, "sig"), text)
        final = [e async for e in model(req) if isinstance(e, ModelResponse)]
        assert final[0].message["content"][1]["text"] == text

    async def bare() -> None:
        fake.reply(thinking_block(thought, "sig"), text)
        stream = await model.client().messages.create(model=req.model, max_tokens=req.max_tokens,
                                                      messages=req.messages, stream=True)
        async with stream:
            async for _ in stream:
                pass

    loop = asyncio.new_event_loop()
    try:
        t_ours = best_of(lambda: loop.run_until_complete(ours()), 3)
        t_bare = best_of(lambda: loop.run_until_complete(bare()), 3)
    finally:
        loop.close()
        fake.close()
    deltas = len(text) // 4 + len(thought) // 4
    table([["SDK iteration only", f"{t_bare * 1000:.0f} ms", f"{deltas / t_bare / 1000:.0f}K/s"],
           ["our provider (accumulate, thinking, events)", f"{t_ours * 1000:.0f} ms",
            f"{deltas / t_ours / 1000:.0f}K/s"]],
          ["250 KB reply (62K deltas) via the fake server", "median of 3", "deltas"])
    print(f"overhead of the accumulation: {t_ours / t_bare:.2f}x the bare SDK iteration")


def main() -> int:
    header("Messages API: cost per catalog model, stream accumulation overhead")
    cost_table()
    print()
    stream_overhead()
    return 0


if __name__ == "__main__":
    sys.exit(main())
