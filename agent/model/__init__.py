"""Model providers: the Anthropic streaming client, and offline ones (mock, scripted)."""

from services.model_types import CallModel, ModelError, ModelRequest, ModelResponse, Retrying, TextDelta

__all__ = ["CallModel", "ModelError", "ModelRequest", "ModelResponse", "Retrying", "TextDelta"]
