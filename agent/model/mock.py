"""The offline mock model (`--mock`, `QUERY_MOCK=1`): deterministic, no key, no network.

It drives the real loop and real tools so a new user can watch the agent work: on a fresh prompt it
calls one tool (Read a file the prompt names, else Echo for `echo ...`, else Glob the project), then
answers with what the tool returned.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.model.scripted import _emit, reply
from services.messages import blocks_of, result_text, text_block, tool_use_block
from services.model_types import ModelEvent, ModelRequest

_counter = itertools.count(1)


def _last_prompt(request: ModelRequest) -> tuple[str, list[dict]]:
    """The latest user text and the tool results that came after it."""
    results: list[dict] = []
    for msg in reversed(request.messages):
        if msg["role"] != "user":
            continue
        blocks: list[dict[str, Any]] = (blocks_of(msg) if isinstance(msg["content"], list)
                                        else [dict(text_block(msg["content"]))])
        trs = [b for b in blocks if b.get("type") == "tool_result"]
        if trs:
            results = trs + results
            continue
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        return text, results
    return "", results


def _named_file(prompt: str) -> str | None:
    for token in re.findall(r"[\w./-]+", prompt):
        if ("." in token or "/" in token) and Path(token).is_file():
            return token
    return None


def choose(request: ModelRequest) -> dict:
    prompt, results = _last_prompt(request)
    names = {t["name"] for t in request.tools}
    if results:
        first = result_text(results[-1].get("content", ""))
        lines = first.strip().splitlines()
        head = "\n".join(lines[:8])
        more = f"\n… ({len(lines) - 8} more lines)" if len(lines) > 8 else ""
        status = "failed" if results[-1].get("is_error") else "returned"
        return {"text": f"Mock model: the tool {status} {len(first)} characters.\n\n{head}{more}"}
    tid = f"toolu_mock_{os.getpid()}_{next(_counter)}"
    path = _named_file(prompt)
    if path and "Read" in names:
        return {"tool": tool_use_block(tid, "Read", {"file_path": path})}
    echo = re.search(r"\becho\s+(.+)", prompt, re.I | re.S)
    if echo and "Echo" in names:
        return {"tool": tool_use_block(tid, "Echo", {"message": echo.group(1).strip()})}
    if "Glob" in names:
        return {"tool": tool_use_block(tid, "Glob", {"pattern": "*"})}
    if "Echo" in names:
        return {"tool": tool_use_block(tid, "Echo", {"message": prompt or "hello"})}
    return {"text": f"Mock model: you said {prompt!r}."}


def mock_call_model(request: ModelRequest) -> AsyncIterator[ModelEvent]:
    return _mock(request)


async def _mock(request: ModelRequest) -> AsyncIterator[ModelEvent]:
    await asyncio.sleep(0)
    choice = choose(request)
    usage = {"input_tokens": sum(len(str(m["content"])) for m in request.messages) // 4, "output_tokens": 20}
    if "tool" in choice:
        response = reply("I'll use a tool for that.", choice["tool"], usage=usage)
    else:
        response = reply(choice["text"], usage=usage)
    async for event in _emit(response):
        yield event
