"""Lean JSON Schemas: the same constraints in fewer tokens (the gateway's own tools use them).

The gateway's `tools/list` sits in the model's context on every turn, so its own tools' schemas are compacted
(the sections' schemas, served by `describe_section` or `--expose`, are never touched):
- no `title`s (pydantic derives them from the field and class names the schema already shows);
- `$defs` inlined where used once-or-more and not recursive, so there are no nested definitions to follow;
- `"default": null` goes (a field absent from `required` is optional already); nullable values keep pydantic's
  `anyOf: [X, {"type": "null"}]` form, which every client reads (a `type: [X, "null"]` list is legal JSON
  Schema but some clients reject it or drop the constraint: the MCP Inspector's portability check flags it);
- output schemas keep their structure and types but no per-field descriptions (the tool's description says
  what comes back, and the text content repeats it).
Every change keeps what validates: a result that matched the pydantic schema matches the lean one.
"""

from __future__ import annotations

from typing import Any

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains", "propertyNames")


def lean_schema(schema: dict[str, Any], *, descriptions: bool = True) -> dict[str, Any]:
    """A compact equivalent of a pydantic JSON Schema (`descriptions=False` also drops field descriptions)."""
    definitions = schema.get("$defs") or {}
    return _lean(schema, definitions, descriptions, seen=(), top=True)


def _lean(node: Any, definitions: dict[str, Any], descriptions: bool, seen: tuple[str, ...], top: bool = False) -> Any:
    if not isinstance(node, dict):
        return node
    inlined = _inlined(node, definitions, descriptions, seen)
    if inlined is not None:
        return inlined
    return {
        key: _lean_member(key, value, definitions, descriptions, seen)
        for key, value in node.items()
        if not _dropped(key, value, definitions, descriptions, top)
    }


def _inlined(
    node: dict[str, Any], definitions: dict[str, Any], descriptions: bool, seen: tuple[str, ...]
) -> dict[str, Any] | None:
    """A `$ref` to a definition not being inlined already, replaced by it (with the node's other keys); else None."""
    ref = node.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
        return None
    name = ref.removeprefix("#/$defs/")
    if name not in definitions or name in seen:
        return None
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    inlined = _lean(definitions[name], definitions, descriptions, (*seen, name))
    return {**inlined, **_lean(siblings, definitions, descriptions, seen)}


def _dropped(key: str, value: Any, definitions: dict[str, Any], descriptions: bool, top: bool) -> bool:
    """Titles, `$defs` once all are inlined, `default: null`, and (unless kept) descriptions below the top."""
    if key == "title" or (key == "$defs" and _all_inlinable(definitions)):
        return True
    if key == "description" and not descriptions and not top:
        return True
    return key == "default" and value is None


def _lean_member(key: str, value: Any, definitions: dict[str, Any], descriptions: bool, seen: tuple[str, ...]) -> Any:
    """A member of a schema, its subschemas made lean."""
    if key in _SCHEMA_MAPS and isinstance(value, dict):
        return {name: _lean(item, definitions, descriptions, seen) for name, item in value.items()}
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [_lean(item, definitions, descriptions, seen) for item in value]
    if key in _SCHEMA_VALUES and isinstance(value, dict):
        return _lean(value, definitions, descriptions, seen)
    return value


def _all_inlinable(definitions: dict[str, Any]) -> bool:
    """$defs can go when no definition refers (directly or not) to itself."""
    return not any(_refers_to(name, definitions[name], definitions, ()) for name in definitions)


def _refers_to(target: str, node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> bool:
    if isinstance(node, list):
        return any(_refers_to(target, item, definitions, seen) for item in node)
    if not isinstance(node, dict):
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name == target:
            return True
        if name not in seen and name in definitions:
            return _refers_to(target, definitions[name], definitions, (*seen, name))
    return any(_refers_to(target, value, definitions, seen) for value in node.values())
