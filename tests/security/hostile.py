"""Helpers for the hostile-repository tests: build the repository, read what the model was sent back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import TEST_KEY
from tests.fake_anthropic import FakeAnthropic
from tests.files import write

PY = sys.executable


def marker_script(path: Path, marker: Path) -> str:
    """A command that, when run, writes its environment to `marker` (proves it ran, shows what it saw)."""
    write(path, f"import json, os, sys\nopen({str(marker)!r}, 'w').write(json.dumps(dict(os.environ)))\n")
    return f"{PY} {path}"


def tool_results_sent(fake: FakeAnthropic) -> list[dict[str, Any]]:
    out = []
    for rec in fake.requests:
        for m in rec.messages:
            for b in m.get("content", []) if isinstance(m.get("content"), list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    out.append(b)
    return out


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def no_secret_sent(*fakes: FakeAnthropic) -> None:
    """The key is only ever in the auth header, never in a request body."""
    for fake in fakes:
        for rec in fake.requests:
            assert TEST_KEY.encode() not in rec.raw, "the API key was sent in a request body"


def settings(path: Path, data: dict[str, Any]) -> Path:
    return write(path, json.dumps(data))
