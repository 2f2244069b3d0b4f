"""Float64 linear algebra with numpy for calculator_evaluate (worker side), up to 200×200.

The rule (`grammar.is_float_literal`): a matrix literal whose entries are all number literals with at
least one decimal literal (`0.5`, `1e-3`, `2.`) is a float64 matrix; whatever is computed from a float64
matrix is float64 too (an exact matrix of numbers meeting one is converted, scalars become sympy Floats);
eye/zeros/ones above 40 (the exact limit) are float64 as well.
Every other matrix keeps the exact sympy path of `matrices.py` and its limits.

Errors: INVALID_INPUT for shapes that do not fit and for what only the exact path does (rref, nullspace,
eigenvects, symbolic or complex entries); VALIDATION_FAILED for a (numerically) singular matrix in inv,
A**-k and linsolve, and for NaN; MAX_LIMIT_EXCEEDED for sizes over 200×200, exponents and results beyond
the float64 range (about 1.8e308). numpy's LAPACK routines cost O(n³): a 200×200 inverse takes
milliseconds (`python -m benchmarks.bench_calculator`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from mcp_sections.servers.calculator import limits
from mcp_sections.servers.calculator.shapes import (
    Final,
    check_operator,
    check_shapes,
    check_square,
    is_matrix,
    size,
)
from mcp_sections.shared.ground.errors import invalid_input, limit_exceeded, validation_failed

MAX_FLOAT_DIGITS = 15  # significant digits shown of a float64 value (17 would show its rounding noise)
SINGULAR_CONDITION = 1 / float(np.finfo(np.float64).eps)  # cond(A) above this: numerically singular
EXACT_ONLY = ("rref", "nullspace", "eigenvects")


@dataclass(frozen=True, eq=False)
class FloatMatrix:
    """A float64 matrix (a 2-D numpy array, finite, at most MAX_FLOAT_SIZE a side); a vector is n×1."""

    array: Any

    @property
    def rows(self) -> int:
        return int(self.array.shape[0])

    @property
    def cols(self) -> int:
        return int(self.array.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols


def is_floats(value: Any) -> bool:
    return isinstance(value, FloatMatrix)


def make(array: Any, what: str) -> FloatMatrix:
    """`array` as a FloatMatrix once its shape is within the limit and every entry is finite."""
    array = np.asarray(array, dtype=np.float64)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    limits.check_shape(array.shape[0], array.shape[1], True, what, floats=True)
    _finite(array, what)
    return FloatMatrix(array)


def literal(rows: list[list[float]], what: str) -> FloatMatrix:
    return make(rows, what)


def constant(name: str, rows: int, columns: int, what: str) -> FloatMatrix:
    """eye(n), zeros(n, m) or ones(n, m) above the exact limit: float64 (0 and 1 are exact in float64)."""
    if name == "eye":
        return make(np.eye(rows), what)
    return make(np.zeros((rows, columns)) if name == "zeros" else np.ones((rows, columns)), what)


def number(value: float, what: str) -> Any:
    """A float64 scalar result as a sympy Float (so it combines with the rest of the expression)."""
    _finite(np.asarray(value), what)
    return sympy.Float(float(value))


def converted(value: Any, what: str) -> FloatMatrix:
    """A FloatMatrix as is; an exact sympy matrix of real numbers converted to float64."""
    if is_floats(value):
        return value
    try:
        return make([[float(entry) for entry in value.row(index)] for index in range(value.rows)], what)
    except TypeError:
        raise invalid_input(
            f"a float64 matrix (one with a decimal entry) meets a matrix with symbols or complex entries in the "
            f"{what}; float64 matrices hold real numbers only. Write the decimals as fractions (0.5 → 1/2) for "
            "the exact path."
        ) from None
    except OverflowError:
        raise _too_large(what) from None


def scalar_float(value: Any, role: str, what: str) -> float:
    """A real number as a float (for scaling a float64 matrix); INVALID_INPUT for anything else."""
    try:
        result = float(value)
    except TypeError:
        raise invalid_input(
            f"{role} of a float64 matrix in the {what} must be a real number, not {sympy.sstr(value)[:40]}."
        ) from None
    except OverflowError:
        raise _too_large(what) from None
    _finite(np.asarray(result), what)
    return result


# -- arithmetic --------------------------------------------------------------------------------------------


def negate(value: FloatMatrix) -> FloatMatrix:
    return FloatMatrix(-value.array)


def is_float_scalar(value: Any) -> bool:
    """A scalar computed from a float64 matrix (det, trace, dot...): a sympy number holding a Float."""
    return isinstance(value, sympy.Expr) and value.has(sympy.Float)


def binary(op: ast.operator, left: Any, right: Any, what: str) -> Any:
    """`left op right` where one side is a FloatMatrix (the other a matrix or a scalar sympy expression)."""
    matrices = is_matrix(left) or is_floats(left), is_matrix(right) or is_floats(right)
    check_operator(op, matrices, what)
    with np.errstate(all="ignore"):
        if isinstance(op, ast.Add | ast.Sub):
            a, b = converted(left, what), converted(right, what)
            check_shapes(op, a, b, matrices, what)
            return make(a.array + b.array if isinstance(op, ast.Add) else a.array - b.array, what)
        if isinstance(op, ast.Mult | ast.MatMult):
            if all(matrices):
                a, b = converted(left, what), converted(right, what)
                check_shapes(op, a, b, matrices, what)
                return product(a, b, what)
            matrix, factor = (left, right) if matrices[0] else (right, left)
            return make(converted(matrix, what).array * scalar_float(factor, "a factor", what), what)
        if isinstance(op, ast.Div):
            divisor = scalar_float(right, "a divisor", what)
            if divisor == 0:
                raise validation_failed(f"division by zero in the {what}; the divisor evaluates to 0.")
            return make(converted(left, what).array / divisor, what)
        return power(left, right, what)  # ** or ^: the only operator left


def product(left: FloatMatrix, right: FloatMatrix, what: str) -> FloatMatrix:
    """left @ right, whose inner sizes `check_shapes` found equal."""
    with np.errstate(all="ignore"):
        return make(left.array @ right.array, what)


def power(base: Any, exponent: Any, what: str) -> FloatMatrix:
    base = converted(base, what)
    _square(base, "a matrix power", what)
    if not getattr(exponent, "is_Integer", False):
        raise invalid_input(
            f"a matrix power needs a whole-number exponent (in the {what}), e.g. A**2, or A**-1 for the inverse; "
            f"got {sympy.sstr(exponent)[:40]}."
        )
    if abs(exponent) > limits.MAX_MATRIX_EXPONENT:
        raise limit_exceeded(
            f"the exponent of a matrix power in the {what} is over the limit of {limits.MAX_MATRIX_EXPONENT} in "
            "magnitude. Use a smaller power (eigenvals gives the eigenvalues)."
        )
    k = int(exponent)
    matrix = inverse(base, what) if k < 0 else base
    with np.errstate(all="ignore"):
        return make(np.linalg.matrix_power(matrix.array, abs(k)), what)


# -- functions ----------------------------------------------------------------------------------------------


def call(name: str, arguments: list[Any], what: str) -> Any:
    """One of grammar.MATRIX_FUNCTIONS with a FloatMatrix among `arguments` (the others converted)."""
    _refuse_call(name, arguments, what)
    matrices = []
    for argument in arguments:
        if not (is_matrix(argument) or is_floats(argument)):
            raise invalid_input(f"{name} takes matrices or vectors, got the number {sympy.sstr(argument)[:40]}.")
        matrices.append(converted(argument, what))
    with np.errstate(all="ignore"):
        function = _FUNCTIONS.get(name)
        if function is not None:
            return function(matrices, what)
        return _of_square(name, matrices[0], what)


def _refuse_call(name: str, arguments: list[Any], what: str) -> None:
    """What the float64 path does not do: the exact-only functions, diag of matrices, linsolve of equations."""
    if name in EXACT_ONLY:
        raise invalid_input(
            f"{name} is exact only, and this matrix is float64 (it has a decimal entry) (in the {what}). Write the "
            f"entries as integers or fractions (0.5 → 1/2) for the exact path, up to {limits.MAX_NUMERIC_SIZE}×"
            f"{limits.MAX_NUMERIC_SIZE}; det, inv, rank, trace, linsolve and eigenvals take float64 matrices."
        )
    if name == "diag":
        raise invalid_input(f"diag takes numbers, not matrices (in the {what}); e.g. diag(0.5, 2).")
    if name == "linsolve" and len(arguments) != 2:
        raise invalid_input(f"linsolve takes a matrix and a vector, linsolve(A, b) (in the {what}).")


def _dot(matrices: list[FloatMatrix], what: str) -> Any:
    left, right = _vector(matrices[0], "dot", what), _vector(matrices[1], "dot", what)
    if left.size != right.size:
        raise invalid_input(f"dot needs two vectors of the same length; got {left.size} and {right.size} entries.")
    return number(float(left @ right), what)


def _cross(matrices: list[FloatMatrix], what: str) -> FloatMatrix:
    left, right = _vector(matrices[0], "cross", what), _vector(matrices[1], "cross", what)
    if left.size != 3 or right.size != 3:
        raise invalid_input(f"cross takes two vectors of 3 entries; got {left.size} and {right.size} (in the {what}).")
    return make(np.cross(left, right), what)


def _of_square(name: str, matrix: FloatMatrix, what: str) -> Any:
    """det, trace, and eigenvals (for any other name) of a square matrix."""
    _square(matrix, f"{name}(...)", what)
    if name == "det":
        return number(float(np.linalg.det(matrix.array)), what)
    if name == "trace":
        return number(float(np.trace(matrix.array)), what)
    return _eigenvalues(matrix, what)


_FUNCTIONS: dict[str, Callable[[list[FloatMatrix], str], Any]] = {
    "Matrix": lambda matrices, what: matrices[0],
    "transpose": lambda matrices, what: FloatMatrix(matrices[0].array.T.copy()),
    "rank": lambda matrices, what: sympy.Integer(int(np.linalg.matrix_rank(matrices[0].array))),
    "dot": _dot,
    "cross": _cross,
    "linsolve": lambda matrices, what: _linsolve(matrices[0], matrices[1], what),
    "inv": lambda matrices, what: inverse(matrices[0], what),
}
"""The functions of float64 matrices that need no square matrix (`_of_square` does the others)."""


def inverse(matrix: FloatMatrix, what: str) -> FloatMatrix:
    _square(matrix, "inv(...)", what)
    _regular(matrix, what)
    with np.errstate(all="ignore"):
        return make(np.linalg.inv(matrix.array), what)


def _linsolve(matrix: FloatMatrix, right: FloatMatrix, what: str) -> Any:
    if min(right.shape) != 1 or right.array.size != matrix.rows:
        raise invalid_input(
            f"linsolve(A, b) needs a vector b with one entry per row of A: A is {size(matrix)}, b is {size(right)} "
            f"(in the {what})."
        )
    if matrix.rows != matrix.cols:
        raise invalid_input(
            f"linsolve of a float64 matrix needs a square A (one solution), and this one is {size(matrix)} (in the "
            f"{what}). For a family of solutions or none, write the entries as integers or fractions (exact path, "
            f"up to {limits.MAX_NUMERIC_SIZE}×{limits.MAX_NUMERIC_SIZE})."
        )
    _regular(matrix, what, "linsolve(A, b)")
    solution = np.linalg.solve(matrix.array, right.array.reshape(-1))
    _finite(solution, what)
    unknowns = tuple(sympy.Symbol(f"x{index + 1}") for index in range(matrix.cols))
    return Final("linsolve", unknowns=unknowns, solution=tuple(sympy.Float(float(v)) for v in solution), floats=True)


def _eigenvalues(matrix: FloatMatrix, what: str) -> Any:
    """numpy.linalg.eigvalsh for a symmetric matrix (real values), else eigvals (LAPACK geev), whose imaginary
    parts below max|λ|·n·eps are rounding noise and dropped. Repeated values are listed once each (multiplicity 1)."""
    array = matrix.array
    if np.array_equal(array, array.T):
        found = np.linalg.eigvalsh(array).astype(np.complex128)
    else:
        found = np.linalg.eigvals(array).astype(np.complex128)
    _finite(np.abs(found), what)
    noise = float(np.abs(found).max(initial=0.0)) * matrix.rows * float(np.finfo(np.float64).eps)
    found.imag[np.abs(found.imag) <= noise] = 0.0
    ordered = sorted((complex(value) for value in found), key=lambda value: (value.real, value.imag))
    items = tuple((_sympy_number(value), 1, None, None) for value in ordered)
    return Final("eigenvals", eigen=items, floats=True)


# -- text ---------------------------------------------------------------------------------------------------


def text(value: Any, digits: int) -> str:
    """A float64 value (a sympy number from this module) to min(digits, 15) significant digits, e.g. 0.333333,
    -2.5e-07, 1 + 2*I: valid calculator input."""
    places = min(digits, MAX_FLOAT_DIGITS)
    number = complex(value)
    _finite(np.asarray(number), "result")
    real, imaginary = f"{number.real:.{places}g}", f"{abs(number.imag):.{places}g}"
    if number.imag == 0:
        return real
    if number.real == 0:
        return f"{'-' if number.imag < 0 else ''}{imaginary}*I"
    return f"{real} {'-' if number.imag < 0 else '+'} {imaginary}*I"


def matrix_rows(matrix: FloatMatrix, digits: int, budget: int) -> tuple[list[list[str]], str]:
    """The entries as text, row by row, and the matrix's text ([[a, b], [c, d]]; a column as [a, b]), both cut
    to the first rows that fit in `budget` characters (at least one row)."""
    places = min(digits, MAX_FLOAT_DIGITS)
    rows: list[list[str]] = []
    pieces: list[str] = []
    used = 2
    for values in matrix.array.tolist():
        row = [f"{value:.{places}g}" for value in values]
        piece = ", ".join(row) if matrix.cols == 1 else "[" + ", ".join(row) + "]"
        if rows and used + len(piece) + 2 > budget:
            break
        rows.append(row)
        pieces.append(piece)
        used += len(piece) + 2
    return rows, "[" + ", ".join(pieces) + "]"


# -- helpers ------------------------------------------------------------------------------------------------


def _sympy_number(value: complex) -> Any:
    if value.imag == 0:
        return sympy.Float(value.real)
    return sympy.Float(value.real) + sympy.Float(value.imag) * sympy.I


def _finite(array: Any, what: str) -> None:
    if np.isfinite(array).all():
        return
    if np.isnan(array).any():
        raise validation_failed(
            f"a float64 result in the {what} is undefined (NaN, e.g. from inf - inf or 0*inf); check the entries."
        )
    raise _too_large(what)


def _too_large(what: str) -> Exception:
    return limit_exceeded(
        f"a float64 result in the {what} is beyond the float64 range (about 1.8e308); scale the entries down "
        "(e.g. divide the matrix by 1000 and rescale the result), or use a smaller power."
    )


def _regular(matrix: FloatMatrix, what: str, operation: str = "inv(A)") -> None:
    """VALIDATION_FAILED when the matrix is numerically singular: condition number (2-norm, by SVD) over 1/eps."""
    with np.errstate(all="ignore"):
        condition = float(np.linalg.cond(matrix.array))
    if not np.isfinite(condition) or condition > SINGULAR_CONDITION:
        rank = int(np.linalg.matrix_rank(matrix.array))
        raise validation_failed(
            f"the {size(matrix)} float64 matrix is singular to working precision (rank {rank} of {matrix.rows}, "
            f"condition number {'infinite' if not np.isfinite(condition) else f'{condition:.3g}'} > 1/eps = "
            f"{SINGULAR_CONDITION:.3g}), so {operation} has no reliable answer (in the {what}). Check the entries; "
            "rank(A) counts its independent rows, and with integer or fraction entries (exact path, up to "
            f"{limits.MAX_NUMERIC_SIZE}×{limits.MAX_NUMERIC_SIZE}) linsolve gives every solution and nullspace the "
            "dependency."
        )


def _square(matrix: FloatMatrix, operation: str, what: str) -> None:
    check_square(matrix, operation, what, "rank, which takes any shape")


def _vector(matrix: FloatMatrix, name: str, what: str) -> Any:
    if min(matrix.shape) != 1:
        raise invalid_input(
            f"{name} takes vectors such as [1.5, 2, 3]; got a {size(matrix)} matrix (in the {what}). "
            "Multiply matrices with * or @."
        )
    return matrix.array.reshape(-1)
