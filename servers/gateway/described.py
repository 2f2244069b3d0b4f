"""describe_section's text: what a model needs to call a section's tools, in a few lines per tool.

A client that shows the model only a result's text (many do) must still be able to call the tools correctly; the
full definitions stay in `structuredContent`. Per tool: its name, what it does to things (read-only, writes,
destructive, open world), its purpose (the first sentence of its description), then one line per argument — its
type, its bounds (lengths, counts, ranges, pattern), its default, whether it is required, and its description's first
sentence. For the tools named in `tools`, the whole description and every argument's whole description. A schema
this does not read (a third-party section's `oneOf`, `allOf`, ...) is shown as compact JSON, so nothing is lost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

MAX_DEPTH = 4  # nested objects deeper than this are shown as JSON
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\.\.\.)(?<=[.!?])\s+(?=[A-Z])|\n\s*\n")
SAFE_INTEGER = 2**53  # a bound this large only says "any": not shown


def tools_text(definitions: Sequence[Mapping[str, Any]], full: bool) -> list[str]:
    """The lines describing these tools (`full`: whole descriptions)."""
    lines: list[str] = []
    for definition in definitions:
        description = str(definition.get("description") or "").strip()
        purpose = description if full else first_sentence(description)
        effects = _effects(definition.get("annotations") or {})
        lines.append(
            f"{definition.get('name')} ({effects}): {purpose}" if purpose else f"{definition.get('name')} ({effects})"
        )
        schema = definition.get("inputSchema") or {}
        lines += [f"  {line}" for line in arguments_text(schema, full)] or ["  (no arguments)"]
    return lines


def arguments_text(schema: Mapping[str, Any], full: bool) -> list[str]:
    """One line per argument of an object schema."""
    definitions = schema.get("$defs") or {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return [] if schema.get("type") == "object" and not schema.get("additionalProperties") else [_json(schema)]
    required = set(schema.get("required") or [])
    lines = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        said = [type_text(prop, definitions)]
        default = prop.get("default")
        if "default" in prop and default is not None:
            said.append(f"default {_json(default)}")
        if name in required:
            said.append("required")
        description = str(prop.get("description") or "").strip()
        about = description if full else first_sentence(description)
        lines.append(f"{name}: {', '.join(said)}" + (f" — {about}" if about else ""))
    return lines


def type_text(schema: Mapping[str, Any], definitions: Mapping[str, Any], depth: int = 0) -> str:
    """A value's type with its bounds, in a few words (`string 1-4096 chars`, `"a" | "b"`, `list of integer`)."""
    schema = _resolved(schema, definitions)
    if depth > MAX_DEPTH:
        return _json(schema)
    if "enum" in schema:
        return " | ".join(_json(value) for value in schema["enum"])
    if "const" in schema:
        return _json(schema["const"])
    if "anyOf" in schema and len(schema) - ("description" in schema) - ("default" in schema) - ("title" in schema) == 1:
        options = [
            option for option in schema["anyOf"] if not (isinstance(option, Mapping) and option == {"type": "null"})
        ]
        return " | ".join(type_text(option, definitions, depth + 1) for option in options) or "null"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = " | ".join(str(item) for item in kind if item != "null")
    if kind == "array":
        items = schema.get("items")
        inner = type_text(items, definitions, depth + 1) if isinstance(items, Mapping) else "any"
        return f"list{_bounds(schema)} of {_grouped(inner)}"
    if kind == "object" or "properties" in schema:
        return _object_text(schema, definitions, depth)
    if isinstance(kind, str) and not set(schema) - _READ:
        return kind + _bounds(schema)
    return _json({key: value for key, value in schema.items() if key not in ("title", "description", "default")})


_READ = {
    "type",
    "title",
    "description",
    "default",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "pattern",
    "format",
    "minItems",
    "maxItems",
}


def _object_text(schema: Mapping[str, Any], definitions: Mapping[str, Any], depth: int) -> str:
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        required = set(schema.get("required") or [])
        fields = [
            f"{name}{'' if name in required else '?'}: {type_text(prop, definitions, depth + 1)}"
            for name, prop in properties.items()
            if isinstance(prop, Mapping)
        ]
        return "{" + ", ".join(fields) + "}"
    values = schema.get("additionalProperties")
    if isinstance(values, Mapping) and values:
        return f"object of {_grouped(type_text(values, definitions, depth + 1))}" + _bounds(schema)
    return "object" + _bounds(schema)


def _bounds(schema: Mapping[str, Any]) -> str:
    said = [
        _range(schema.get("minLength"), schema.get("maxLength"), "chars"),
        _range(schema.get("minItems"), schema.get("maxItems"), "items"),
        _range(schema.get("minProperties"), schema.get("maxProperties"), "entries"),
        _numbers(schema),
    ]
    if "pattern" in schema:
        said.append(f"matching {schema['pattern']}")
    if "format" in schema:
        said.append(str(schema["format"]))
    said = [part for part in said if part]
    return f" ({', '.join(said)})" if said else ""


def _range(low: Any, high: Any, unit: str) -> str:
    if low is not None and high is not None:
        return f"{low}-{high} {unit}"
    if high is not None:
        return f"≤{high} {unit}"
    if low:
        return f"≥{low} {unit}"
    return ""


def _numbers(schema: Mapping[str, Any]) -> str:
    low = (
        f"≥{schema['minimum']}"
        if "minimum" in schema
        else (f">{schema['exclusiveMinimum']}" if "exclusiveMinimum" in schema else "")
    )
    high = (
        f"≤{schema['maximum']}"
        if "maximum" in schema
        else (f"<{schema['exclusiveMaximum']}" if "exclusiveMaximum" in schema else "")
    )
    return " ".join(part for part in (low, high) if part)


def _resolved(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        target = definitions.get(reference.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return {**target, **{key: value for key, value in schema.items() if key != "$ref"}}
    return schema


def _grouped(text: str) -> str:
    return f"({text})" if " | " in text else text


def _effects(annotations: Mapping[str, Any]) -> str:
    """What the tool does to things, by its annotations (absent hints take MCP's defaults: destructive, open world)."""
    if annotations.get("readOnlyHint"):
        said = "read-only"
    elif annotations.get("destructiveHint") is False:
        said = "writes"
    else:
        said = "destructive"
    return f"{said}, open world" if annotations.get("openWorldHint", True) else said


def first_sentence(text: str) -> str:
    """The first sentence of a description (its first paragraph when it has no sentence end), on one line."""
    head = _SENTENCE_END.split(text.strip(), maxsplit=1)[0] if text else ""
    return " ".join(head.split())


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
