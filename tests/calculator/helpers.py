"""What the calculator's tests share: matrix literals, and symbolic.evaluate in-process with its coded failures."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mcp_sections.servers.calculator import symbolic
from mcp_sections.servers.calculator.models import EvaluateResult
from mcp_sections.shared.ground.errors import ToolFailure


def literal(rows: Sequence[Sequence[object]]) -> str:
    """The matrix literal `[[a, b], [c, d]]` of `rows` (each entry as its `str`)."""
    return "[" + ", ".join("[" + ", ".join(str(value) for value in row) + "]" for row in rows) + "]"


def evaluate(expression: str, digits: int = 15) -> EvaluateResult:
    return EvaluateResult(**symbolic.evaluate(expression, digits))


def failure(expression: str) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        symbolic.evaluate(expression)
    return caught.value


def assert_fails(expression: str, code: str, needle: str) -> None:
    """Evaluating `expression` fails with `code`, and its message says `needle` (how to fix the call)."""
    failed = failure(expression)
    assert failed.code.value == code and needle in failed.message, failed.message
