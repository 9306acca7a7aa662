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
    """None when the input is valid, else `Invalid input for <Tool>: <what is wrong>`."""
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
    error = jsonschema.exceptions.best_match(validator.iter_errors(input))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    prefix = f"'{where}': " if where else ""
    return f"Invalid input for {tool.name}: {prefix}{error.message}. Check the tool's input schema and retry."
