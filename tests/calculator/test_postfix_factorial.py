"""Postfix `n!` and `n!!` in the calculator's maths language, through the official client in memory: an outside tester's
`100!` was a syntax error (`factorial(100)` worked). The operand is what stands just before the bangs, and they bind
tighter than every other operator, as mathematicians read them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.calculator import grammar
from tests.stdio import call, fail


async def evaluate(client: Client, expression: str) -> str:
    data: dict[str, Any] = await call(client, "calculator_evaluate", expression=expression)
    return str(data["exact"])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("expression", "exact"),
    [
        ("100!", str(math.factorial(100))),
        ("0!", "1"),
        ("2^3!", "64"),  # 2^(3!), not (2^3)!
        ("2**3!", "64"),
        ("-3!", "-6"),  # -(3!)
        ("3!^2", "36"),  # (3!)^2
        ("(2+1)!", "6"),
        ("sqrt(16)!", "24"),  # a call is one operand
        ("10!/8!", "90"),
        ("2*3! + 1", "13"),
        ("5 !", "120"),
        ("5!!", "15"),  # the double factorial 5*3*1, not (5!)!
        ("8!!", "384"),
        ("(3!)!", "720"),
        ("(-3)!!", "-1"),
        ("factorial(100) - 100!", "0"),
        ("[[2!, 0], [0, 3!]]", "[[2, 0], [0, 6]]"),
    ],
)
async def test_evaluate_reads_postfix_factorials(client: Client, expression: str, exact: str) -> None:
    assert await evaluate(client, expression) == exact


@pytest.mark.anyio
async def test_the_symbolic_tools_read_them_too(client: Client) -> None:
    simplified = await call(client, "calculator_simplify", expression="(n+1)!/n!")
    assert simplified["result"] == "n + 1"
    solved = await call(client, "calculator_solve", equations=["x*3! = 12"])
    assert solved["solutions"] == [{"x": "2"}]
    integral = await call(client, "calculator_integrate", expression="x^2!", lower="0", upper="1")
    assert integral["result"] == "1/3"  # x^(2!)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("expression", "code", "needle"),
    [
        ("!3", "INVALID_INPUT", "needs what it applies to"),
        ("2*!3", "INVALID_INPUT", "needs what it applies to"),
        ("3!!!", "INVALID_INPUT", "factorial(factorial(3))"),
        ("5!=120", "INVALID_INPUT", "leave a space: n! = 120"),  # != stays 'not equal'
        ("(-3)!", "VALIDATION_FAILED", "complex infinity"),
        ("(-2)!!", "VALIDATION_FAILED", "negative odd"),
        ("1001!", "MAX_LIMIT_EXCEEDED", "limited to 1000"),
    ],
)
async def test_what_is_refused(client: Client, expression: str, code: str, needle: str) -> None:
    message = await fail(client, "calculator_evaluate", code, expression=expression)
    assert needle in message, message


@pytest.mark.anyio
async def test_an_equation_with_a_factorial_before_its_sign(client: Client) -> None:
    message = await fail(client, "calculator_solve", "INVALID_INPUT", equations=["n!=120"])
    assert "leave a space: n! = 120" in message


@pytest.mark.parametrize(
    ("source", "rewritten"),
    [
        ("n!", "factorial(n)"),
        ("(n+1)!", "factorial((n+1))"),
        ("log(8, 2)!", "factorial(log(8, 2))"),
        ("1e-3! + 0x1F!", "factorial(1e-3) + factorial(0x1F)"),
        ("e-3!", "e-factorial(3)"),  # the constant e minus 3!, not the number literal e-3
        ("n!!=3", "factorial(n)!=3"),
        ("'a!'", "'a!'"),  # quoted text is left to the grammar, which refuses it
    ],
)
def test_the_rewrite(source: str, rewritten: str) -> None:
    """The text Python's parser then reads (never evaluated: the grammar's allow-list checks the tree)."""
    assert grammar.postfix_factorials(source) == rewritten
