"""Check a section tool's arguments against its inputSchema (jsonschema) before forwarding the call.

A tool's checker (`ArgumentChecker`) is built once, the first time the tool is called, and kept next to its
definition: the schema is checked once, a valid call costs one `is_valid()`, and the report is only computed for a
call that fails. A built-in tool's arguments are judged by the pydantic model its inputSchema is generated from (what
the section itself validates with; ~20× cheaper than jsonschema), and a refused call is reported exactly as the
section would report it; a third-party tool's by its schema. The report's wording is the suite's one
(`shared.framework.argument_errors`): the argument, what it must be, never the value. `jsonschema` is imported on
first use, not at gateway start.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from mcp_sections.shared.framework.argument_errors import invalid_arguments, model_problems, schema_problems
from mcp_sections.shared.framework.arguments import decode_stringified_json

SEE_DESCRIBE = "see the tool's inputSchema via describe_section"


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
        if self._model is not None:
            try:
                self._model.model_validate(decoded)
            except PydanticValidationError as exc:
                raise invalid_arguments(model_problems(self._model, exc, decoded), self.tool, SEE_DESCRIBE) from None
            return decoded
        if self._validator is None or self._validator.is_valid(decoded):
            return decoded
        raise invalid_arguments(schema_problems(self._validator, decoded), self.tool, SEE_DESCRIBE)


def validate_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """One-off check (builds the checker each time; the gateway keeps one per tool instead)."""
    return ArgumentChecker(tool, schema).check(arguments)
