"""symbolic.py run in-process (the worker runs the same functions): results, errors and their codes."""

from __future__ import annotations

import re

import pytest

from mcp_sections.servers.calculator import symbolic
from mcp_sections.servers.calculator.models import (
    ConvertUnitsResult,
    DifferentiateResult,
    EvaluateResult,
    IntegrateResult,
    SimplifyResult,
    SolveResult,
)
from mcp_sections.servers.calculator.units import UNIT_NAMES_DOC, unit_names
from mcp_sections.shared.ground.errors import ToolFailure


def code_of(function: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(ToolFailure) as caught:
        function(*args, **kwargs)  # type: ignore[operator]
    return caught.value.code.value


def test_evaluate() -> None:
    result = EvaluateResult(**symbolic.evaluate("sqrt(2)"))
    assert result.exact == "sqrt(2)" and result.numeric == "1.41421356237310"
    assert result.render_text() == "sqrt(2) = 1.41421356237310"
    assert EvaluateResult(**symbolic.evaluate("sqrt(8)")).render_text() == "sqrt(8) = 2*sqrt(2) = 2.82842712474619"
    assert EvaluateResult(**symbolic.evaluate("2+3")).render_text() == "2+3 = 5"
    assert symbolic.evaluate("0.1 + 0.2")["exact"] == "3/10"
    assert symbolic.evaluate("2**100")["exact"] == str(2**100)
    assert symbolic.evaluate("pi", digits=50)["numeric"].startswith("3.14159265358979323846264338327950288419716939937")
    assert symbolic.evaluate("exp(1000)")["value"] is None  # beyond 1e308: the numeric string still has it
    assert symbolic.evaluate("exp(1000)")["numeric"].endswith("e+434")
    assert symbolic.evaluate("sqrt(-4)")["exact"] == "2*I" and symbolic.evaluate("sqrt(-4)")["value"] is None
    assert symbolic.evaluate("factorial(1000)")["exact"].startswith("402387260077")


@pytest.mark.parametrize(
    ("expression", "code"),
    [
        ("1/0", "VALIDATION_FAILED"),
        ("0/0", "VALIDATION_FAILED"),
        ("tan(pi/2)", "VALIDATION_FAILED"),
        ("oo - oo", "VALIDATION_FAILED"),
        ("x + 1", "INVALID_INPUT"),
        ("9**9**9", "MAX_LIMIT_EXCEEDED"),
    ],
)
def test_evaluate_errors(expression: str, code: str) -> None:
    assert code_of(symbolic.evaluate, expression) == code


@pytest.mark.parametrize(
    ("expression", "method", "expected"),
    [
        ("(x**2 - 1)/(x - 1)", "simplify", "x + 1"),
        ("sin(t)**2 + cos(t)**2", "simplify", "1"),
        ("(x + 1)**3", "expand", "x**3 + 3*x**2 + 3*x + 1"),
        ("x**2 - 5*x + 6", "factor", "(x - 3)*(x - 2)"),
        ("(x**2 + 2*x + 1)/(x + 1)", "cancel", "x + 1"),
        ("2*sin(x)*cos(x)", "trigsimp", "sin(2*x)"),
    ],
)
def test_simplify(expression: str, method: str, expected: str) -> None:
    result = SimplifyResult(**symbolic.simplify(expression, method))
    assert result.result == expected
    assert result.render_text() == f"{method}: {expression} = {expected}"


def test_simplify_output_bound() -> None:
    assert code_of(symbolic.simplify, "(a + b)**300", "expand") == "MAX_LIMIT_EXCEEDED"


def test_solve() -> None:
    result = SolveResult(**symbolic.solve(["x^2 = 2"]))
    assert result.solutions == [{"x": "-sqrt(2)"}, {"x": "sqrt(2)"}]
    assert result.render_text() == "x = -sqrt(2) ≈ -1.41421356237310; x = sqrt(2) ≈ 1.41421356237310"
    system = SolveResult(**symbolic.solve(["x + y = 3", "x - y == 1"]))
    assert system.solutions == [{"x": "2", "y": "1"}] and system.render_text() == "x = 2, y = 1"
    assert symbolic.solve(["x^2 + 1 = 0"])["solutions"] == [{"x": "-I"}, {"x": "I"}]
    real = SolveResult(**symbolic.solve(["x^2 + 1 = 0"], domain="real"))
    assert real.solutions == [] and real.solution_set == "EmptySet"
    assert real.render_text() == "no solution in the real numbers"
    periodic = symbolic.solve(["sin(x) = 0"], domain="real")
    assert periodic["solutions"] == [] and "ImageSet" in periodic["solution_set"]
    parametric = symbolic.solve(["a*x + b = 0"], variables=["x"])
    assert parametric["solutions"] == [{"x": "-b/a"}] and parametric["variables"] == ["x"]
    quintic = symbolic.solve(["x**5 - x + 1"])
    assert len(quintic["solutions"]) == 5 and quintic["approximations"][0]["x"].startswith("-1.1673")


@pytest.mark.parametrize(
    ("equations", "variables", "code"),
    [
        (["1 = 1"], None, "INVALID_INPUT"),
        (["x < 1"], None, "INVALID_INPUT"),
        (["x = 1 = 2"], None, "INVALID_INPUT"),
        (["x = 1"], ["sin"], "INVALID_INPUT"),
        (["x = 1"], ["1x"], "INVALID_INPUT"),
        (["p + q + r + s + t + u + v = 0"], None, "MAX_LIMIT_EXCEEDED"),
        (["1/0 = x"], None, "VALIDATION_FAILED"),
    ],
)
def test_solve_errors(equations: list[str], variables: list[str] | None, code: str) -> None:
    assert code_of(symbolic.solve, equations, variables) == code


def test_differentiate() -> None:
    result = DifferentiateResult(**symbolic.differentiate("x**3*sin(x)"))
    assert result.result == "x**2*(x*cos(x) + 3*sin(x))" and result.variable == "x"
    assert result.render_text() == "d/dx [x**3*sin(x)] = x**2*(x*cos(x) + 3*sin(x))"
    assert symbolic.differentiate("x**3 + y*x", "x", 3)["result"] == "6"
    assert symbolic.differentiate("a*t**2", "t")["result"] == "2*a*t"
    assert symbolic.differentiate("5")["result"] == "0"
    assert DifferentiateResult(**symbolic.differentiate("x**4", order=2)).render_text() == "d^2/dx^2 [x**4] = 12*x**2"
    assert code_of(symbolic.differentiate, "x*y") == "INVALID_INPUT"  # two variables, none named


def test_integrate() -> None:
    indefinite = IntegrateResult(**symbolic.integrate("x**2"))
    assert indefinite.result == "x**3/3" and indefinite.closed_form and indefinite.value is None
    assert indefinite.render_text() == "∫ x**2 dx = x**3/3 + C"
    definite = IntegrateResult(**symbolic.integrate("x**2", lower="0", upper="1"))
    assert definite.result == "1/3" and definite.value == pytest.approx(1 / 3)
    assert definite.render_text() == "∫[0, 1] x**2 dx = 1/3 ≈ 0.333333333333333"
    gauss = symbolic.integrate("exp(-x**2)", lower="-oo", upper="oo")
    assert gauss["result"] == "sqrt(pi)" and gauss["value"] == pytest.approx(1.7724538509055159)
    assert symbolic.integrate("1/x**2", lower="1", upper="oo")["result"] == "1"
    assert symbolic.integrate("1/x", lower="1", upper="oo")["result"] == "oo"
    no_closed_form = symbolic.integrate("x**x", lower="0", upper="1")
    assert not no_closed_form["closed_form"] and no_closed_form["value"] == pytest.approx(0.7834305107121344)
    assert symbolic.integrate("a*t", variable="t")["result"] == "a*t**2/2"


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"expression": "x", "lower": "0"}, "INVALID_INPUT"),
        ({"expression": "1/x", "lower": "-1", "upper": "1"}, "VALIDATION_FAILED"),
        ({"expression": "x", "lower": "__import__('os')", "upper": "1"}, "INVALID_INPUT"),
        ({"expression": "x*y"}, "INVALID_INPUT"),
    ],
)
def test_integrate_errors(arguments: dict[str, str], code: str) -> None:
    assert code_of(symbolic.integrate, **arguments) == code


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (100, "km/h", "m/s", 250 / 9),
        (1, "kWh", "J", 3.6e6),
        (100, "degC", "degF", 212),
        (32, "fahrenheit", "celsius", 0),
        (0, "K", "degC", -273.15),
        (180, "deg", "rad", 3.141592653589793),
        (1, "GiB", "MB", 1073.741824),
        (1, "mile", "km", 1.609344),
        (1, "lb", "kg", 0.45359237),
        (9.81, "m/s^2", "ft/s**2", 32.18503937007874),
        (1, "kg*m/s**2", "N", 1),
        (1, "atm", "kPa", 101.325),
        (1, "gal", "L", 3.785411784),
        (2, "h", "min", 120),
        (1, "byte", "bit", 8),
    ],
)
def test_convert_units(value: float, source: str, target: str, expected: float) -> None:
    result = ConvertUnitsResult(**symbolic.convert_units(value, source, target))
    assert result.result == pytest.approx(expected)
    assert result.render_text().startswith(f"{value} {source} = ")


@pytest.mark.parametrize(
    ("source", "target", "code", "needle"),
    [
        ("m", "s", "VALIDATION_FAILED", "length vs time"),
        ("km/h", "kg", "VALIDATION_FAILED", "dimensions differ"),
        ("furlong", "m", "INVALID_INPUT", "unknown unit"),
        ("m + s", "m", "INVALID_INPUT", "units combine with"),
        ("degC/s", "K/s", "INVALID_INPUT", "offset"),
        ("degC", "m", "INVALID_INPUT", "offset"),
        ("__import__('os')", "m", "INVALID_INPUT", "'_'"),
        ("sqrt(m)", "m", "INVALID_INPUT", "not allowed in unit expressions"),
        ("m**10**10", "m", "MAX_LIMIT_EXCEEDED", "exponent"),
    ],
)
def test_convert_units_errors(source: str, target: str, code: str, needle: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        symbolic.convert_units(1.0, source, target)
    assert caught.value.code.value == code and needle in caught.value.message, caught.value.message


def test_every_unit_listed_converts_and_the_description_names_none_that_does_not() -> None:
    """The units an unknown name's INVALID_INPUT lists, and those the tool's description names, all convert."""
    for name in unit_names():
        assert symbolic.convert_units(2.0, name, name)["result"] == 2.0, name
    head, _, long_names = UNIT_NAMES_DOC.partition("(long names such as")
    described = {word for part in head.split(";") for word in part.split()[1:] if word != "(US)"}
    described |= set(re.findall(r"[A-Za-z]+", long_names)) - {"also", "work"}
    assert described <= set(unit_names()), sorted(described - set(unit_names()))


def test_convert_result_beyond_max_value() -> None:
    assert code_of(symbolic.convert_units, 1e308, "km", "nm") == "MAX_LIMIT_EXCEEDED"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotImplementedError("multiple generators"), "EXECUTION_FAILED"),
        (TypeError("bad"), "EXECUTION_FAILED"),
        (RecursionError("deep"), "MAX_LIMIT_EXCEEDED"),
    ],
)
def test_sympy_errors_become_tool_failures(monkeypatch: pytest.MonkeyPatch, error: Exception, code: str) -> None:
    """sympy's own exceptions must come back as codes (the server never unpickles a sympy class)."""

    def broken(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(symbolic.sympy, "solve", broken)
    assert code_of(symbolic.solve, ["x + y = 1", "x - y = 0"]) == code
