"""operations.py: the seed's 23 unary operations, 11 binary operations, 6 constants, domains and bounds."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from mcp_sections.servers.calculator import operations as ops
from mcp_sections.servers.calculator.models import BinaryInput, UnaryInput
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.serving.calls import parse_arguments

UNARY_CASES: dict[str, list[tuple[float, float]]] = {
    "sin": [(0, 0), (math.pi / 2, 1)],
    "cos": [(0, 1), (math.pi, -1)],
    "tan": [(0, 0), (math.pi / 4, 1)],
    "asin": [(1, math.pi / 2), (-1, -math.pi / 2)],
    "acos": [(1, 0), (-1, math.pi)],
    "atan": [(1, math.pi / 4)],
    "sinh": [(0, 0), (1, math.sinh(1))],
    "cosh": [(0, 1)],
    "tanh": [(0, 0), (1000, 1)],
    "sqrt": [(16, 4), (0, 0), (2, math.sqrt(2))],
    "cbrt": [(27, 3), (-8, -2)],
    "exp": [(0, 1), (1, math.e)],
    "exp2": [(10, 1024), (-1, 0.5)],
    "ln": [(1, 0), (math.e, 1)],
    "log10": [(1000, 3), (0.01, -2)],
    "floor": [(2.7, 2), (-2.5, -3)],
    "ceil": [(2.1, 3), (-2.5, -2)],
    "round": [(2.5, 3), (-2.5, -3), (0.49999999999999994, 0), (1.4, 1)],
    "trunc": [(2.7, 2), (-2.7, -2)],
    "abs": [(-3.5, 3.5), (2, 2)],
    "sign": [(-4, -1), (0, 0), (7, 1)],
    "degrees": [(math.pi, 180)],
    "radians": [(180, math.pi)],
}

BINARY_CASES: dict[str, list[tuple[float, float, float]]] = {
    "add": [(2, 3, 5), (0.1, 0.2, 0.30000000000000004)],
    "subtract": [(2, 3, -1)],
    "multiply": [(4, 2.5, 10)],
    "divide": [(1, 4, 0.25), (-9, 3, -3)],
    "modulo": [(17, 5, 2), (-7, 3, -1), (7.5, 2, 1.5)],
    "pow": [(2, 10, 1024), (-2, 3, -8), (4, 0.5, 2), (2, -1, 0.5)],
    "log": [(8, 2, 3), (1000, 10, 3)],
    "min": [(3.5, 2.1, 2.1)],
    "max": [(3.5, 2.1, 3.5)],
    "atan2": [(1, 1, math.pi / 4), (0, -1, math.pi)],
    "nroot": [(27, 3, 3), (-8, 3, -2), (16, 4, 2), (2, 2, math.sqrt(2)), (-32, 5, -2)],
}


def test_the_seed_lists_are_complete() -> None:
    assert len(ops.UNARY_OPS) == 23 and set(ops.UNARY_OPS) == set(UNARY_CASES) == set(ops.UNARY)
    assert len(ops.BINARY_OPS) == 11 and set(ops.BINARY_OPS) == set(BINARY_CASES) == set(ops.BINARY)
    assert ops.VALID_CONSTANTS == ("pi", "e", "tau", "sqrt2", "ln2", "ln10")


@pytest.mark.parametrize(
    ("operation", "value", "expected"),
    [(operation, value, expected) for operation, cases in UNARY_CASES.items() for value, expected in cases],
)
def test_unary(operation: str, value: float, expected: float) -> None:
    assert ops.unary(operation, value).result == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("operation", "a", "b", "expected"),
    [(operation, a, b, expected) for operation, cases in BINARY_CASES.items() for a, b, expected in cases],
)
def test_binary(operation: str, a: float, b: float, expected: float) -> None:
    assert ops.binary(operation, a, b).result == pytest.approx(expected, abs=1e-12)


def test_exact_roots_are_snapped() -> None:
    assert ops.binary("nroot", 27, 3).result == 3.0
    assert ops.binary("nroot", 1024, 10).result == 2.0


@pytest.mark.parametrize(
    ("operation", "value", "needle"),
    [
        ("sqrt", -1, "square root of a negative"),
        ("ln", 0, "> 0"),
        ("ln", -5, "> 0"),
        ("log10", 0, "> 0"),
        ("asin", 1.5, "[-1, 1]"),
        ("acos", -1.0001, "[-1, 1]"),
        ("tan", math.pi / 2, "odd multiple of pi/2"),
        ("tan", -3 * math.pi / 2, "odd multiple of pi/2"),
    ],
)
def test_unary_domain_errors(operation: str, value: float, needle: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        ops.unary(operation, value)
    assert caught.value.code.value == "VALIDATION_FAILED"
    assert needle in caught.value.message


@pytest.mark.parametrize(
    ("operation", "a", "b", "needle"),
    [
        ("divide", 1, 0, "division by zero"),
        ("modulo", 1, 0, "modulo by zero"),
        ("pow", -8, 1 / 3, "non-integer power"),
        ("pow", 0, -1, "division by zero"),
        ("log", 0, 2, "a > 0"),
        ("log", -1, 2, "a > 0"),
        ("log", 8, 1, "base"),
        ("log", 8, 0, "base"),
        ("log", 8, -2, "base"),
        ("nroot", -16, 4, "even root"),
        ("nroot", -16, 2.5, "non-integer root"),
        ("nroot", 16, 0, "0th root"),
    ],
)
def test_binary_domain_errors(operation: str, a: float, b: float, needle: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        ops.binary(operation, a, b)
    assert caught.value.code.value == "VALIDATION_FAILED"
    assert needle in caught.value.message


@pytest.mark.parametrize(
    ("operation", "args"),
    [
        ("exp", (1000.0,)),
        ("sinh", (1000.0,)),
        ("cosh", (-1000.0,)),
        ("exp2", (1024.0,)),
        ("multiply", (1e200, 1e200)),
        ("add", (1e308, 1e308)),
        ("pow", (10.0, 400.0)),
        ("divide", (1e308, 1e-10)),
        ("degrees", (1e307,)),
        ("nroot", (1e300, 0.1)),
    ],
)
def test_results_beyond_max_value(operation: str, args: tuple[float, ...]) -> None:
    with pytest.raises(ToolFailure) as caught:
        ops.unary(operation, *args) if len(args) == 1 else ops.binary(operation, *args)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED"
    assert "1e+308" in caught.value.message


def test_underflow_is_reported_as_zero_with_a_note() -> None:
    outcome = ops.unary("exp", -710)  # 4.5e-309: a subnormal float
    assert outcome.result == 0.0 and outcome.note and "MIN_POSITIVE" in outcome.note
    assert ops.binary("multiply", 1e-200, 1e-110).result == 0.0
    assert ops.unary("exp", -10).note is None


def test_negative_zero_is_normalised() -> None:
    assert math.copysign(1, ops.binary("multiply", -1, 0).result) == 1


@pytest.mark.parametrize("name", ["pi", "e", "tau", "sqrt2", "ln2", "ln10"])
def test_constants(name: str) -> None:
    value, description = ops.constant(name)
    expected = {"pi": math.pi, "e": math.e, "tau": 2 * math.pi, "sqrt2": 2**0.5, "ln2": math.log(2)}
    assert value == pytest.approx(expected.get(name, math.log(10)))
    assert description


@pytest.mark.parametrize(
    "arguments",
    [
        {"operation": "sqrt", "value": float("nan")},
        {"operation": "sqrt", "value": float("inf")},
        {"operation": "sqrt", "value": "nan"},
        {"operation": "sqrt", "value": 1e309},
        {"operation": "sqrt", "value": -2e308},
        {"operation": "sqrt", "value": "abc"},
        {"operation": "sqrt"},
        {"operation": "cot", "value": 1},
        {"operation": "sqrt", "value": 1, "extra": 2},
    ],
)
def test_unary_inputs_are_validated(arguments: dict[str, object]) -> None:
    with pytest.raises(ToolFailure) as caught:
        parse_arguments(UnaryInput, arguments)
    assert caught.value.code.value == "INVALID_INPUT"


def test_binary_inputs_are_validated() -> None:
    with pytest.raises(ValidationError):
        BinaryInput(operation="pow", a=float("nan"), b=1)
    with pytest.raises(ValidationError):
        BinaryInput.model_validate({"operation": "xor", "a": 1, "b": 2})
    assert BinaryInput(operation="pow", a=1e308, b=-1e308).a == 1e308


def test_format_number() -> None:
    assert ops.format_number(4.0) == "4"
    assert ops.format_number(-2.5) == "-2.5"
    assert ops.format_number(1e20) == "1e+20"
