"""Is a model name served by the endpoint? Asked by /model before it takes a name outside the catalog.

In order: the Models API (`GET /v1/models/{id}`: 200 is yes, with the limits it reports); when that
says 404, the model list (`GET /v1/models`): if the endpoint lists models, a name it 404s is not
served; when the endpoint has no Models API, a minimal probe (`POST /v1/messages`, `max_tokens` 1).
A 404, or a 400 that names the model, is a no; anything else (network, auth, overload) cannot tell,
and the name is taken with a caution rather than refused on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["served", "not_served", "unknown"]
PROBE_MESSAGES = [{"role": "user", "content": "hi"}]


@dataclass(frozen=True)
class ModelCheck:
    verdict: Verdict
    how: str  # "models_api" | "probe" | ""
    window: int | None = None  # the Models API's max_input_tokens
    max_tokens: int | None = None  # the Models API's max_tokens
    detail: str = ""  # why it could not tell


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _names_model(exc: BaseException) -> bool:
    return "model" in str(getattr(exc, "message", "") or exc).lower()


async def _models_api(client: Any, model: str) -> ModelCheck | None:
    """The Models API's answer, or None when the endpoint has none (the probe decides then)."""
    try:
        found = await client.models.retrieve(model)
    except Exception as exc:  # noqa: BLE001 - the SDK's error classes; anything else is "cannot tell"
        if _status(exc) != 404:
            return None
    else:
        window = getattr(found, "max_input_tokens", None)
        limit = getattr(found, "max_tokens", None)
        return ModelCheck("served", "models_api", window if isinstance(window, int) else None,
                          limit if isinstance(limit, int) else None)
    try:
        await client.models.list(limit=1)
    except Exception:  # noqa: BLE001 - no model list either: this endpoint has no Models API
        return None
    return ModelCheck("not_served", "models_api")


async def _probe(client: Any, model: str) -> ModelCheck:
    try:
        await client.messages.create(model=model, max_tokens=1, messages=PROBE_MESSAGES)
    except Exception as exc:  # noqa: BLE001
        status = _status(exc)
        if status == 404 or (status == 400 and _names_model(exc)):
            return ModelCheck("not_served", "probe")
        what = f"HTTP {status}" if status else type(exc).__name__
        return ModelCheck("unknown", "probe", detail=what)
    return ModelCheck("served", "probe")


async def check_model(client: Any, model: str) -> ModelCheck:
    """Ask the endpoint whether it serves `model` (the id as sent to the API)."""
    answer = await _models_api(client, model)
    return answer if answer is not None else await _probe(client, model)
