"""Credentials out of any text that is shown or written (error lines, API error bodies, traces).

An API error can echo the request's key (a gateway quoting the header, a 401 body); every such text
passes through `scrub` before it reaches a terminal, a result object or a transcript.
"""

from __future__ import annotations

import re

from services.config import agent_environ

REDACTED = "[REDACTED]"
# Anthropic keys, Bearer tokens and the header forms of both, whatever the value looks like.
_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{4,}"),
    re.compile(r"(?i)((?:x-api-key|api[_-]?key|authorization|auth[_-]?token)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{4,}"),
]
_SECRET_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def scrub(text: str) -> str:
    """`text` with the configured credential values and anything shaped like a key replaced."""
    if not text:
        return text
    for name in _SECRET_VARS:
        value = agent_environ().get(name, "")
        if len(value) >= 6:  # a one-letter "key" would redact half the message
            text = text.replace(value, REDACTED)
    text = _PATTERNS[0].sub(REDACTED, text)
    for pattern in _PATTERNS[1:]:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text
