"""Check a section tool's arguments against its inputSchema (jsonschema) before forwarding the call.

Messages name the argument and what is wrong with it, never echo the value, and end with how to fix it.
A tool's checker (`ArgumentChecker`) is built once, the first time the tool is called, and kept next to its
definition: the schema is checked once, a valid call costs one `is_valid()`, and the detailed error report
is only computed for a call that fails. A built-in tool's arguments are first tried against the pydantic
model its inputSchema is generated from (what the section itself validates with; ~20× cheaper than
jsonschema); only arguments the model refuses go through jsonschema, for the report. `jsonschema` is
imported on first use, not at gateway start.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from mcp_sections.shared.framework.arguments import decode_stringified_json
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

MAX_REPORTED_ERRORS = 8


class ArgumentChecker:
    """One tool's argument check: its schema checked and its validator built once."""

    __slots__ = ("_model", "_schema", "_validator", "tool")

    def __init__(self, tool: str, schema: dict[str, Any], model: type[BaseModel] | None = None) -> None:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError

        self.tool = tool
        self._model = model
        self._schema = schema
        try:
            validator_class = validators.validator_for(schema)
            validator_class.check_schema(schema)
        except SchemaError:
            self._validator = None  # a broken schema is the section's problem: let it judge the call itself
        else:
            self._validator = validator_class(schema)

    def check(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments to forward (JSON-in-a-string values decoded where the schema wants a list/object)."""
        decoded = decode_stringified_json(self._schema, arguments)
        if self._model is not None and _accepted_by(self._model, decoded):
            return decoded
        if self._validator is None or self._validator.is_valid(decoded):
            return decoded
        errors = sorted(self._validator.iter_errors(decoded), key=lambda error: list(error.absolute_path))
        problems = [_describe(error) for error in errors[:MAX_REPORTED_ERRORS]]
        more = len(errors) - len(problems)
        suffix = f" (and {more} more)" if more > 0 else ""
        raise ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"Invalid arguments for {self.tool} — "
            + "; ".join(problems)
            + suffix
            + ". Fix these (see the tool's inputSchema via describe_section) and call again.",
            fields=sorted({field for error in errors for field in _fields(error)}),
        )


def _accepted_by(model: type[BaseModel], arguments: dict[str, Any]) -> bool:
    try:
        model.model_validate(arguments)
    except PydanticValidationError:
        return False
    return True


def validate_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """One-off check (builds the checker each time; the gateway keeps one per tool instead)."""
    return ArgumentChecker(tool, schema).check(arguments)


def _where(error: ValidationError, extra: str | None = None) -> str:
    parts = [str(part) for part in error.absolute_path]
    if extra is not None:
        parts.append(extra)
    return ".".join(parts) or "arguments"


def _fields(error: ValidationError) -> list[str]:
    """The argument(s) an error is about (an unknown argument is named itself, not its parent)."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema.get("properties") or {}).keys())
        return [_where(error, name) for name in error.instance if name not in known] or [_where(error)]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        return [_where(error, name) for name in missing] or [_where(error)]
    return [_where(error)]


def _describe(error: ValidationError) -> str:
    kind, expected = error.validator, error.validator_value
    if kind in ("anyOf", "oneOf") and error.context:
        # Say what is wrong in the alternative that came closest, ignoring the `null` of an optional field.
        # A branch that refused the value's type outright says less than one that looked inside it.
        candidates = [e for e in error.context if not (e.validator == "type" and e.validator_value == "null")]
        same_level = len(error.absolute_path)
        inside = [e for e in candidates if not (e.validator == "type" and len(e.absolute_path) == same_level)]
        if candidates and not inside:  # every branch refused the type: name them all
            kinds: list[str] = []
            for candidate in error.context:
                values = (
                    candidate.validator_value
                    if isinstance(candidate.validator_value, list)
                    else [candidate.validator_value]
                )
                kinds += [str(value) for value in values if str(value) not in kinds]
            return f"{_where(error)}: must be of type {' or '.join(kinds)}"
        from jsonschema.exceptions import best_match

        best = best_match(inside or candidates) if candidates else None
        if best is not None:
            return _describe(best)
        return f"{_where(error)}: does not match any accepted form"
    if kind == "required":
        missing = [name for name in expected if isinstance(error.instance, dict) and name not in error.instance]
        return "; ".join(f"{_where(error, name)}: required argument is missing" for name in missing) or _where(error)
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema.get("properties") or {}).keys())
        extra = [name for name in error.instance if name not in known]
        return "; ".join(
            f"{_where(error, name)}: unknown argument; remove it (accepted: {', '.join(sorted(known)) or 'none'})"
            for name in extra[:5]
        )
    messages = {
        "type": lambda: f"must be of type {expected if isinstance(expected, str) else ' or '.join(expected)}",
        "enum": lambda: "must be one of " + ", ".join(json.dumps(value) for value in expected[:20]),
        "const": lambda: f"must be {json.dumps(expected)}",
        "minimum": lambda: f"must be >= {expected}",
        "maximum": lambda: f"must be <= {expected}",
        "exclusiveMinimum": lambda: f"must be > {expected}",
        "exclusiveMaximum": lambda: f"must be < {expected}",
        "minLength": lambda: f"must be at least {expected} characters long",
        "maxLength": lambda: f"must be at most {expected} characters long",
        "minItems": lambda: f"must have at least {expected} items",
        "maxItems": lambda: f"must have at most {expected} items",
        "pattern": lambda: f"must match the pattern {expected}",
        "format": lambda: f"must be a valid {expected}",
        "multipleOf": lambda: f"must be a multiple of {expected}",
        "uniqueItems": lambda: "items must be unique",
    }
    describe = messages.get(str(kind))
    if describe is not None:
        return f"{_where(error)}: {describe()}"
    return f"{_where(error)}: does not match the schema ({kind})"
