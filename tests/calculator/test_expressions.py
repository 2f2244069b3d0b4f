"""expressions.py: the allow-list parser. Hostile inputs are refused with an exact error code, never evaluated."""

from __future__ import annotations

import ast

import pytest
import sympy

from mcp_sections.servers.calculator import expressions as ex
from mcp_sections.servers.calculator import grammar as gr
from mcp_sections.servers.calculator import limits
from mcp_sections.shared.ground.errors import ToolFailure

NUMBERS = gr.Grammar(tool="calculator_evaluate", variables=False)
ALGEBRA = gr.Grammar(tool="calculator_simplify", variables=True)

HOSTILE: list[tuple[str, str]] = [
    ("__import__('os')", "INVALID_INPUT"),
    ("__import__('os').system('echo pwned')", "INVALID_INPUT"),
    ("().__class__.__bases__[0].__subclasses__()", "INVALID_INPUT"),
    ("x.__class__", "INVALID_INPUT"),
    ("sympy.sin(1)", "INVALID_INPUT"),
    ("math.sqrt(2)", "INVALID_INPUT"),
    ("lambda: 1", "INVALID_INPUT"),
    ("(lambda x: x)(2)", "INVALID_INPUT"),
    ("[i for i in range(10)]", "INVALID_INPUT"),
    ("sum(i for i in range(10**9))", "INVALID_INPUT"),
    ("{1: 2}", "INVALID_INPUT"),
    ("[1, 2][0]", "INVALID_INPUT"),
    ("x[0]", "INVALID_INPUT"),
    ("log(8, base=2)", "INVALID_INPUT"),
    ("sin(*[1])", "INVALID_INPUT"),
    ("eval('1+1')", "INVALID_INPUT"),
    ("exec('print(1)')", "INVALID_INPUT"),
    ("open('/etc/passwd')", "INVALID_INPUT"),
    ("getattr(x, 'y')", "INVALID_INPUT"),
    ("_x + 1", "INVALID_INPUT"),
    ("__builtins__", "INVALID_INPUT"),
    ("'abc'", "INVALID_INPUT"),
    ("f'{1+1}'", "INVALID_INPUT"),
    ("b'x'", "INVALID_INPUT"),
    ("(y := 3)", "INVALID_INPUT"),
    ("1 if x else 2", "INVALID_INPUT"),
    ("x and y", "INVALID_INPUT"),
    ("not x", "INVALID_INPUT"),
    ("~x", "INVALID_INPUT"),
    ("x // 2", "INVALID_INPUT"),
    ("x << 2", "INVALID_INPUT"),
    ("x @ y", "INVALID_INPUT"),
    ("x < 2", "INVALID_INPUT"),
    ("True + 1", "INVALID_INPUT"),
    ("None", "INVALID_INPUT"),
    ("...", "INVALID_INPUT"),
    ("2j", "INVALID_INPUT"),
    ("await x", "INVALID_INPUT"),
    ("import os", "INVALID_INPUT"),
    ("x = 1", "INVALID_INPUT"),
    ("1; 2", "INVALID_INPUT"),
    ("sin(1)(2)", "INVALID_INPUT"),
    ("sin", "INVALID_INPUT"),
    ("sin(1, 2)", "INVALID_INPUT"),
    ("nan", "INVALID_INPUT"),
    ("2x", "INVALID_INPUT"),
    ("\uff53\uff49\uff4e(1)", "INVALID_INPUT"),  # fullwidth "sin": NFKC would turn it into sin
    ("__\uff49mport__('os')", "INVALID_INPUT"),  # fullwidth i: NFKC would turn it into __import__
    ("1 +\u200b 1", "INVALID_INPUT"),  # zero-width space
    ("1\u202e+1", "INVALID_INPUT"),  # right-to-left override
    ("1\x00+1", "INVALID_INPUT"),
    ("", "INVALID_INPUT"),
    ("   ", "INVALID_INPUT"),
    ("9**9**9", "MAX_LIMIT_EXCEEDED"),
    ("10**10**10", "MAX_LIMIT_EXCEEDED"),
    ("2^2^2^2^2", "MAX_LIMIT_EXCEEDED"),
    ("10**(10**5/10)", "MAX_LIMIT_EXCEEDED"),
    ("2**100000", "MAX_LIMIT_EXCEEDED"),
    ("(10**3000)**2", "MAX_LIMIT_EXCEEDED"),
    ("(10**1000)**4.5", "MAX_LIMIT_EXCEEDED"),
    ("factorial(10**7)", "MAX_LIMIT_EXCEEDED"),
    ("factorial(factorial(10))", "MAX_LIMIT_EXCEEDED"),
    ("gamma(10**6)", "MAX_LIMIT_EXCEEDED"),
    ("binomial(10**9, 10**8)", "MAX_LIMIT_EXCEEDED"),
    ("1e400", "MAX_LIMIT_EXCEEDED"),
    ("1e-400", "MAX_LIMIT_EXCEEDED"),
    ("1" * 1200, "MAX_LIMIT_EXCEEDED"),
    ("(" * 60 + "1" + ")" * 60, "MAX_LIMIT_EXCEEDED"),
    ("-" * 1500 + "1", "MAX_LIMIT_EXCEEDED"),
    ("+".join(["1"] * 600), "MAX_LIMIT_EXCEEDED"),
    ("1+" * 50_000 + "1", "MAX_LIMIT_EXCEEDED"),
    ("x" * 100_000, "MAX_LIMIT_EXCEEDED"),
    ("1/0", "VALIDATION_FAILED"),
    ("5 % 0", "VALIDATION_FAILED"),
    ("0**-1", "VALIDATION_FAILED"),
    ("log(0)", "VALIDATION_FAILED"),
    ("log(8, 1)", "VALIDATION_FAILED"),
    ("root(8, 0)", "VALIDATION_FAILED"),
]


@pytest.mark.parametrize(("text", "code"), HOSTILE, ids=[repr(text[:40]) for text, _ in HOSTILE])
def test_hostile_and_invalid_inputs_are_refused_with_their_code(text: str, code: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        ex.build(text, ALGEBRA)
    assert caught.value.code.value == code, caught.value.message
    assert len(caught.value.message) < 1500


def test_at_least_25_hostile_inputs() -> None:
    assert len(HOSTILE) >= 25


SQUARE = "[[1, 2], [3, 4]]"
MATRIX_HOSTILE: list[tuple[str, str]] = [
    # code smuggled through matrices and linear-algebra calls
    ("[[__import__('os')]]", "INVALID_INPUT"),
    ("[[().__class__.__bases__[0]]]", "INVALID_INPUT"),
    ("Matrix([[1]]).inv()", "INVALID_INPUT"),
    ("Matrix.eye(3)", "INVALID_INPUT"),
    ("Matrix(2, 2, lambda i, j: i + j)", "INVALID_INPUT"),
    ("Matrix(lambda: 1)", "INVALID_INPUT"),
    ("Matrix([[1]], evaluate=False)", "INVALID_INPUT"),
    ("Matrix(*[[1]])", "INVALID_INPUT"),
    ("det(" + SQUARE + ".T)", "INVALID_INPUT"),
    (SQUARE + "[0]", "INVALID_INPUT"),
    (SQUARE + "[0][0]", "INVALID_INPUT"),
    ("[[i for i in range(3)]]", "INVALID_INPUT"),
    ("[[1] * 3]", "INVALID_INPUT"),
    ("[[1, 2], [3, 4]] if 1 else 2", "INVALID_INPUT"),
    ("[[x := 1]]", "INVALID_INPUT"),
    ("[*[1, 2]]", "INVALID_INPUT"),
    ("[[1, 2], (3, 4)]", "INVALID_INPUT"),
    ("{1, 2}", "INVALID_INPUT"),
    ("[{1: 2}]", "INVALID_INPUT"),
    ("linsolve([__import__('os') == 1], [x])", "INVALID_INPUT"),
    ("linsolve([x == 1], [x.real])", "INVALID_INPUT"),
    ("linsolve([x == 1], [_x])", "INVALID_INPUT"),
    ("linsolve([x == 1 == 1], [x])", "INVALID_INPUT"),
    ("eye(3) == eye(3)", "INVALID_INPUT"),
    ("getattr(" + SQUARE + ", 'inv')", "INVALID_INPUT"),
    ("exp(" + SQUARE + ")", "INVALID_INPUT"),
    ("zeros(2, 2, 2)", "INVALID_INPUT"),
    # strings mixed in
    ("[['a', 'b']]", "INVALID_INPUT"),
    ("[[1, '2']]", "INVALID_INPUT"),
    ("Matrix('[[1]]')", "INVALID_INPUT"),
    ("det([[b'1']])", "INVALID_INPUT"),
    ("linsolve(['x = 1'], [x])", "INVALID_INPUT"),
    # malformed shapes
    ("[[1, 2], [3]]", "INVALID_INPUT"),
    ("[[[1]]]", "INVALID_INPUT"),
    ("[[1, [2]]]", "INVALID_INPUT"),
    ("[1, [2]]", "INVALID_INPUT"),
    ("[[" + SQUARE + "]]", "INVALID_INPUT"),
    ("[]", "INVALID_INPUT"),
    ("[[]]", "INVALID_INPUT"),
    ("[[eye(2)]]", "INVALID_INPUT"),
    ("diag(eye(2))", "INVALID_INPUT"),
    ("det(rref(" + SQUARE + "))", "INVALID_INPUT"),
    # size, shape and power bombs (refused before any work)
    ("[" * 45 + "1" + "]" * 45, "MAX_LIMIT_EXCEEDED"),
    ("[[" + ", ".join(["1"] * 41) + "]]", "MAX_LIMIT_EXCEEDED"),
    ("[[" + "], [".join(["x"] * 21) + "]]", "MAX_LIMIT_EXCEEDED"),
    ("[[" + "], [".join(["1"] * 20) + "], [10**30]]", "MAX_LIMIT_EXCEEDED"),
    ("ones(10**9)", "MAX_LIMIT_EXCEEDED"),
    ("zeros(1, 10**9)", "MAX_LIMIT_EXCEEDED"),
    ("eye(9**9**9)", "MAX_LIMIT_EXCEEDED"),
    ("eye(factorial(100))", "MAX_LIMIT_EXCEEDED"),
    ("x*ones(21)", "MAX_LIMIT_EXCEEDED"),
    ("diag(" + ", ".join(["x"] * 21) + ")", "MAX_LIMIT_EXCEEDED"),
    (SQUARE + "**10**9", "MAX_LIMIT_EXCEEDED"),
    (SQUARE + "**-(10**9)", "MAX_LIMIT_EXCEEDED"),
    (SQUARE + "^9^9^9", "MAX_LIMIT_EXCEEDED"),
    ("[[10**19, 1], [1, 1]]**1000", "MAX_LIMIT_EXCEEDED"),
    ("eigenvects(ones(21))", "MAX_LIMIT_EXCEEDED"),
    ("eigenvals(x*eye(21))", "MAX_LIMIT_EXCEEDED"),
    ("[[9**9**9]]", "MAX_LIMIT_EXCEEDED"),
    ("[[factorial(10**7)]]", "MAX_LIMIT_EXCEEDED"),
    (" + ".join(["[" + ", ".join(["[" + ", ".join(["-1/3"] * 40) + "]"] * 40) + "]"] * 3), "MAX_LIMIT_EXCEEDED"),
    ("1 +" + " " * 2100 + "1", "MAX_LIMIT_EXCEEDED"),
    ("[" + "1, " * 40_000 + "1]", "MAX_LIMIT_EXCEEDED"),
    # maths that does not fit
    ("det([[1, 2, 3]])", "INVALID_INPUT"),
    ("inv([[1, 2], [2, 4]])", "VALIDATION_FAILED"),
    (SQUARE + " * [[1, 2, 3]]", "INVALID_INPUT"),
    (SQUARE + " + 1", "INVALID_INPUT"),
    (SQUARE + "**0.5", "INVALID_INPUT"),
    ("2**" + SQUARE, "INVALID_INPUT"),
    (SQUARE + " / 0", "VALIDATION_FAILED"),
]


@pytest.mark.parametrize(("text", "code"), MATRIX_HOSTILE, ids=[repr(text[:40]) for text, _ in MATRIX_HOSTILE])
def test_hostile_matrix_expressions_are_refused_with_their_code(text: str, code: str) -> None:
    """calculator_evaluate's grammar (matrices allowed); nothing here may run longer than the parse and the bounds."""
    from mcp_sections.servers.calculator import symbolic

    with pytest.raises(ToolFailure) as caught:
        ex.build(text, symbolic.EVALUATE)
    assert caught.value.code.value == code, caught.value.message
    assert len(caught.value.message) < 1500


def test_matrices_stay_out_of_the_other_grammars() -> None:
    for text, needle in (("[[1, 2]]", "lists"), ("det(x)", "matrix function"), ("x @ y", "@")):
        with pytest.raises(ToolFailure) as caught:
            ex.build(text, ALGEBRA)
        assert caught.value.code.value == "INVALID_INPUT" and needle in caught.value.message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("math.sqrt(2)", "attribute access"),
        ("x[0]", "subscripts"),
        ("lambda: 1", "lambda"),
        ("[i for i in y]", "comprehensions"),
        ("log(8, base=2)", "keyword arguments"),
        ("'os'", "text strings"),
        ("x // 2", "floor(a/b)"),
        ("2x", "2*x"),
        ("__import__('os')", "'_'"),
        ("foo(1)", "unknown function"),
        ("sin", "is a function"),
        ("x < 1", "calculator_solve"),
        ("2j", "2*I"),
    ],
)
def test_refusals_name_the_construct_and_the_rewrite(text: str, needle: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        ex.build(text, ALGEBRA)
    assert needle in caught.value.message


def test_nothing_is_evaluated_while_checking(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("sympify/eval must never be called")

    monkeypatch.setattr(sympy, "sympify", forbidden)
    monkeypatch.setattr(sympy, "parse_expr", forbidden, raising=False)
    assert ex.build("2^3 + sqrt(4)", NUMBERS) == 10


def test_variables_are_refused_where_the_tool_takes_numbers() -> None:
    with pytest.raises(ToolFailure) as caught:
        ex.build("x + 1", NUMBERS)
    assert caught.value.code.value == "INVALID_INPUT"
    assert "calculator_solve" in caught.value.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2^3+1", sympy.Integer(9)),
        ("2**3**2", sympy.Integer(512)),
        ("2^3^2", sympy.Integer(512)),
        ("-2**2", sympy.Integer(-4)),
        ("0.1 + 0.2", sympy.Rational(3, 10)),
        ("1_000 * 2.5e-3", sympy.Rational(5, 2)),
        ("0x10 + 1", sympy.Integer(17)),
        ("7 % 3", sympy.Integer(1)),
        ("sqrt(8)", 2 * sympy.sqrt(2)),
        ("cbrt(-27)", sympy.Integer(-3)),
        ("root(16, 4)", sympy.Integer(2)),
        ("log(8, 2)", sympy.Integer(3)),
        ("log10(1000)", sympy.Integer(3)),
        ("log2(1024)", sympy.Integer(10)),
        ("ln(e)", sympy.Integer(1)),
        ("sin(pi/6)", sympy.Rational(1, 2)),
        ("atan2(1, 1)", sympy.pi / 4),
        ("abs(-3) + sign(-2)", sympy.Integer(2)),
        ("floor(2.5) + ceil(2.5) + ceiling(0.1)", sympy.Integer(6)),
        ("factorial(5) + binomial(5, 2) + gamma(5)", sympy.Integer(154)),
        ("gcd(12, 18) + lcm(4, 6)", sympy.Integer(18)),
        ("min(3, 1, 2) + max(3, 1, 2)", sympy.Integer(4)),
        ("I**2", sympy.Integer(-1)),
        ("re(3 + 4*I) + im(3 + 4*I)", sympy.Integer(7)),
        ("oo", sympy.oo),
        ("-inf", -sympy.oo),
        ("2 × 3 − 1 ÷ 2", sympy.Rational(11, 2)),
        ("π", sympy.pi),
        ("3²", sympy.Integer(9)),
        ("10**300 * 10**-300", sympy.Integer(1)),
        ("2**10000 / 2**9999", sympy.Integer(2)),
    ],
)
def test_accepted_maths(text: str, expected: object) -> None:
    value = ex.build(text, NUMBERS)
    assert value == expected or sympy.simplify(value - expected) == 0


def test_variables_become_symbols_shared_between_calls() -> None:
    symbols: dict[str, object] = {}
    first = ex.build("x**2 + theta", ALGEBRA, symbols)
    second = ex.build("x - v0", ALGEBRA, symbols)
    assert set(symbols) == {"x", "theta", "v0"}
    assert first.free_symbols | second.free_symbols == set(symbols.values())


def test_too_many_variables() -> None:
    text = " + ".join(f"v{index}" for index in range(limits.MAX_VARIABLES + 1))
    with pytest.raises(ToolFailure) as caught:
        ex.build(text, ALGEBRA)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED"


def test_real_variables() -> None:
    value = ex.build("x", gr.Grammar(tool="t", variables=True, real_variables=True))
    assert value.is_real


@pytest.mark.parametrize(
    ("text", "lhs_minus_rhs"),
    [
        ("x^2 = 4", "x**2 - 4"),
        ("x**2 == 4", "x**2 - 4"),
        ("x + 1", "x + 1"),
        ("2*x = x + 3", "x - 3"),
    ],
)
def test_equations(text: str, lhs_minus_rhs: str) -> None:
    symbols: dict[str, object] = {}
    left, right = ex.parse_equation(text, ALGEBRA, symbols)
    assert sympy.expand(left - right - ex.build(lhs_minus_rhs, ALGEBRA, symbols)) == 0


@pytest.mark.parametrize("text", ["x < 2", "x = 1 = 2", "x == 1 == 2", "= 3", "x =", "x <= 2", "x != 2"])
def test_bad_equations(text: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        ex.parse_equation(text, ALGEBRA, {})
    assert caught.value.code.value == "INVALID_INPUT"


def test_check_text_rewrites_caret_and_needs_no_sympy() -> None:
    assert gr.check_text("x^2") == "x**2"
    tree = gr.parse("sin(x)^2", ALGEBRA)
    assert isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Pow)
