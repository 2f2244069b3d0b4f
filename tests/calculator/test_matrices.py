"""Linear algebra in calculator_evaluate (symbolic.evaluate in-process; the worker runs the same code)."""

from __future__ import annotations

import random

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sections.servers.calculator import grammar as gr
from mcp_sections.servers.calculator import limits, symbolic
from mcp_sections.shared.ground.errors import ToolFailure
from tests.calculator.helpers import assert_fails, evaluate, failure, literal

A = "[[1, 2], [3, 4]]"
_random = random.Random(1)
DENSE = [[_random.randint(-99, 99) for _ in range(20)] for _ in range(20)]


def rows_of(matrix: sympy.Matrix) -> list[list[str]]:
    return [[sympy.sstr(entry) for entry in matrix.row(index)] for index in range(matrix.rows)]


# -- values and arithmetic -----------------------------------------------------------------------------


def test_a_literal_is_a_matrix_result() -> None:
    result = evaluate(A)
    assert result.kind == "matrix" and result.shape == [2, 2] and result.matrix == [["1", "2"], ["3", "4"]]
    assert result.exact == "[[1, 2], [3, 4]]" and result.value is None
    assert result.render_text() == "[[1, 2], [3, 4]]"  # the expression is its own exact value
    assert evaluate(f"Matrix({A})").matrix == result.matrix


def test_a_flat_list_is_a_column_vector() -> None:
    result = evaluate("[1, 2, 3]")
    assert result.shape == [3, 1] and result.matrix == [["1"], ["2"], ["3"]] and result.exact == "[1, 2, 3]"
    assert evaluate("Matrix([1, 2, 3])").shape == [3, 1]
    assert evaluate("transpose([1, 2, 3])").matrix == [["1", "2", "3"]]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f"{A} * {A}", [["7", "10"], ["15", "22"]]),
        (f"{A} @ {A}", [["7", "10"], ["15", "22"]]),
        (f"{A} * [5, 6]", [["17"], ["39"]]),
        (f"2 * {A}", [["2", "4"], ["6", "8"]]),
        (f"{A} * 0.5", [["1/2", "1"], ["3/2", "2"]]),
        (f"{A} / 2", [["1/2", "1"], ["3/2", "2"]]),
        (f"{A} + eye(2)", [["2", "2"], ["3", "5"]]),
        (f"{A} - {A}", [["0", "0"], ["0", "0"]]),
        (f"-{A}", [["-1", "-2"], ["-3", "-4"]]),
        (f"{A}**2", [["7", "10"], ["15", "22"]]),
        (f"{A}^2", [["7", "10"], ["15", "22"]]),
        (f"{A}**0", [["1", "0"], ["0", "1"]]),
        (f"{A}**-1", [["-2", "1"], ["3/2", "-1/2"]]),
        (f"{A}**-2", [["11/2", "-5/2"], ["-15/4", "7/4"]]),
        ("[[1, 1], [1, 0]]**10", [["89", "55"], ["55", "34"]]),
        ("[[sqrt(2), 0], [0, 1]]**2", [["2", "0"], ["0", "1"]]),
        ("[[x, 1], [0, x]]**3", [["x**3", "3*x**2"], ["0", "x**3"]]),
        ("eye(2)", [["1", "0"], ["0", "1"]]),
        ("zeros(2, 3)", [["0", "0", "0"], ["0", "0", "0"]]),
        ("ones(2)", [["1", "1"], ["1", "1"]]),
        ("diag(1, 2)", [["1", "0"], ["0", "2"]]),
        (f"transpose({A})", [["1", "3"], ["2", "4"]]),
        (f"inv({A})", [["-2", "1"], ["3/2", "-1/2"]]),
        ("inv([[0.1, 0.2], [0.3, 0.5]])", [["-50", "20"], ["30", "-10"]]),
        ("inv([[a, 0], [0, b]])", [["1/a", "0"], ["0", "1/b"]]),
        ("cross([1, 2, 3], [4, 5, 6])", [["-3"], ["6"], ["-3"]]),
    ],
)
def test_matrix_results(expression: str, expected: list[list[str]]) -> None:
    result = evaluate(expression)
    assert result.kind == "matrix" and result.matrix == expected
    assert result.shape == [len(expected), len(expected[0])]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f"det({A})", "-2"),
        ("det([[2, 0, 0], [0, 3, 0], [0, 0, 4]])", "24"),
        ("det([[1/3, 2], [1/2, 1]])", "-2/3"),  # fractions: exact; with 0.5 the matrix is float64
        ("det([[a, b], [c, d]])", "a*d - b*c"),
        ("det(eye(40))", "1"),
        (f"trace({A})", "5"),
        (f"rank({A})", "2"),
        ("rank([[1, 2], [2, 4]])", "1"),
        ("rank([[1, 2, 3], [4, 5, 6], [7, 8, 9]])", "2"),
        ("rank(zeros(3))", "0"),
        ("rank([[x, 1], [1, 1]])", "2"),
        ("dot([1, 2, 3], [4, 5, 6])", "32"),
        ("dot(transpose([1, 2, 3]), [4, 5, 6])", "32"),
        (f"det({A}) + trace({A})", "3"),
        ("sqrt(det([[2, 0], [0, 2]]))", "2"),
    ],
)
def test_scalar_results(expression: str, expected: str) -> None:
    result = evaluate(expression)
    assert result.kind == "number" and result.exact == expected and result.matrix is None


def test_rref_nullspace_and_their_structure() -> None:
    reduced = evaluate("rref([[1, 2, 3], [4, 5, 6]])")
    assert reduced.kind == "rref" and reduced.matrix == [["1", "0", "-1"], ["0", "1", "2"]]
    assert reduced.pivots == [0, 1] and reduced.shape == [2, 3]
    assert reduced.exact == "([[1, 0, -1], [0, 1, 2]], (0, 1))"
    null = evaluate("nullspace([[1, 2], [2, 4]])")
    assert null.kind == "nullspace" and null.vectors == [["-2", "1"]] and null.exact == "[Matrix([-2, 1])]"
    assert evaluate(f"nullspace({A})").vectors == []


def test_eigenvalues_exact() -> None:
    values = evaluate("eigenvals([[2, 1], [1, 2]])")
    assert values.kind == "eigenvals" and values.exact == "{1: 1, 3: 1}"
    assert [(e.value, e.multiplicity, e.exact) for e in values.eigenvalues or []] == [("1", 1, True), ("3", 1, True)]
    repeated = evaluate("eigenvals([[1, 1], [0, 1]])").eigenvalues or []
    assert [(e.value, e.multiplicity) for e in repeated] == [("1", 2)]
    irrational = evaluate(f"eigenvals({A})").eigenvalues or []
    assert [e.value for e in irrational] == ["5/2 - sqrt(33)/2", "5/2 + sqrt(33)/2"]
    assert [e.numeric for e in irrational] == ["-0.372281323269014", "5.37228132326901"]
    rotation = evaluate("eigenvals([[0, -1], [1, 0]])").eigenvalues or []
    assert [e.value for e in rotation] == ["-I", "I"]
    symbolic_values = evaluate("eigenvals([[a, 1], [1, a]])").eigenvalues or []
    assert [e.value for e in symbolic_values] == ["a - 1", "a + 1"]


def test_a_real_cubic_eigenvalue_has_no_spurious_imaginary_part() -> None:
    values = evaluate("eigenvals([[1, 2, 3], [4, 5, 6], [7, 8, 10]])").eigenvalues or []
    assert [e.numeric for e in values] == ["-0.905740179521758", "0.198246863397010", "16.7074933161247"]


def test_eigenvalues_without_closed_form_come_numerically() -> None:
    companion = "[[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1], [-1, 1, 0, 0, 0]]"
    values = evaluate(f"eigenvals({companion})").eigenvalues or []
    assert len(values) == 5 and not any(e.exact for e in values)
    assert {e.polynomial for e in values} == {"x**5 - x + 1"}
    assert values[0].value == "-1.16730397826142"  # the real root of x**5 - x + 1
    failed = failure(f"eigenvects({companion})")
    assert failed.code.value == "EXECUTION_FAILED" and "degree 5" in failed.message and "eigenvals" in failed.message


def test_eigenvectors() -> None:
    found = evaluate("eigenvects([[2, 1], [1, 2]])")
    assert found.kind == "eigenvects" and found.exact == "[(1, 1, [Matrix([-1, 1])]), (3, 1, [Matrix([1, 1])])]"
    assert [(e.value, e.vectors) for e in found.eigenvalues or []] == [("1", [["-1", "1"]]), ("3", [["1", "1"]])]
    defective = evaluate("eigenvects([[1, 1], [0, 1]])").eigenvalues or []
    assert [(e.value, e.multiplicity, e.vectors) for e in defective] == [("1", 2, [["1", "0"]])]


def test_linsolve_matrix_form() -> None:
    unique = evaluate(f"linsolve({A}, [5, 6])")
    assert unique.kind == "linsolve" and unique.solutions == [{"x1": "-4", "x2": "9/2"}]
    assert unique.render_text() == f"linsolve({A}, [5, 6]) = {{x1: -4, x2: 9/2}} = {{x1: -4, x2: 4.50000000000000}}"
    family = evaluate("linsolve([[1, 2], [2, 4]], [3, 6])")
    assert family.solutions == [{"x1": "3 - 2*x2", "x2": "x2"}]
    none = evaluate("linsolve([[1, 2], [2, 4]], [3, 7])")
    assert none.solutions == [] and none.exact == "EmptySet"
    assert evaluate("linsolve([[1, 0], [0, 1]], transpose([2, 3]))").solutions == [{"x1": "2", "x2": "3"}]
    assert evaluate("linsolve([[a, 0], [0, 1]], [a, 2])").solutions == [{"x1": "1", "x2": "2"}]


def test_linsolve_equation_form() -> None:
    assert evaluate("linsolve([x + y == 3, x - y == 1], [x, y])").solutions == [{"x": "2", "y": "1"}]
    assert evaluate("linsolve([x + y - 3, x - y - 1])").solutions == [{"x": "2", "y": "1"}]
    assert evaluate("linsolve([x + y == 3])").solutions == [{"x": "3 - y", "y": "y"}]
    assert evaluate("linsolve([x + y == 3, x + y == 4], [x, y])").solutions == []
    assert evaluate("linsolve([a*x == 1], [x])").solutions == [{"x": "1/a"}]


def test_numeric_text_and_digits() -> None:
    result = evaluate(f"inv({A})", digits=5)
    assert result.numeric == "[[-2, 1], [1.5000, -0.50000]]"
    assert evaluate("[[sqrt(2)], [pi]]", digits=4).numeric == "[1.414, 3.142]"


@pytest.mark.parametrize(
    ("expression", "code", "needle"),
    [
        ("det([[1, 2, 3], [4, 5, 6]])", "INVALID_INPUT", "square"),
        ("trace([[1, 2, 3]])", "INVALID_INPUT", "square"),
        ("eigenvals([[1, 2]])", "INVALID_INPUT", "square"),
        ("[[1, 2, 3]]**2", "INVALID_INPUT", "square"),
        ("inv([[1, 2], [2, 4]])", "VALIDATION_FAILED", "singular"),
        ("[[1, 2], [2, 4]]**-1", "VALIDATION_FAILED", "singular"),
        ("inv([[x, x], [x, x]])", "VALIDATION_FAILED", "singular"),
        (f"{A} * [[1, 2, 3]]", "INVALID_INPUT", "columns of the first (2) must equal the rows of the second (1)"),
        (f"{A} + [[1, 2, 3]]", "INVALID_INPUT", "same shape"),
        (f"{A} + 1", "INVALID_INPUT", "c*eye(n)"),
        (f"2 @ {A}", "INVALID_INPUT", "@"),
        ("2 @ 3", "INVALID_INPUT", "@"),
        (f"1 / {A}", "INVALID_INPUT", "inv(B)"),
        (f"{A} % 2", "INVALID_INPUT", "%"),
        (f"2**{A}", "INVALID_INPUT", "exponent"),
        (f"{A}**0.5", "INVALID_INPUT", "whole-number"),
        (f"{A}**x", "INVALID_INPUT", "whole-number"),
        (f"sin({A})", "INVALID_INPUT", "not a 2×2 matrix"),
        ("[[1, 2], [3]]", "INVALID_INPUT", "row 2"),
        ("[[1], 2]", "INVALID_INPUT", "mixes rows"),
        ("[]", "INVALID_INPUT", "empty"),
        ("[[]]", "INVALID_INPUT", "empty"),
        ("det(3)", "INVALID_INPUT", "takes matrices"),
        ("Matrix(3)", "INVALID_INPUT", "takes matrices"),
        ("dot([1, 2], [1, 2, 3])", "INVALID_INPUT", "same length"),
        (f"dot({A}, {A})", "INVALID_INPUT", "vectors"),
        ("cross([1, 2], [3, 4])", "INVALID_INPUT", "3 entries"),
        ("linsolve([[1, 2], [3, 4]], [1, 2, 3])", "INVALID_INPUT", "one entry per row"),
        (f"linsolve({A})", "INVALID_INPUT", "linsolve(A, b)"),
        ("linsolve([x*y == 1], [x, y])", "INVALID_INPUT", "calculator_solve"),
        ("linsolve([x < 1], [x])", "INVALID_INPUT", "lhs == rhs"),
        ("linsolve([x == 1], 3)", "INVALID_INPUT", "list of unknowns"),
        ("linsolve([x == 1], [pi])", "INVALID_INPUT", "constant"),
        ("linsolve([1 == 1])", "INVALID_INPUT", "no unknown"),
        ("linsolve([[x1, 0], [0, 1]], [1, 2])", "INVALID_INPUT", "x1"),
        ("det(rref([[1]]))", "INVALID_INPUT", "whole expression"),
        ("eigenvals([[1]]) + 1", "INVALID_INPUT", "whole expression"),
        ("eye(0)", "INVALID_INPUT", "positive whole"),
        ("zeros(2.5)", "INVALID_INPUT", "positive whole"),
        ("[[x]] + y", "INVALID_INPUT", "matrix and a number"),
        ("x + 1", "INVALID_INPUT", "no variables"),
        (f"{A} / 0", "VALIDATION_FAILED", "division by zero"),
        ("[[1/0]]", "VALIDATION_FAILED", "division by zero"),
        ("eye(201)", "MAX_LIMIT_EXCEEDED", "200"),  # eye(41) to eye(200) are float64 (test_floats)
        ("ones(10**9)", "MAX_LIMIT_EXCEEDED", "40"),
        ("eye(10**100)", "MAX_LIMIT_EXCEEDED", "40"),
        ("x*eye(21)", "MAX_LIMIT_EXCEEDED", "20×20"),
        ("eigenvals(eye(21))", "MAX_LIMIT_EXCEEDED", "20×20"),
        (f"{A}**10**9", "MAX_LIMIT_EXCEEDED", "1000"),
        (f"{A}**-(10**9)", "MAX_LIMIT_EXCEEDED", "1000"),
        (f"{A}**(10**1000)", "MAX_LIMIT_EXCEEDED", "1000"),
        ("[[10**20, 1], [1, 1]]**1000", "MAX_LIMIT_EXCEEDED", "digits"),
        (f"inv({literal(DENSE)})", "MAX_LIMIT_EXCEEDED", "det, rank, trace"),  # ~35000 characters
    ],
)
def test_errors_are_coded_and_say_how_to_fix(expression: str, code: str, needle: str) -> None:
    assert_fails(expression, code, needle)


def test_nothing_is_evaluated_while_checking(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("sympify/eval must never be called")

    monkeypatch.setattr(sympy, "sympify", forbidden)
    monkeypatch.setattr(sympy, "parse_expr", forbidden, raising=False)
    assert evaluate(f"det({A} @ inv({A}))").exact == "1"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (literal([[1] * 41] * 41), "41×41"),
        (literal([[1] * 41]), "1×41"),
        (literal([["x"] * 21] * 21), "21×21"),
        (literal([[1] * 20] * 20 + [["sqrt(2)"] * 20]), "21×20"),  # one symbolic entry: the 20×20 limit
        (literal([[10**25] * 21] * 21), "21×21"),  # more than 20 digits: not a plain number
        (literal([["1e30"] * 201] * 201), "201×201"),  # decimal entries: float64, whose limit is 200
    ],
)
def test_oversized_literals_are_refused_from_the_syntax_tree(text: str, needle: str) -> None:
    """The shape check runs in `parse` (no sympy): nothing is built for an oversized matrix."""
    with pytest.raises(ToolFailure) as caught:
        gr.parse(text, symbolic.EVALUATE)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED" and needle in caught.value.message


def test_negative_fractions_are_numbers() -> None:
    """-1/3 parses as (-1)/3: still a number entry, under the 40×40 limit rather than the 20×20 one."""
    negative = literal([["-1/3" if i == j else "0" for j in range(40)] for i in range(40)])
    assert evaluate(f"rank({negative})").exact == "40"


def test_the_largest_accepted_matrices() -> None:
    numbers = literal([[(3 * i + j) % 17 - 8 + (i == j) * 40 for j in range(40)] for i in range(40)])
    assert evaluate(f"rank({numbers})").exact == "40"
    assert evaluate(f"trace({numbers} - {numbers})").exact == "0"
    symbols = literal([["x" if i == j else (i + j) % 3 for j in range(20)] for i in range(20)])
    assert evaluate(f"rank({symbols})").exact == "20"
    assert len(f"{numbers} * {numbers}") < limits.MAX_MATRIX_EXPRESSION_LENGTH


def test_matrix_advice_is_chosen_from_the_text_alone() -> None:
    assert gr.mentions_linear_algebra("det([[1, 2], [3, 4]])") and gr.mentions_linear_algebra("A @ B")
    assert gr.mentions_linear_algebra("eigenvects (x)") and not gr.mentions_linear_algebra("sqrt(2) + detail(1)")


def test_long_text_needs_a_matrix_literal() -> None:
    long_scalar = "1 +" + " " * 2100 + "1"
    with pytest.raises(ToolFailure) as caught:
        gr.parse(long_scalar, symbolic.EVALUATE)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED" and "2000" in caught.value.message
    with pytest.raises(ToolFailure) as caught:
        gr.check_text("[" * 1 + "1, " * 40_000 + "1]", limit=limits.MAX_MATRIX_EXPRESSION_LENGTH)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED" and "100000" in caught.value.message


rational = st.builds(sympy.Rational, st.integers(-6, 6), st.sampled_from([1, 1, 2, 3, 10]))


@st.composite
def matrices(draw: st.DrawFn) -> sympy.Matrix:
    rows, columns = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    entries = [[draw(rational) for _ in range(columns)] for _ in range(rows)]
    if rows > 1 and draw(st.booleans()):
        entries[-1] = [2 * value for value in entries[0]]  # a dependent row
    return sympy.Matrix(entries)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matrix=matrices(), b=st.lists(rational, min_size=4, max_size=4))
def test_the_integer_route_agrees_with_sympys_matrix_methods(matrix: sympy.Matrix, b: list[sympy.Rational]) -> None:
    """Rational matrices skip sympy's generic Matrix methods (too slow); the answers must be the same."""
    text = literal([[sympy.sstr(value) for value in matrix.row(i)] for i in range(matrix.rows)])
    reduced, pivots = matrix.rref()
    assert evaluate(f"rref({text})").matrix == rows_of(reduced) and evaluate(f"rref({text})").pivots == list(pivots)
    assert evaluate(f"nullspace({text})").vectors == [[sympy.sstr(v) for v in vector] for vector in matrix.nullspace()]
    assert evaluate(f"rank({text})").exact == sympy.sstr(matrix.rank())
    assert evaluate(f"{text} * transpose({text})").matrix == rows_of(matrix * matrix.T)
    column = sympy.Matrix(b[: matrix.rows])
    unknowns = sympy.symbols(f"x1:{matrix.cols + 1}")
    expected = sympy.linsolve((matrix, column), unknowns)
    found = evaluate(f"linsolve({text}, {literal([[sympy.sstr(v)] for v in column])})").solutions
    if expected == sympy.EmptySet:
        assert found == []
    else:
        assert found == [{u.name: sympy.sstr(v) for u, v in zip(unknowns, next(iter(expected)), strict=True)}]
    if matrix.rows == matrix.cols:
        assert evaluate(f"det({text})").exact == sympy.sstr(matrix.det())
        assert evaluate(f"{text}**3").matrix == rows_of(matrix**3)
        if matrix.det() != 0:
            assert evaluate(f"inv({text})").matrix == rows_of(matrix.inv())
            assert evaluate(f"{text}**-2").matrix == rows_of(matrix**-2)
