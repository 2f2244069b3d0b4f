"""Tool arguments as clients send them: a list or an object some clients send as a JSON string (`"[1, 2]"`) is
decoded where the tool's input schema does not take a string there. One rule for a section's own tools (their pydantic
input model's schema) and for the tools the gateway forwards (the section's published schema)."""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel


def decode_stringified_json(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with each JSON-in-a-string value decoded where `schema` (an object schema) does not accept a string
    for that property; a property the schema does not describe is left as it is."""
    properties = schema.get("properties") or {}
    definitions = schema.get("$defs") or {}
    decoded = dict(arguments)
    for name, value in arguments.items():
        if name not in properties or _accepts_string(properties[name], definitions):
            continue
        if (container := json_container(value)) is not None:
            decoded[name] = container
    return decoded


@functools.cache
def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of an input model (computed once per model)."""
    return model.model_json_schema()


def json_container(value: Any) -> list[Any] | dict[str, Any] | None:
    """The list or object a string holds as JSON (e.g. `"[1, 2]"`), else None."""
    if not isinstance(value, str):
        return None
    stripped = value.strip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, list | dict) else None


def _accepts_string(schema: Any, definitions: dict[str, Any], depth: int = 0) -> bool:
    """Whether a property's schema takes a string (unknown shapes do: the value is kept as it is)."""
    if not isinstance(schema, dict) or depth > 8:
        return True
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        return _accepts_string(definitions.get(reference.removeprefix("#/$defs/")), definitions, depth + 1)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return "string" in kinds
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return any(_accepts_string(option, definitions, depth + 1) for option in schema[key])
    if "enum" in schema or "const" in schema:
        return any(isinstance(value, str) for value in schema.get("enum", [schema.get("const")]))
    return True
