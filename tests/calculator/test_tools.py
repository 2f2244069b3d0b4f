"""The calculator's tools through the official `mcp` client, in memory (one server per module, plus one
short-timeout server for the TIMEOUT case); test_stdio.py runs the same server over stdio."""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_sections.servers.calculator.operations import BINARY_OPS, UNARY_OPS, VALID_CONSTANTS
from mcp_sections.servers.calculator.units import unit_names
from tests.calculator.helpers import literal
from tests.in_memory import section_in_memory
from tests.stdio import data_of, fail, text_of

HARD_INTEGRAL = "exp(x**7)*sin(x**5)*log(x)/(1 + x**3)**(1/3)"


# 20×20, symbols mixed with radicals: only sympy's generic expression domain fits, and eigenvects explodes
HARD_EIGENVECTS = (
    "eigenvects("
    + literal(
        [["x" if i == j else "sqrt(2)" if (i + j) % 5 == 0 else (i * j) % 7 - 3 for j in range(20)] for i in range(20)]
    )
    + ")"
)


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("calculator")
    (base / "config.toml").write_text("", encoding="utf-8")
    return {"MCP_SECTIONS_CONFIG": str(base / "config.toml"), "MCP_SECTIONS_DATA_DIR": str(base / "data")}


@pytest.fixture(scope="module")
async def client(environment: dict[str, str]) -> AsyncIterator[Client]:
    async with section_in_memory("calculator", env=environment) as connected:
        yield connected


async def call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    result = await client.call_tool(tool, arguments)
    data = data_of(result)
    return data, text_of(result)


@pytest.mark.anyio
async def test_every_unary_operation(client: Client) -> None:
    for operation in UNARY_OPS:
        value = 0.5
        data, text = await call(client, "calculator_unary", operation=operation, value=value)
        assert data["operation"] == operation and data["input"] == value and math.isfinite(data["result"])
        assert text.startswith(f"{operation}(0.5) = ")
    data, text = await call(client, "calculator_unary", operation="sqrt", value=16)
    assert data == {"operation": "sqrt", "input": 16.0, "result": 4.0, "note": None} and text == "sqrt(16) = 4"


@pytest.mark.anyio
async def test_every_binary_operation(client: Client) -> None:
    expected = {
        "add": 12.0,
        "subtract": 8.0,
        "multiply": 20.0,
        "divide": 5.0,
        "modulo": 0.0,
        "pow": 100.0,
        "log": math.log(10, 2),
        "min": 2.0,
        "max": 10.0,
        "atan2": math.atan2(10, 2),
        "nroot": math.sqrt(10),
    }
    assert set(expected) == set(BINARY_OPS)
    for operation, result in expected.items():
        data, _ = await call(client, "calculator_binary", operation=operation, a=10, b=2)
        assert data["inputs"] == {"a": 10.0, "b": 2.0}
        assert data["result"] == pytest.approx(result)
    _, text = await call(client, "calculator_binary", operation="pow", a=2, b=10)
    assert text == "pow(2, 10) = 1024"


@pytest.mark.anyio
async def test_every_constant(client: Client) -> None:
    for name in VALID_CONSTANTS:
        data, text = await call(client, "calculator_constant", name=name)
        assert data["constant"] == name and text.startswith(f"{name} = ")
    data, _ = await call(client, "calculator_constant", name="pi")
    assert data["value"] == math.pi


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("calculator_unary", {"operation": "sqrt", "value": -1}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "ln", "value": 0}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "log10", "value": -3}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "asin", "value": 2}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "acos", "value": -2}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "tan", "value": math.pi / 2}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "divide", "a": 1, "b": 0}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "modulo", "a": 1, "b": 0}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "pow", "a": -8, "b": 0.5}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "log", "a": 8, "b": 1}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "log", "a": -8, "b": 2}, "VALIDATION_FAILED"),
        ("calculator_binary", {"operation": "nroot", "a": -16, "b": 2}, "VALIDATION_FAILED"),
        ("calculator_unary", {"operation": "exp", "value": 1000}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_binary", {"operation": "multiply", "a": 1e300, "b": 1e10}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_unary", {"operation": "cot", "value": 1}, "INVALID_INPUT"),
        ("calculator_unary", {"operation": "sqrt", "value": 1e309}, "INVALID_INPUT"),
        ("calculator_unary", {"operation": "sqrt", "value": "nan"}, "INVALID_INPUT"),
        ("calculator_unary", {"operation": "sqrt"}, "INVALID_INPUT"),
        ("calculator_binary", {"operation": "add", "a": 1, "b": 2, "c": 3}, "INVALID_INPUT"),
        ("calculator_constant", {"name": "phi"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "__import__('os').system('id')"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "().__class__.__bases__[0]"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "x + 1"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "1/0"}, "VALIDATION_FAILED"),
        ("calculator_evaluate", {"expression": "9**9**9"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "10**10**10"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "factorial(10**7)"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "1e400"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "(" * 50 + "1" + ")" * 50}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "1+" * 50_000 + "1"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "2", "digits": 101}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "det([[1, 2, 3], [4, 5, 6]])"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "inv([[1, 2], [2, 4]])"}, "VALIDATION_FAILED"),
        ("calculator_evaluate", {"expression": "[[1, 2], [3, 4]] * [[1, 2, 3]]"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "Matrix(2, 2, lambda i, j: 0)"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "[['a']]"}, "INVALID_INPUT"),
        ("calculator_evaluate", {"expression": "ones(10**9)"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "[[1, 2], [3, 4]]**10**9"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": literal([[1] * 41] * 41)}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_evaluate", {"expression": "[" + "1, " * 40_000 + "1]"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_simplify", {"expression": "x", "method": "magic"}, "INVALID_INPUT"),
        ("calculator_simplify", {"expression": "x.y"}, "INVALID_INPUT"),
        ("calculator_solve", {"equations": []}, "INVALID_INPUT"),
        ("calculator_solve", {"equations": ["x = 1"] * 7}, "INVALID_INPUT"),
        ("calculator_solve", {"equations": ["x < 1"]}, "INVALID_INPUT"),
        ("calculator_solve", {"equations": ["x" * 3000 + " = 1"]}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_differentiate", {"expression": "x**2", "order": 11}, "INVALID_INPUT"),
        ("calculator_differentiate", {"expression": "x*y"}, "INVALID_INPUT"),
        ("calculator_integrate", {"expression": "x", "lower": "0"}, "INVALID_INPUT"),
        ("calculator_integrate", {"expression": "1/x", "lower": "-1", "upper": "1"}, "VALIDATION_FAILED"),
        ("calculator_convert_units", {"value": 1, "from_unit": "m", "to_unit": "s"}, "VALIDATION_FAILED"),
        ("calculator_convert_units", {"value": 1, "from_unit": "parsnip", "to_unit": "m"}, "INVALID_INPUT"),
        ("calculator_convert_units", {"value": 1e308, "from_unit": "km", "to_unit": "nm"}, "MAX_LIMIT_EXCEEDED"),
        ("calculator_teleport", {}, "NOT_FOUND"),
    ],
)
async def test_error_codes(client: Client, tool: str, arguments: dict[str, Any], code: str) -> None:
    message = await fail(client, tool, code, **arguments)
    assert message and len(message) < 3000


@pytest.mark.anyio
async def test_evaluate_and_simplify(client: Client) -> None:
    data, text = await call(client, "calculator_evaluate", expression="sqrt(2)")
    assert text == "sqrt(2) = 1.41421356237310" and data["value"] == pytest.approx(math.sqrt(2))
    data, text = await call(client, "calculator_evaluate", expression="2^10 + 0.1", digits=5)
    assert data["exact"] == "10241/10" and data["numeric"] == "1024.1" and text == "2^10 + 0.1 = 10241/10 = 1024.1"
    data, _ = await call(client, "calculator_simplify", expression="(x**2 - 1)/(x - 1)")
    assert data["result"] == "x + 1"
    data, text = await call(client, "calculator_simplify", expression="x**2 - 5*x + 6", method="factor")
    assert text == "factor: x**2 - 5*x + 6 = (x - 3)*(x - 2)"


@pytest.mark.anyio
async def test_linear_algebra(client: Client) -> None:
    data, text = await call(client, "calculator_evaluate", expression="inv([[1, 2], [3, 4]])")
    assert data["kind"] == "matrix" and data["shape"] == [2, 2] and data["matrix"] == [["-2", "1"], ["3/2", "-1/2"]]
    assert text == "inv([[1, 2], [3, 4]]) = [[-2, 1], [3/2, -1/2]] = [[-2, 1], [1.50000000000000, -0.500000000000000]]"
    data, _ = await call(client, "calculator_evaluate", expression="det([[a, b], [c, d]])")
    assert data["exact"] == "a*d - b*c" and data["kind"] == "number"
    data, text = await call(client, "calculator_evaluate", expression="linsolve([x + y == 3, x - y == 1], [x, y])")
    assert data["solutions"] == [{"x": "2", "y": "1"}] and text.endswith("= {x: 2, y: 1}")
    data, _ = await call(client, "calculator_evaluate", expression="eigenvects([[2, 1], [1, 2]])")
    assert [(e["value"], e["vectors"]) for e in data["eigenvalues"]] == [("1", [["-1", "1"]]), ("3", [["1", "1"]])]
    big = literal([[(3 * i + j) % 17 - 8 + (i == j) * 40 for j in range(40)] for i in range(40)])
    data, _ = await call(client, "calculator_evaluate", expression=f"rank({big}) + trace({big})")  # ~13 kB of text
    assert data["exact"] == str(40 + sum((4 * i) % 17 - 8 + 40 for i in range(40)))
    message = await fail(client, "calculator_evaluate", "VALIDATION_FAILED", expression="inv([[1, 2], [2, 4]])")
    assert "singular" in message and "linsolve" in message


@pytest.mark.anyio
async def test_solve_differentiate_integrate(client: Client) -> None:
    data, text = await call(client, "calculator_solve", equations=["x + y = 3", "x - y = 1"])
    assert data["solutions"] == [{"x": "2", "y": "1"}] and text == "x = 2, y = 1"
    data, _ = await call(client, "calculator_solve", equations='["x^2 = 2"]', domain="real")  # stringified list
    assert data["solutions"] == [{"x": "-sqrt(2)"}, {"x": "sqrt(2)"}]
    data, text = await call(client, "calculator_differentiate", expression="x**3*sin(x)")
    assert data["result"] == "x**2*(x*cos(x) + 3*sin(x))" and text.startswith("d/dx [x**3*sin(x)] = ")
    data, _ = await call(client, "calculator_differentiate", expression="a*t**3", variable="t", order=2)
    assert data["result"] == "6*a*t"
    data, text = await call(client, "calculator_integrate", expression="x**2")
    assert text == "∫ x**2 dx = x**3/3 + C"
    data, _ = await call(client, "calculator_integrate", expression="exp(-x**2)", lower="-oo", upper="oo")
    assert data["result"] == "sqrt(pi)" and data["closed_form"] is True


@pytest.mark.anyio
async def test_each_solution_has_its_numeric_value_and_one_equation_its_solution_set(client: Client) -> None:
    """An outside tester's quadratic answered approximations [{}, {}] (integers were left out) and solution_set null
    (only infinite sets were given), against the tool's description."""
    data, text = await call(client, "calculator_solve", equations=["x^2 - 5*x + 6 = 0"])
    assert data["solutions"] == [{"x": "2"}, {"x": "3"}] and data["approximations"] == [{"x": "2"}, {"x": "3"}]
    assert data["solution_set"] == "{2, 3}" and data["complete"] is True and text == "x = 2; x = 3"
    data, text = await call(client, "calculator_solve", equations=["x + y = 1", "x - y = 1/3"])
    assert data["solutions"] == [{"x": "2/3", "y": "1/3"}] and data["solution_set"] is None
    assert data["approximations"] == [{"x": "0.666666666666667", "y": "0.333333333333333"}]
    assert text == "x = 2/3 ≈ 0.666666666666667, y = 1/3 ≈ 0.333333333333333"
    data, _ = await call(client, "calculator_solve", equations=["x + y = 3", "x - y = 1"])
    assert data["approximations"] == [{"x": "2", "y": "1"}]
    data, text = await call(client, "calculator_solve", equations=["exp(x) = 5"], domain="real")
    assert data["solutions"] == [{"x": "log(5)"}] and data["approximations"] == [{"x": "1.60943791243410"}]
    assert data["solution_set"] == "{log(5)}" and text == "x = log(5) ≈ 1.60943791243410"
    # no closed form for the set: the particular solutions sympy finds, each with its value, and the set as it is
    data, text = await call(client, "calculator_solve", equations=["x*exp(x) = 1"], domain="real")
    assert data["solutions"] == [{"x": "LambertW(1)"}] and data["approximations"] == [{"x": "0.567143290409784"}]
    assert data["solution_set"].startswith("ConditionSet(x") and data["complete"] is False
    assert text.startswith("x = LambertW(1) ≈ 0.567143290409784 (found by sympy, perhaps not all: ConditionSet(")
    data, _ = await call(client, "calculator_solve", equations=["2^y = 64"])  # one of the tool's own examples
    assert data["solutions"] == [{"y": "6"}] and data["approximations"] == [{"y": "6"}]
    data, _ = await call(client, "calculator_solve", equations=["a*x + b = 0"], variables=["x"])
    assert data["solutions"] == [{"x": "-b/a"}] and data["approximations"] == [{}] and data["solution_set"] == "{-b/a}"


@pytest.mark.anyio
async def test_each_stated_length_limit_is_the_schemas(client: Client) -> None:
    """Every 'at most N characters' of an argument's description is the maxLength of the argument (or its items):
    the largest N it states (calculator_evaluate states three, by the literals an expression holds). calculator_solve's
    equations said 2000 with a maxLength of 100,000 (and its variables, 64, where a name has at most 32)."""
    checked = []
    for listed in (await client.list_tools()).tools:
        for name, schema in listed.input_schema["properties"].items():
            stated = re.search(r"at most ([^.]*?characters[^.]*)\.", schema.get("description", ""), re.IGNORECASE)
            if stated is None:
                continue
            branches = [schema, *schema.get("anyOf", ())]
            limits = [branch.get("maxLength") or branch.get("items", {}).get("maxLength") for branch in branches]
            limit = next(value for value in limits if value)
            assert limit == max(int(number) for number in re.findall(r"\d+", stated.group(1))), (listed.name, name)
            checked.append(f"{listed.name}.{name}")
    assert {"calculator_solve.equations", "calculator_solve.variables", "calculator_evaluate.expression"} <= set(
        checked
    ) and len(checked) >= 6


@pytest.mark.anyio
async def test_an_equation_of_the_stated_length_is_taken_and_one_more_character_refused(client: Client) -> None:
    equation = "x" + " " * 1996 + "= 1"
    assert len(equation) == 2000
    data, _ = await call(client, "calculator_solve", equations=[equation])
    assert data["solutions"] == [{"x": "1"}]
    message = await fail(client, "calculator_solve", "MAX_LIMIT_EXCEEDED", equations=[equation + " "])
    assert "2001 characters" in message and "limit is 2000" in message


@pytest.mark.anyio
async def test_an_unknown_unit_lists_every_unit_that_converts(client: Client) -> None:
    """The list came from the linear units alone and left out degC and degF, which convert."""
    message = await fail(client, "calculator_convert_units", "INVALID_INPUT", value=1, from_unit="furlong", to_unit="m")
    listed = message.split("accepted units: ", 1)[1].removesuffix(".").split(", ")
    assert {"degC", "degF", "celsius", "fahrenheit", "K", "km"} <= set(listed)
    assert listed == sorted(unit_names())
    data, _ = await call(client, "calculator_convert_units", value=100, from_unit="celsius", to_unit="degF")
    assert data["result"] == 212.0
    message = await fail(client, "calculator_convert_units", "INVALID_INPUT", value=1, from_unit="degF/s", to_unit="K")
    assert "convert only on their own" in message


@pytest.mark.anyio
async def test_convert_units(client: Client) -> None:
    data, text = await call(client, "calculator_convert_units", value=100, from_unit="km/h", to_unit="m/s")
    assert data["exact"] == "250/9" and text == "100 km/h = 27.77777777777778 m/s"
    data, _ = await call(client, "calculator_convert_units", value=100, from_unit="degC", to_unit="degF")
    assert data["result"] == 212.0
    message = await fail(client, "calculator_convert_units", "VALIDATION_FAILED", value=1, from_unit="kg", to_unit="J")
    assert "mass" in message


@pytest.mark.anyio
async def test_concurrent_calls_share_the_worker(client: Client) -> None:
    results: dict[int, str] = {}

    async def one(n: int) -> None:
        data, _ = await call(client, "calculator_evaluate", expression=f"factorial({n})")
        results[n] = data["exact"]

    async with anyio.create_task_group() as group:
        for n in range(10, 18):
            group.start_soon(one, n)
    assert results == {n: str(math.factorial(n)) for n in range(10, 18)}


@pytest.mark.anyio
async def test_timeout_restarts_the_worker_and_the_server_keeps_answering(environment: dict[str, str]) -> None:
    env = {**environment, "MCP_SECTIONS_CALCULATOR_TIMEOUT_SECONDS": "0.5"}
    async with section_in_memory("calculator", env=env) as short:
        await short.list_tools()
        data, _ = await call(short, "calculator_evaluate", expression="2+2")  # worker is up
        assert data["exact"] == "4"
        for _ in range(2):
            started = anyio.current_time()
            message = await fail(short, "calculator_integrate", "TIMEOUT", expression=HARD_INTEGRAL)
            assert "0.5 s" in message and "restarted" in message
            assert anyio.current_time() - started < 8
            data, _ = await call(short, "calculator_evaluate", expression="sqrt(16)")  # the fresh worker answers
            assert data["exact"] == "4"
        data, _ = await call(short, "calculator_unary", operation="sqrt", value=9)  # float tools never used it
        assert data["result"] == 3.0
        message = await fail(short, "calculator_evaluate", "TIMEOUT", expression=HARD_EIGENVECTS)
        assert "restarted" in message and "smaller matrix" in message and "numbers instead of symbols" in message
        data, _ = await call(short, "calculator_evaluate", expression="det([[1, 2], [3, 4]])")
        assert data["exact"] == "-2"
