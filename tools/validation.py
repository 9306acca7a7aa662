"""Input validation against a tool's JSON Schema, with a one-line error the model can act on."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from services.messages import INVALID_INPUT_KEY
from tools.base import Tool


@lru_cache(maxsize=256)
def _validator_for(schema_key: int, tool: Tool) -> Any:
    from jsonschema import Draft202012Validator  # imported at the first tool call: start-up stays light

    return Draft202012Validator(tool.input_schema)


def validate_input(tool: Tool, input: Any) -> str | None:
    """None when the input is valid, else `InputValidationError: <Tool> failed due to the following issues:` + lines."""
    if not isinstance(input, dict):
        return f"Invalid input for {tool.name}: expected a JSON object, got {type(input).__name__}."
    if INVALID_INPUT_KEY in input:
        return (
            f"Invalid input for {tool.name}: the arguments were not valid JSON ({input[INVALID_INPUT_KEY]}). "
            "Send the call again with a JSON object."
        )
    import jsonschema

    try:
        validator = _validator_for(id(tool.input_schema), tool)
    except jsonschema.SchemaError as exc:
        return f"{tool.name} has an invalid input schema: {exc.message}"
    errors = sorted(validator.iter_errors(input), key=lambda e: (len(e.absolute_path), _RANK.get(e.validator, 1)))
    if not errors:
        return None
    issues: list[str] = []
    for error in errors:
        issue = _issue(error)
        if issue not in issues:
            issues.append(issue)
    # Claude Code's wording: the model is trained to read and fix exactly this shape.
    return f"InputValidationError: {tool.name} failed due to the following issues:\n" + "\n".join(issues)


_RANK = {"required": 0, "additionalProperties": 2}  # Claude Code lists missing fields first
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object",
               type(None): "null"}


def _issue(error: Any) -> str:  # a jsonschema.ValidationError (jsonschema is imported lazily)
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [f for f in error.validator_value if isinstance(error.instance, dict) and f not in error.instance]
        return "\n".join(f"The required parameter `{'.'.join([path, f]) if path else f}` is missing" for f in missing)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties") or {})
        extra = [k for k in error.instance if k not in allowed]
        return "\n".join(f"An unexpected parameter `{'.'.join([path, k]) if path else k}` was provided" for k in extra)
    if error.validator == "type":
        expected = error.validator_value if isinstance(error.validator_value, str) else " or ".join(error.validator_value)
        got = _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
        return f"The parameter `{path}` type is expected as `{expected}` but provided as `{got}`"
    message = error.message if len(error.message) <= 300 else error.message[:300] + "…"  # never echo a huge value
    return f"The parameter `{path}` is invalid: {message}" if path else message
