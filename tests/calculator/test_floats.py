"""Float64 linear algebra in calculator_evaluate (numpy): the rule, 200×200 answers against known ones, the limits,
singular matrices and hostile inputs (symbolic.evaluate in-process; test_stdio runs it in the real worker)."""

from __future__ import annotations

import pytest

from mcp_sections.servers.calculator import grammar as gr
from mcp_sections.servers.calculator import limits, symbolic
from mcp_sections.shared.ground.errors import ToolFailure
from tests.calculator.helpers import assert_fails, evaluate, literal

N = 200


# Sherman–Morrison: A = I + u·uᵀ with u = 0.1·ones(200), so A = I + 0.01·J (J all ones): det A = 1 + uᵀu = 3,
# inv A = I - J/300, eigenvalues 1 (199 times) and 3, and A·x = b for x_i = i has b_i = i + 0.01·Σx = i + 201.
KNOWN = literal([["1.01" if i == j else "0.01" for j in range(N)] for i in range(N)])
B = "[" + ", ".join(f"{i + 201}.0" for i in range(1, N + 1)) + "]"


def test_the_rule_a_decimal_entry_makes_a_float64_matrix() -> None:
    assert evaluate("det([[0.5, 1], [2, 3]])").float64 and evaluate("det([[0.5, 1], [2, 3]])").exact == "-0.5"
    assert evaluate("det([[1e-3, 0], [0, 1000]])").exact == "1"
    exact = evaluate("det([[1/2, 1], [2, 3]])")
    assert not exact.float64 and exact.exact == "-1/2"
    assert not evaluate("inv([[1, 2], [3, 4]])").float64
    assert not evaluate("[[sqrt(2), 0.5]]").float64  # an entry that is not a number literal: the exact path
    assert not evaluate("0.5 * [[1, 2], [3, 4]]").float64  # a decimal scalar does not count, only entries
    mixed = evaluate("[[1, 2], [3, 4]] * [[0.5, 0], [0, 0.5]]")  # an exact matrix meeting a float64 one
    assert mixed.float64 and mixed.matrix == [["0.5", "1"], ["1.5", "2"]]
    scaled = evaluate("det([[0.5]]) * [[1, 2]]")  # a float64 scalar meeting an exact matrix
    assert scaled.float64 and scaled.matrix == [["0.5", "1"]]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("inv([[0.1, 0.2], [0.3, 0.5]])", [["-50", "20"], ["30", "-10"]]),
        ("transpose([[1.5, 2], [3, 4]])", [["1.5", "3"], ["2", "4"]]),
        ("[[1.5, 2], [3, 4]] @ [[1, 0], [0, 1]]", [["1.5", "2"], ["3", "4"]]),
        ("[[0.5, 1], [2, 3]]**-2", [["44", "-14"], ["-28", "9"]]),
        ("[[1.0, 1], [1, 0]]**10", [["89", "55"], ["55", "34"]]),
        ("-[[0.5]] + [[1.5]] / 3", [["0"]]),
        ("cross([1.0, 2, 3], [4, 5, 6])", [["-3"], ["6"], ["-3"]]),
        ("[[1/3, 0.5]]", [["0.333333333333333", "0.5"]]),
    ],
)
def test_float64_matrix_results(expression: str, expected: list[list[str]]) -> None:
    result = evaluate(expression)
    assert result.kind == "matrix" and result.float64 and result.matrix == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("rank([[1.0, 2], [2, 4]])", "1"),
        ("trace([[1.5, 2], [3, 4]])", "5.5"),
        ("dot([1.0, 2, 3], [4, 5, 6])", "32"),
        ("det([[2.0, 0], [0, 3]]) + 1/2", "6.5"),
        ("sqrt(det([[-4.0]]))", "2*I"),
    ],
)
def test_float64_scalars(expression: str, expected: str) -> None:
    result = evaluate(expression)
    assert result.exact == expected and result.numeric == expected and result.kind == "number"


def test_float64_eigenvalues() -> None:
    rotation = evaluate("eigenvals([[0.0, -1], [1, 0]])")
    assert rotation.float64 and [e.value for e in rotation.eigenvalues or []] == ["-1*I", "1*I"]
    assert rotation.exact == "{-1*I: 1, 1*I: 1}"
    triangular = evaluate("eigenvals([[2.0, 1], [0, 3]])").eigenvalues or []
    assert [(e.value, e.multiplicity, e.exact) for e in triangular] == [("2", 1, False), ("3", 1, False)]


def test_digits_are_bounded_by_float64() -> None:
    assert evaluate("[[1/3, 0.5]]", digits=5).matrix == [["0.33333", "0.5"]]
    assert evaluate("det([[1/3, 0.0], [0, 1]])", digits=50).exact == "0.333333333333333"  # at most 15 digits


def test_200_by_200_det_inv_solve_and_eigenvalues_against_known_answers() -> None:
    assert evaluate(f"det({KNOWN})").value == pytest.approx(3, rel=1e-12)
    inverse = evaluate(f"inv({KNOWN})")
    assert inverse.float64 and inverse.shape == [N, N] and inverse.rows_shown is not None
    assert 1 <= inverse.rows_shown < N and len(inverse.matrix or []) == inverse.rows_shown
    assert len(inverse.exact) <= limits.MAX_OUTPUT_CHARS + 400 and "more rows" in inverse.exact
    for i, row in enumerate(inverse.matrix or []):
        for j, entry in enumerate(row):
            assert float(entry) == pytest.approx((i == j) - 1 / 300, abs=1e-13)
    assert evaluate(f"det({KNOWN} @ inv({KNOWN}))").value == pytest.approx(1, rel=1e-12)  # A·A⁻¹ = I
    solved = evaluate(f"linsolve({KNOWN}, {B})")
    assert solved.kind == "linsolve" and solved.float64
    values = solved.solutions[0] if solved.solutions else {}
    assert [float(values[f"x{i}"]) for i in range(1, N + 1)] == pytest.approx(list(range(1, N + 1)), rel=1e-12)
    eigen = evaluate(f"eigenvals({KNOWN})").eigenvalues or []
    assert len(eigen) == N and not any(e.exact for e in eigen)
    assert [float(e.value) for e in eigen] == pytest.approx([1.0] * (N - 1) + [3.0], abs=1e-12)
    assert evaluate(f"rank({KNOWN})").exact == str(N) and evaluate(f"trace({KNOWN})").exact == "202"


def test_eye_zeros_and_ones_above_40_are_float64() -> None:
    built = "eye(200) + ones(200)/100"  # the same matrix as KNOWN, without a 240 KB literal
    assert evaluate(f"det({built})").value == pytest.approx(3, rel=1e-12)
    assert evaluate(f"linsolve({built}, {B})").solutions == evaluate(f"linsolve({KNOWN}, {B})").solutions
    assert evaluate("rank(zeros(50, 60))").exact == "0" and evaluate("zeros(41, 2)").float64
    assert not evaluate("eye(40)").float64  # the exact limit: still exact


@pytest.mark.parametrize("name", ["eye", "zeros", "ones"])
def test_a_float64_matrix_is_no_size_for_eye_zeros_or_ones(name: str) -> None:
    """`eye([[0.5, 1], [2, 3]])` answered with that matrix's eigenvalues (the float64 path took the call before the
    size check), where `eye([[1, 1], [2, 3]])` is refused: both are refused now, the same way."""
    messages = []
    for matrix in ("[[0.5, 1], [2, 3]]", "[[1, 1], [2, 3]]"):
        with pytest.raises(ToolFailure) as refused:
            evaluate(f"{name}({matrix})")
        assert refused.value.code.value == "INVALID_INPUT"
        messages.append(refused.value.message)
    assert messages[0] == messages[1]


def test_a_large_expression_is_not_echoed_in_full() -> None:
    result = evaluate(f"det({KNOWN})")
    assert len(result.expression) < 1100 and "characters)" in result.expression
    assert result.render_text().endswith(f"= {result.exact}") and result.exact.startswith("3.0000000000")


@pytest.mark.parametrize(
    ("expression", "code", "needle"),
    [
        # limits
        (literal([["0.5"] * (N + 1)] * (N + 1)), "MAX_LIMIT_EXCEEDED", "200×200"),
        (literal([["0.5"] * (N + 1)]), "MAX_LIMIT_EXCEEDED", "200×200"),
        (literal([["1"] * 41] * 41), "MAX_LIMIT_EXCEEDED", "(3 → 3.0)"),  # integers: still the exact path
        ("[[1.5, 2], [3, 4]]**1001", "MAX_LIMIT_EXCEEDED", "1000"),
        ("[[1.5, 2], [3, 4]]**(10**100)", "MAX_LIMIT_EXCEEDED", "1000"),
        ("[[1.5, 2], [3, 4]]**0.5", "INVALID_INPUT", "whole-number"),
        # singular matrices
        ("inv([[1.0, 2], [2, 4]])", "VALIDATION_FAILED", "singular"),
        ("[[1.0, 2], [2, 4]]**-1", "VALIDATION_FAILED", "singular"),
        ("linsolve([[1.0, 2], [2, 4]], [1, 2])", "VALIDATION_FAILED", "rank 1 of 2"),
        ("inv([[1.0, 1], [1, 1.0000000000000002]])", "VALIDATION_FAILED", "condition number"),
        ("inv(zeros(2) * [[0.5, 0], [0, 0.5]])", "VALIDATION_FAILED", "singular"),
        # hostile values
        ("[[nan, 1.0]]", "INVALID_INPUT", "nan"),
        ("[[1e309, 1.0]]", "MAX_LIMIT_EXCEEDED", "accepted range"),
        ("[[1e-400, 1.0]]", "MAX_LIMIT_EXCEEDED", "accepted range"),
        (f"[[{10**400}, 1.0]]", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("[[1e307, 1.0]] * 100", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("[[1e300, 1e300], [1e300, 1e300]] @ [[1e300, 0.5], [0.5, 1]]", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("[[10.0]]**1000", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("det([[1e200, 0], [0, 1e200]])", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("oo * [[0.5]]", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("(oo - oo) * [[0.5]]", "VALIDATION_FAILED", "NaN"),
        ("10**400 * [[0.5]]", "MAX_LIMIT_EXCEEDED", "float64 range"),
        ("[[1.0, 1/0]]", "VALIDATION_FAILED", "division by zero"),
        ("[[0.5]] / 0", "VALIDATION_FAILED", "division by zero"),
        # what float64 matrices do not do
        ("I * [[0.5]]", "INVALID_INPUT", "real number"),
        ("[[x, 1]] + [[0.5, 1]]", "INVALID_INPUT", "real numbers only"),
        ("rref([[0.5, 1], [2, 3]])", "INVALID_INPUT", "exact only"),
        ("nullspace([[0.5, 1]])", "INVALID_INPUT", "exact only"),
        ("eigenvects([[0.5, 1], [2, 3]])", "INVALID_INPUT", "exact only"),
        ("linsolve([[0.5, 1]], [1])", "INVALID_INPUT", "square"),
        ("det([[0.5, 1]])", "INVALID_INPUT", "square"),
        ("[[0.5, 1]] * [[0.5, 1]]", "INVALID_INPUT", "columns of the first"),
        ("[[0.5, 1]] + 1", "INVALID_INPUT", "c*eye(n)"),
        ("dot([0.5, 1], [1, 2, 3])", "INVALID_INPUT", "same length"),
        ("sin([[0.5]])", "INVALID_INPUT", "not a 1×1 matrix"),
    ],
)
def test_float64_errors_are_coded_and_say_how_to_fix(expression: str, code: str, needle: str) -> None:
    assert_fails(expression, code, needle)


def test_the_float64_literal_limits_come_from_the_syntax_tree() -> None:
    """A 201×201 float literal is refused by `parse` (no numpy); a 200×200 of 17-digit decimals fits the length."""
    with pytest.raises(ToolFailure) as caught:
        gr.parse(literal([["0.5"] * (N + 1)] * (N + 1)), symbolic.EVALUATE)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED" and "201×201" in caught.value.message
    assert "3 → 3.0" not in caught.value.message  # the hint is for exact literals of numbers over 40
    widest = literal([["-0.12345678901234567"] * N] * N)
    assert len(widest) < limits.MAX_FLOAT_EXPRESSION_LENGTH
    gr.parse(f"det({widest})", symbolic.EVALUATE)
    with pytest.raises(ToolFailure) as caught:  # exact literals keep their length limit
        gr.parse(literal([["1" + " " * 60] * 40] * 40), symbolic.EVALUATE)
    assert caught.value.code.value == "MAX_LIMIT_EXCEEDED" and "100000" in caught.value.message
