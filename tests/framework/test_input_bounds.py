"""Every tool input is bounded: each string has a length limit, each array a count limit, each free-form object a
key limit, so no argument makes a server parse, store or walk megabytes it never meant to accept.

The walk covers every built-in section's tools and the gateway's own, through the input JSON Schema each one
publishes (nested objects, `anyOf` branches and `$defs` included), and names every offending `tool.field`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcp_sections.servers.gateway.section import GATEWAY_TOOLS
from mcp_sections.servers.registry import all_sections
from mcp_sections.shared.framework.tools import ToolSpec, spec_of
from mcp_sections.shared.serving.sdk_tools import spec_schemas

# Formats whose validators read a fixed-size value and refuse anything longer at once (pydantic-core's
# date/time parser, uuid): the format is the bound.
BOUNDED_FORMATS = frozenset({"date-time", "date", "time", "uuid"})

# An anchored pattern with no unbounded repetition (`*`, `+`, `{n,}`) matches only strings of bounded length.
_UNBOUNDED_REPEAT = re.compile(r"(?<!\\)(?:[*+]|\{\d*,\})")

# calculator and web_ops: other engineers bound these fields on their own branches at the same time. The lead
# empties this allowance once those merge (test_the_allowance_lists_only_real_offenders fails for each entry
# that is bounded by then). Nothing else may be listed.


def _specs() -> list[tuple[str, ToolSpec]]:
    specs = [(section.id, spec) for section in all_sections() for spec in section.specs]
    specs += [("gateway", spec_of(function)) for function in GATEWAY_TOOLS]
    return specs


def _bounded_pattern(pattern: str) -> bool:
    return pattern.startswith("^") and pattern.endswith("$") and not _UNBOUNDED_REPEAT.search(pattern)


def unbounded(schema: dict[str, Any]) -> list[str]:
    """Where a JSON Schema accepts input of unbounded size: dotted field paths (`[]` for items, `{}` for values)."""
    definitions = schema.get("$defs") or {}
    found: list[str] = []

    def walk(node: Any, where: str, seen: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:  # a recursive definition is checked once
                walk(definitions[name], where, (*seen, name))
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in node.get(key) or ():
                walk(branch, where, seen)
        if "enum" in node or "const" in node:
            return
        kind = node.get("type")
        kinds = set(kind) if isinstance(kind, list) else {kind}
        if "string" in kinds and "maxLength" not in node:
            pattern = node.get("pattern")
            if node.get("format") not in BOUNDED_FORMATS and not (pattern and _bounded_pattern(pattern)):
                found.append(f"{where} (string without maxLength)")
        if "array" in kinds:
            if "maxItems" not in node:
                found.append(f"{where} (array without maxItems)")
            for index, item in enumerate(node.get("prefixItems") or ()):
                walk(item, f"{where}[{index}]", seen)
            walk(node.get("items"), f"{where}[]", seen)
        if "object" in kinds or "properties" in node:
            for name, value in (node.get("properties") or {}).items():
                walk(value, f"{where}.{name}" if where else name, seen)
            extra = node.get("additionalProperties")
            if extra is True or isinstance(extra, dict) or ("properties" not in node and extra is None):
                if "maxProperties" not in node:
                    found.append(f"{where or '(arguments)'} (free-form object without maxProperties)")
                names = node.get("propertyNames") or {}
                if "maxLength" not in names and "enum" not in names and not _bounded_pattern(names.get("pattern", "")):
                    found.append(f"{where or '(arguments)'} (free-form keys without a length limit)")
                if isinstance(extra, dict):
                    walk(extra, f"{where}{{}}", seen)
        if not kinds - {None} and not any(key in node for key in ("$ref", "anyOf", "oneOf", "allOf")):
            found.append(f"{where} (any JSON value: no type, no bound)")

    walk(schema, "", ())
    return found


def test_the_walk_finds_what_it_should() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "string", "maxLength": 5},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
            "deep": {"$ref": "#/$defs/Deep"},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
            "id": {"type": "string", "pattern": "^[a-z]{1,8}$"},
            "loose": {"type": "string", "pattern": "^[a-z]+$"},
            "mode": {"enum": ["a", "b"], "type": "string"},
            "anything": {},
        },
        "$defs": {"Deep": {"type": "object", "properties": {"items": {"type": "array", "maxItems": 2, "items": {}}}}},
    }
    assert unbounded(schema) == [
        "name (string without maxLength)",
        "tags (array without maxItems)",
        "deep.items[] (any JSON value: no type, no bound)",
        "either (string without maxLength)",
        "map (free-form object without maxProperties)",
        "map (free-form keys without a length limit)",
        "loose (string without maxLength)",
        "anything (any JSON value: no type, no bound)",
    ]


def test_every_tool_input_is_bounded() -> None:
    offenders = []
    for section_id, spec in _specs():
        input_schema, _ = spec_schemas(spec)
        offenders += [f"{section_id}: {spec.name}.{where}" for where in unbounded(input_schema)]
    assert not offenders, "unbounded tool inputs (add max_length / Field limits):\n" + "\n".join(offenders)


def test_the_inputs_named_in_the_issue_are_refused_at_validation() -> None:
    """A 1 MB `exclude` glob and 1 MB paths used to reach the walk (0.9 s); now validation refuses them."""
    from pydantic import ValidationError

    from mcp_sections.servers.file_ops.models import DirectoryTreeInput, ReadMultipleInput

    megabyte = "x" * 1_000_000
    with pytest.raises(ValidationError, match="exclude"):
        DirectoryTreeInput(exclude=[megabyte])
    with pytest.raises(ValidationError, match="paths"):
        ReadMultipleInput(paths=[megabyte])
