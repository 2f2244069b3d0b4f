"""calculator_integrate takes JSON numbers for its bounds, read exactly as written, through the official client in
memory: an outside tester's `{"lower": 0, "upper": "oo"}` was refused with "lower: must be of type string"."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.stdio import data_of, fail


async def integrate(client: Client, expression: str, lower: Any, upper: Any) -> dict[str, Any]:
    return data_of(
        await client.call_tool("calculator_integrate", {"expression": expression, "lower": lower, "upper": upper})
    )


@pytest.mark.anyio
async def test_the_testers_call_an_integer_bound_and_infinity(client: Client) -> None:
    data = await integrate(client, "exp(-x)", 0, "oo")
    assert (data["lower"], data["upper"], data["result"]) == ("0", "oo", "1")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("lower", "upper", "bounds", "result"),
    [
        (0, 1, ("0", "1"), "1/3"),
        (0, 0.5, ("0", "0.5"), "1/24"),  # 0.5 is exactly 1/2
        (0.1, 0.2, ("0.1", "0.2"), "7/3000"),  # read as written: 1/10 and 1/5, not the nearest doubles
        (-2, 1e-07, ("-2", "1e-07"), "2666666666666666666667/1000000000000000000000"),
        (-1.5, "3/2", ("-1.5", "3/2"), "9/4"),  # a number and an expression together
        (
            10**20,
            10**20 + 1,
            ("100000000000000000000", "100000000000000000001"),
            "30000000000000000000300000000000000000001/3",
        ),
    ],
)
async def test_number_bounds_are_exact(
    client: Client, lower: Any, upper: Any, bounds: tuple[str, str], result: str
) -> None:
    data = await integrate(client, "x**2", lower, upper)
    assert (data["lower"], data["upper"]) == bounds and data["result"] == result and data["closed_form"]


@pytest.mark.anyio
async def test_what_a_number_bound_cannot_be(client: Client) -> None:
    message = await fail(client, "calculator_integrate", "INVALID_INPUT", expression="x", lower=True, upper=1)
    assert "lower" in message
    message = await fail(client, "calculator_integrate", "INVALID_INPUT", expression="x", lower=0, upper=10**300)
    assert "upper" in message and "10**300" in message


@pytest.mark.anyio
async def test_the_schema_says_numbers_are_accepted(client: Client) -> None:
    tool = next(tool for tool in (await client.list_tools()).tools if tool.name == "calculator_integrate")
    for bound in ("lower", "upper"):
        kinds = {option.get("type") for option in tool.input_schema["properties"][bound]["anyOf"]}
        assert kinds == {"string", "integer", "number", "null"}, tool.input_schema["properties"][bound]
