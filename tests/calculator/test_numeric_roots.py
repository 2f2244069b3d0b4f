"""calculator_solve's numeric roots, through the official client in memory: an outside tester's `cos(x) = x` got no
root (sympy has no closed form: a ConditionSet, and the tool gave up)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from mcp import Client

from tests.stdio import data_of, fail, text_of


async def solve(client: Client, *equations: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    result = await client.call_tool("calculator_solve", {"equations": list(equations), **arguments})
    return data_of(result), text_of(result)


def roots_of(data: dict[str, Any]) -> list[str]:
    return [solution["x"] for solution in data["solutions"]]


@pytest.mark.anyio
@pytest.mark.parametrize("domain", ["complex", "real"])
async def test_a_transcendental_equation_gets_its_real_root_numerically(client: Client, domain: str) -> None:
    data, text = await solve(client, "cos(x) = x", domain=domain)
    assert data["solutions"] == [{"x": "0.739085133215161"}] and data["approximations"] == data["solutions"]
    root = float(data["solutions"][0]["x"])
    assert abs(math.cos(root) - root) < 1e-14
    assert data["solution_set"].startswith("ConditionSet(x") and data["complete"] is False
    search = data["numeric_search"]
    assert search["interval"] == [-100.0, 100.0] and search["found"] == 1
    assert "Newton" in search["method"] and "substituting it back" in search["method"]
    assert "[-100, 100]" in search["note"] and "outside it" in search["note"] and "interval" in search["note"]
    assert text.startswith("x ≈ 0.739085133215161 (sympy: ConditionSet(x") and "found numerically" in text


@pytest.mark.anyio
async def test_the_caller_chooses_the_interval(client: Client) -> None:
    data, _ = await solve(client, "sin(x) = x/2")
    assert roots_of(data) == ["-1.89549426703398", "0", "1.89549426703398"]
    data, _ = await solve(client, "sin(x) = x/2", interval=[1, 3])
    assert roots_of(data) == ["1.89549426703398"] and data["numeric_search"]["interval"] == [1.0, 3.0]
    assert "[1, 3]" in data["numeric_search"]["note"]


@pytest.mark.anyio
async def test_poles_and_jumps_are_not_roots(client: Client) -> None:
    """f changes sign across a pole or a jump too: substituting back refuses them."""
    data, _ = await solve(client, "1/(x - 1) = cos(x)", domain="real", interval=[-3, 3])  # a pole at 1
    assert roots_of(data) == ["-1.92029909425716"]
    data, _ = await solve(client, "x - floor(x) = 1/2", interval=[0, 3])  # jumps at 1 and 2
    assert roots_of(data) == ["0.500000000000000", "1.50000000000000", "2.50000000000000"]


@pytest.mark.anyio
async def test_a_root_where_f_keeps_its_sign_and_a_function_numpy_lacks(client: Client) -> None:
    data, _ = await solve(client, "cos(x) = 1 - x**2/2", interval=[-1, 2])  # (x**4/24 + ...): 0 is not a sample
    assert roots_of(data) == ["0"]
    data, _ = await solve(client, "gamma(x) = 3", interval=[0, 5])
    assert roots_of(data) == ["0.299197622817326", "3.40586998630957"]


@pytest.mark.anyio
async def test_no_real_root_is_said_with_what_was_searched(client: Client) -> None:
    data, text = await solve(client, "x**x = 1/2", domain="real")  # x**x >= exp(-1/e) = 0.69 for x > 0
    assert data["solutions"] == [] and data["numeric_search"]["found"] == 0 and data["complete"] is False
    assert text.startswith("no solution found (sympy: ConditionSet(") and "no root found numerically" in text


@pytest.mark.anyio
async def test_an_equation_sympy_cannot_handle_still_gets_its_real_roots(client: Client) -> None:
    """solveset raised ValueError (absolute values cannot be inverted in the complex domain): EXECUTION_FAILED."""
    data, text = await solve(client, "abs(x) = cos(x)")
    assert roots_of(data) == ["-0.739085133215161", "0.739085133215161"]
    assert data["solution_set"] is None and data["complete"] is False and data["numeric_search"]["found"] == 2
    assert text.startswith("x ≈ -0.739085133215161; x ≈ 0.739085133215161 (sympy cannot solve it; found numerically")


@pytest.mark.anyio
async def test_sympy_roots_are_not_repeated_and_parameters_are_not_searched(client: Client) -> None:
    data, text = await solve(client, "x**2 = 2**x", domain="real")
    assert roots_of(data) == ["2", "4", "-2*LambertW(log(2)/2)/log(2)"] and data["numeric_search"]["found"] == 0
    assert "no other root found numerically" in text
    data, _ = await solve(client, "a*cos(x) = x", variables=["x"])
    assert data["solutions"] == [] and data["numeric_search"] is None
    data, _ = await solve(client, "x^2 - 5*x + 6 = 0", interval=[0, 1])  # solved exactly: no search
    assert roots_of(data) == ["2", "3"] and data["numeric_search"] is None


@pytest.mark.anyio
@pytest.mark.parametrize("interval", [[3, 1], [2, 2], [0, 1e13], [1], [0, 1, 2], ["nan", 1]])
async def test_a_bad_interval_is_refused(client: Client, interval: list[Any]) -> None:
    message = await fail(client, "calculator_solve", "INVALID_INPUT", equations=["cos(x) = x"], interval=interval)
    assert "interval" in message
