"""What is wrong with a call's arguments, in one wording for every path a call takes.

A section's own tools (served alone, or the gateway's own tools) are judged by their pydantic input model, a tool
the gateway forwards by its published inputSchema (`servers/pool/validation.py`); either way the report is made here,
from the JSON Schema errors of the same arguments (`jsonschema`, imported on first use): each problem names the
argument (a dotted path), says what it must be and, for a length or a count, what was given — never the value —
and the INVALID_INPUT failure lists each problem once, with the arguments in `details.fields`. Where pydantic refuses
something the schema cannot say (a validator of the model), pydantic's own words for it are kept.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError
    from jsonschema.protocols import Validator

MAX_REPORTED_ERRORS = 8
SEE_SCHEMA = "see the tool's inputSchema"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the arguments: where (a dotted path, `arguments` for the whole), what, and the
    arguments it is about (an unknown or missing argument by its own name)."""

    where: str
    what: str
    fields: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.where}: {self.what}"


def invalid_arguments(problems: Iterable[Problem], tool: str | None = None, see: str = SEE_SCHEMA) -> ToolFailure:
    """INVALID_INPUT listing each problem once (at most MAX_REPORTED_ERRORS), the arguments in `details.fields`."""
    unique = list(dict.fromkeys(problems))
    shown = unique[:MAX_REPORTED_ERRORS]
    more = len(unique) - len(shown)
    suffix = f" (and {more} more)" if more > 0 else ""
    head = f"Invalid arguments for {tool}" if tool else "Invalid arguments"
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"{head} — " + "; ".join(problem.text for problem in shown) + f"{suffix}. Fix these ({see}) and call again.",
        fields=sorted({field for problem in unique for field in problem.fields}),
    )


def model_problems(model: type[BaseModel], exc: PydanticError, arguments: dict[str, Any]) -> list[Problem]:
    """What pydantic refused in `arguments`, in the schema's words: the model's JSON Schema errors about the arguments
    pydantic refused (what its lax parsing accepted, such as "5" for an integer, is not reported), then pydantic's
    own message for what the schema cannot express (a validator)."""
    errors = exc.errors(include_url=False, include_input=False)
    refused = {str(error["loc"][0]) if error["loc"] else "arguments" for error in errors}
    described = [
        problem
        for problem in schema_problems(_model_validator(model), arguments)
        if {field.split(".")[0] for field in problem.fields} & refused
    ]
    covered = {field.split(".")[0] for problem in described for field in problem.fields}
    return described + [_pydantic_problem(error) for error in errors if _top(error) not in covered]


def schema_problems(validator: Validator, arguments: dict[str, Any]) -> list[Problem]:
    """The problems a JSON Schema validator finds in `arguments`, in the order of the arguments."""
    errors = sorted(validator.iter_errors(arguments), key=lambda error: [str(part) for part in error.absolute_path])
    return [problem for error in errors for problem in _describe(error)]


@functools.cache
def _model_validator(model: type[BaseModel]) -> Validator:
    from jsonschema import validators

    from mcp_sections.shared.framework.arguments import model_schema

    schema = model_schema(model)
    return validators.validator_for(schema)(schema)


def _top(error: Any) -> str:
    return str(error["loc"][0]) if error["loc"] else "arguments"


def _pydantic_problem(error: Any) -> Problem:
    where = ".".join(str(part) for part in error["loc"]) or "arguments"
    what = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return Problem(where, what, (where,))


def _where(error: SchemaError, extra: str | None = None) -> str:
    parts = [str(part) for part in error.absolute_path]
    if extra is not None:
        parts.append(extra)
    return ".".join(parts) or "arguments"


def _describe(error: SchemaError) -> list[Problem]:
    """The problems one JSON Schema error stands for (a `required` or `additionalProperties` error, one per name)."""
    kind, expected, instance = error.validator, error.validator_value, error.instance
    if kind == "required" and isinstance(instance, dict):
        missing = [_where(error, name) for name in expected if name not in instance]
        return [Problem(where, "required argument is missing", (where,)) for where in missing]
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = set((error.schema.get("properties") or {}).keys())
        unknown = "unknown argument; remove it (accepted: " + (", ".join(sorted(known)) or "none") + ")"
        extra = [_where(error, name) for name in instance if name not in known]
        return [Problem(where, unknown, (where,)) for where in extra[:5]]
    if kind in ("anyOf", "oneOf") and error.context:
        return [Problem(where, what, (_where(error),)) for where, what in _alternatives(error)]
    return [Problem(_where(error), wrong(str(kind), expected, instance), (_where(error),))]


def _alternatives(error: SchemaError) -> list[tuple[str, str]]:
    """What is wrong in the alternative that came closest, ignoring the `null` of an optional field. A branch that
    refused the value's type outright says less than one that looked inside it; when every branch refused the type,
    they are all named."""
    candidates = [e for e in error.context or () if not (e.validator == "type" and e.validator_value == "null")]
    same_level = len(error.absolute_path)
    inside = [e for e in candidates if not (e.validator == "type" and len(e.absolute_path) == same_level)]
    if candidates and not inside:
        kinds: list[str] = []
        for candidate in error.context or ():
            value = candidate.validator_value
            kinds += [str(kind) for kind in (value if isinstance(value, list) else [value]) if str(kind) not in kinds]
        return [(_where(error), f"must be of type {' or '.join(kinds)}")]
    from jsonschema.exceptions import best_match

    best = best_match(inside or candidates) if candidates else None
    if best is None:
        return [(_where(error), "does not match any accepted form")]
    branch = list(best.relative_schema_path)[:1]  # every problem of the closest alternative, not only the first
    same = [e for e in inside or candidates if list(e.relative_schema_path)[:1] == branch] or [best]
    described = [problem for each in same for problem in _describe(each)]
    return [(problem.where, problem.what) for problem in described] or [
        (_where(error), "does not match any accepted form")
    ]


MAX_CHOICES_SHOWN = 60


def _one_of(choices: Sequence[Any], given: Any) -> str:
    """'must be one of …' with every choice up to MAX_CHOICES_SHOWN (beyond: how many more, never a silent cut), after
    the closest ones to a mistyped text."""
    shown = ", ".join(json.dumps(value) for value in choices[:MAX_CHOICES_SHOWN])
    more = len(choices) - MAX_CHOICES_SHOWN
    said = f"must be one of {shown}" + (f" and {more} more (see the tool's input schema)" if more > 0 else "")
    texts = [value for value in choices if isinstance(value, str)]
    close = difflib.get_close_matches(given, texts, n=3) if isinstance(given, str) else []
    return said + (f" (did you mean {' or '.join(json.dumps(value) for value in close)}?)" if close else "")


def wrong(keyword: str, expected: Any, given: Any = None) -> str:
    """What an argument must be, by the JSON Schema keyword it breaks; a length or a count says what was given."""
    size = len(given) if isinstance(given, str | list | dict) else None
    got = f" ({size} given)" if size is not None else ""
    said = {
        "type": lambda: f"must be of type {expected if isinstance(expected, str) else ' or '.join(expected)}",
        "enum": lambda: _one_of(_listed(expected), given),
        "const": lambda: f"must be {json.dumps(expected)}",
        "minimum": lambda: f"must be >= {expected}",
        "maximum": lambda: f"must be <= {expected}",
        "exclusiveMinimum": lambda: f"must be > {expected}",
        "exclusiveMaximum": lambda: f"must be < {expected}",
        "minLength": lambda: f"must be at least {_counted(expected, 'character')} long{got}",
        "maxLength": lambda: f"must be at most {_counted(expected, 'character')} long{got}; shorten it",
        "minItems": lambda: f"must have at least {_counted(expected, 'item')}{got}",
        "maxItems": lambda: f"must have at most {_counted(expected, 'item')}{got}; pass fewer",
        "minProperties": lambda: f"must have at least {expected} entries{got}",
        "maxProperties": lambda: f"must have at most {expected} entries{got}",
        "pattern": lambda: f"must match the pattern {expected}",
        "format": lambda: f"must be a valid {expected}",
        "multipleOf": lambda: f"must be a multiple of {expected}",
        "uniqueItems": lambda: "items must be unique",
    }.get(keyword)
    return said() if said is not None else f"does not match the schema ({keyword})"


def _counted(count: Any, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _listed(expected: Any) -> Sequence[Any]:
    return expected if isinstance(expected, list | tuple) else [expected]
