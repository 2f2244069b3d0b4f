"""Linear algebra for calculator_evaluate: matrix values, their operations and their limits (worker side).

A matrix value is a sympy `ImmutableMatrix`; a vector is an n×1 column. Every matrix made here passes
`checked` (`limits.check_shape`: 40×40 when every entry is a rational number, 20×20 otherwise), and
the parser has already checked the literals' shapes, so no heavy work starts on an oversized matrix.
Exponents of `A**k` are bounded, and for rational matrices so is the size of the result's numbers.

The work goes through sympy's `DomainMatrix` over the field sympy finds for the entries (QQ, QQ_I,
QQ<sqrt(2)>, ZZ(x, pi)...), denominators cleared row by row into the ring (ZZ, ZZ[x]...) for det, inv
and rref: exact, and far faster than the generic `Matrix` methods with sympy's pure-Python integers
(measured on this machine: `Matrix.rank()` of a 20×20 decimal matrix ran for over 15 minutes and
`Matrix.det()` of a 20×20 matrix with x on the diagonal 94 s; here they take milliseconds and 0.2 s).
Only matrices that need sympy's generic expression domain EX (symbols mixed with radicals, say) use the
`Matrix` methods, bounded by the worker's time limit. Eigenvalues come from the factored characteristic
polynomial: closed forms for factors up to degree 4, 15-digit roots above (numbers only).

rref, nullspace, eigenvals, eigenvects and linsolve return a `Final` value, which must be the whole
expression. Errors: INVALID_INPUT for shapes that do not fit (non-square det, mismatched product) and misuse
of matrices as numbers; VALIDATION_FAILED for singular inverses (as a division by zero); MAX_LIMIT_EXCEEDED for
sizes, exponents, digits; EXECUTION_FAILED when eigenvalues have no closed form and cannot be given numerically.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import mpmath
import sympy
from sympy.matrices.exceptions import MatrixError, NonInvertibleMatrixError
from sympy.polys.matrices import DomainMatrix
from sympy.polys.matrices.exceptions import DMNonInvertibleMatrixError
from sympy.solvers.solveset import NonlinearError

from mcp_sections.servers.calculator import floats as fl
from mcp_sections.servers.calculator import limits
from mcp_sections.servers.calculator.shapes import (
    Final,
    check_binary,
    check_square,
    is_matrix,
    size,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, limit_exceeded, validation_failed

FINAL_DESCRIPTIONS = {
    "rref": "the reduced row echelon form and its pivot columns",
    "nullspace": "a list of basis vectors",
    "eigenvals": "the eigenvalues with their multiplicities",
    "eigenvects": "the eigenvalues with their eigenvectors",
    "linsolve": "the solution of a system",
}


def is_value(value: Any) -> bool:
    """A matrix (exact or float64) or a `Final`: anything that is not a scalar sympy expression."""
    return is_matrix(value) or fl.is_floats(value) or isinstance(value, Final)


is_floats = fl.is_floats
float_literal = fl.literal


def scalar(value: Any, role: str, what: str) -> Any:
    """`value` when it is a number or a scalar expression; INVALID_INPUT naming `role` otherwise."""
    _not_final(value, what)
    if is_matrix(value) or fl.is_floats(value):
        raise invalid_input(f"{role} in the {what} must be a number or an expression, not a {size(value)} matrix.")
    return value


def checked(value: Any, what: str) -> Any:
    """The matrix as an ImmutableMatrix, once its shape is within the limits."""
    matrix = value if isinstance(value, sympy.ImmutableMatrix) else sympy.ImmutableMatrix(value)
    limits.check_shape(matrix.rows, matrix.cols, _rational(matrix), what)
    return matrix


def literal(rows: list[list[Any]], what: str) -> Any:
    return checked(sympy.ImmutableMatrix(rows), what)


# -- arithmetic --------------------------------------------------------------------------------------------


def negate(value: Any, what: str) -> Any:
    _not_final(value, what)
    return fl.negate(value) if fl.is_floats(value) else -value


def binary(op: ast.operator, left: Any, right: Any, what: str) -> Any:
    """`left op right` where at least one side is a matrix (or the operator is `@`)."""
    _not_final(left, what)
    _not_final(right, what)
    if any(fl.is_floats(side) or fl.is_float_scalar(side) for side in (left, right)):
        return fl.binary(op, left, right, what)  # a float64 value meets a matrix: float64
    matrices = is_matrix(left), is_matrix(right)
    check_binary(op, left, right, matrices, what)
    if isinstance(op, ast.Add | ast.Sub):
        return checked(left + right if isinstance(op, ast.Add) else left - right, what)
    if isinstance(op, ast.Mult | ast.MatMult):
        return product(left, right, what) if all(matrices) else checked(left * right, what)
    if isinstance(op, ast.Div):
        if right.is_zero:
            raise validation_failed(f"division by zero in the {what}; the divisor evaluates to 0.")
        return checked(left / right, what)
    return power(left, right, what)  # ** or ^: the only operator left


def product(left: Any, right: Any, what: str) -> Any:
    """left * right of two matrices whose inner sizes `check_binary` found equal."""
    first, second = _over_field(left), _over_field(right)
    if first is None or second is None:
        return checked(left * right, what)
    first, second = first.unify(second)
    (a, first), (b, second) = _cleared(first), _cleared(second)
    return checked(_divided(first * second, first.domain.mul(a, b), first.domain), what)


def power(base: Any, exponent: Any, what: str) -> Any:
    _square(base, "a matrix power", what)
    exponent = scalar(exponent, "the exponent of a matrix power", what)
    if not exponent.is_Integer:
        raise invalid_input(
            f"a matrix power needs a whole-number exponent (in the {what}), e.g. A**2, or A**-1 for the inverse; "
            f"got {sympy.sstr(exponent)[:40]}."
        )
    if abs(exponent) > limits.MAX_MATRIX_EXPONENT:
        raise limit_exceeded(
            f"the exponent of a matrix power in the {what} is {_short(exponent)}; the limit is "
            f"{limits.MAX_MATRIX_EXPONENT} in magnitude. Use a smaller power (eigenvects gives the diagonal form)."
        )
    k = int(exponent)
    if k < 0:
        base, k = inverse(base, what), -k
    field = _over_field(base)
    if field is None:
        return checked(base**k, what)
    denominator, ring = _cleared(field)
    if ring.domain.is_ZZ:  # A = Z/d: the entries of A**k are at most ‖Z‖**k / d**k, ‖Z‖ the largest row sum
        norm = max(sum(abs(int(entry)) for entry in row) for row in ring.to_list())
        estimate = k * (math.log10(max(norm, 1)) + math.log10(int(denominator))) + 1
        if estimate > limits.MAX_RESULT_DIGITS:
            raise limit_exceeded(
                f"A**{k} in the {what} would hold numbers of up to {int(estimate)} digits; exact results are "
                f"limited to {limits.MAX_RESULT_DIGITS} digits. Use a smaller power, or entries with fewer digits."
            )
    return checked(_divided(ring**k, ring.domain.pow(denominator, k), ring.domain), what)


# -- functions ----------------------------------------------------------------------------------------------


def call(name: str, arguments: list[Any], what: str) -> Any:
    """One of grammar.MATRIX_FUNCTIONS (linsolve of equations: `linsolve_equations`)."""
    for argument in arguments:
        _not_final(argument, what)
    if name in ("eye", "zeros", "ones"):  # sizes, never a matrix: a float64 one is refused as an exact one is
        return _constant(name, arguments, what)
    if any(fl.is_floats(argument) for argument in arguments):
        return fl.call(name, arguments, what)
    if name == "diag":
        return checked(sympy.diag(*(scalar(value, "each argument of diag", what) for value in arguments)), what)
    if name == "linsolve" and len(arguments) != 2:
        raise invalid_input(
            f"linsolve takes a matrix and a vector, linsolve(A, b), or a list of equations and a list of "
            f"unknowns, linsolve([x + y == 3, x - y == 1], [x, y]) (in the {what})."
        )
    if name in ("dot", "cross", "linsolve"):
        left, right = (_matrix(value, name, what) for value in arguments)
        if name == "linsolve":
            return _linsolve_matrix(left, right, what)
        return _dot(left, right, what) if name == "dot" else _cross(left, right, what)
    matrix = _matrix(arguments[0], name, what)
    function = _OF_ONE_MATRIX.get(name)
    return function(matrix, what) if function is not None else _of_square(name, matrix, what)


def _constant(name: str, arguments: list[Any], what: str) -> Any:
    """eye(n), zeros(n, m), ones(n, m): exact up to MAX_NUMERIC_SIZE, float64 above."""
    rows = _dimension(arguments[0], name, what)
    columns = _dimension(arguments[-1], name, what)
    if max(rows, columns) > limits.MAX_NUMERIC_SIZE:  # only float64 matrices are that large
        return fl.constant(name, rows, columns, what)
    if name == "eye":
        return checked(sympy.eye(rows), what)
    return checked(sympy.zeros(rows, columns) if name == "zeros" else sympy.ones(rows, columns), what)


def _rref(matrix: Any, what: str) -> Final:
    reduced, pivots = _reduced(matrix)
    return Final("rref", matrix=reduced, pivots=pivots)


def _of_square(name: str, matrix: Any, what: str) -> Any:
    """det, trace, and eigenvals or eigenvects (any other name) of a square matrix."""
    _square(matrix, f"{name}(...)", what)
    if name == "det":
        return determinant(matrix)
    if name == "trace":
        return matrix.trace()
    return _eigen(matrix, name, what)


def determinant(matrix: Any) -> Any:
    field = _over_field(matrix)
    if field is None:
        return matrix.det()
    denominators, ring = _cleared_rows(field)  # A = D⁻¹·Z, so det A = det Z / det D
    product = field.domain.one
    for denominator in denominators:
        product = field.domain.mul(product, field.domain.convert_from(denominator, ring.domain))
    return field.domain.to_sympy(field.domain.quo(field.domain.convert_from(ring.det(), ring.domain), product))


def inverse(matrix: Any, what: str) -> Any:
    _square(matrix, "inv(...)", what)
    field = _over_field(matrix)
    if field is None:
        try:
            return checked(matrix.inv(), what)
        except NonInvertibleMatrixError:
            raise _singular(matrix, what) from None
    denominators, ring = _cleared_rows(field)  # A = D⁻¹·Z, so A⁻¹ = Z⁻¹·D
    try:
        adjugate, determinant = ring.inv_den()
    except DMNonInvertibleMatrixError:
        raise _singular(matrix, what) from None
    domain = field.domain
    scale = DomainMatrix.diag([domain.convert_from(d, ring.domain) for d in denominators], domain)
    reciprocal = domain.quo(domain.one, domain.convert_from(determinant, ring.domain))
    return checked((adjugate.convert_to(domain) * scale).mul(reciprocal).to_Matrix(), what)


_OF_ONE_MATRIX: dict[str, Callable[[Any, str], Any]] = {
    "Matrix": lambda matrix, what: matrix,
    "transpose": lambda matrix, what: checked(matrix.T, what),
    "rank": lambda matrix, what: sympy.Integer(len(_reduced(matrix, pivots_only=True)[1])),
    "rref": _rref,
    "nullspace": lambda matrix, what: Final("nullspace", vectors=_nullspace(*_reduced(matrix))),
    "inv": inverse,
}
"""The functions of one matrix of any shape (`_of_square` does the others)."""


def linsolve_equations(equations: list[Any], unknowns: list[Any] | None, what: str) -> Final:
    """linsolve([lhs - rhs, ...], [x, y]): `equations` are scalar expressions meaning '= 0'."""
    if unknowns is None:
        free = set().union(*(equation.free_symbols for equation in equations))
        unknowns = sorted(free, key=lambda symbol: symbol.name)
    if not unknowns:
        raise invalid_input(f"linsolve's equations contain no unknown (in the {what}); e.g. linsolve([x + y == 3]).")
    if len(unknowns) > limits.MAX_SYMBOLIC_SIZE:
        raise limit_exceeded(f"linsolve takes at most {limits.MAX_SYMBOLIC_SIZE} unknowns; got {len(unknowns)}.")
    try:
        found = sympy.linsolve(equations, unknowns)
    except NonlinearError as exc:
        raise invalid_input(
            f"linsolve solves linear systems, and this one is not linear in {', '.join(map(str, unknowns))} "
            f"({str(exc)[:80]}); use calculator_solve for non-linear equations."
        ) from None
    return _solution(found, unknowns)


# -- helpers ------------------------------------------------------------------------------------------------


def _rational(matrix: Any) -> bool:
    return all(entry.is_Rational for entry in matrix)


def _over_field(matrix: Any) -> DomainMatrix | None:
    """The matrix over the field sympy finds for its entries (QQ for numbers, QQ_I, QQ<sqrt(2)>, ZZ(x, pi)...),
    or None when only the generic expression domain EX fits (then sympy's Matrix methods do the work)."""
    domain = DomainMatrix.from_Matrix(matrix, extension=True)
    return None if domain.domain.is_EX else domain.to_field()


def _cleared(field: DomainMatrix) -> tuple[Any, DomainMatrix]:
    """field = Z/d: the common denominator d (a ring element) and Z over the ring (ZZ, ZZ_I, ZZ[x]...)."""
    denominator, ring = field.clear_denoms(convert=True)
    return denominator.element, ring


def _cleared_rows(field: DomainMatrix) -> tuple[list[Any], DomainMatrix]:
    """field = D⁻¹·Z: the rows' denominators D (ring elements) and Z over the ring (ZZ, ZZ_I, ZZ[x]...)."""
    denominators, ring = field.clear_denoms_rowwise(convert=True)
    return [row[index] for index, row in enumerate(denominators.to_list())], ring


def _divided(ring: DomainMatrix, denominator: Any, domain: Any) -> Any:
    """ring / denominator as a sympy matrix (`domain` is the ring the denominator belongs to)."""
    field = ring.to_field()
    return field.mul(field.domain.quo(field.domain.one, field.domain.convert_from(denominator, domain))).to_Matrix()


def _reduced(matrix: Any, pivots_only: bool = False) -> tuple[Any, tuple[int, ...]]:
    """The reduced row echelon form and its pivot columns, as sympy's Matrix.rref gives them; with
    `pivots_only` the form is None (rank: no division of every entry by the denominator)."""
    field = _over_field(matrix)
    if field is None:
        reduced, pivots = matrix.rref()
        return sympy.ImmutableMatrix(reduced), tuple(int(pivot) for pivot in pivots)
    ring = _cleared_rows(field)[1]  # scaling rows keeps the rref
    fraction_free, denominator, pivots = ring.rref_den()
    columns = tuple(int(pivot) for pivot in pivots)
    if pivots_only:
        return None, columns
    return sympy.ImmutableMatrix(_divided(fraction_free, denominator, ring.domain)), columns


def _nullspace(reduced: Any, pivots: tuple[int, ...]) -> tuple[Any, ...]:
    """A basis of the null space from the rref, as Matrix.nullspace gives it: each free column's entry is 1."""
    basis = []
    for free in (column for column in range(reduced.cols) if column not in pivots):
        vector = [sympy.Integer(0)] * reduced.cols
        vector[free] = sympy.Integer(1)
        for row, pivot in enumerate(pivots):
            vector[pivot] = -reduced[row, free]
        basis.append(sympy.ImmutableMatrix(vector))
    return tuple(basis)


def _short(value: Any) -> str:
    text = sympy.sstr(value)
    return text if len(text) <= 12 else f"about 10**{len(text.lstrip('-')) - 1}"


def _not_final(value: Any, what: str) -> None:
    if isinstance(value, Final):
        raise invalid_input(
            f"{value.function}(...) gives {FINAL_DESCRIPTIONS[value.function]}, so it must be the whole expression "
            f"(in the {what}), not part of a larger one; compute it in a call of its own."
        )


def _matrix(value: Any, name: str, what: str) -> Any:
    if not is_matrix(value):
        example = "[1, 2, 3], [4, 5, 6]" if name in ("dot", "cross") else "[[1, 2], [3, 4]]"
        raise invalid_input(
            f"{name} takes matrices or vectors, e.g. {name}({example}); got the number {sympy.sstr(value)[:40]} "
            f"(in the {what})."
        )
    return value


def _square(matrix: Any, operation: str, what: str) -> None:
    check_square(matrix, operation, what, "rank/rref/nullspace, which take any shape")


def _singular(matrix: Any, what: str) -> ToolFailure:
    """A matrix with no inverse: outside the operation's domain (VALIDATION_FAILED, as a division by zero)."""
    return validation_failed(
        f"the {size(matrix)} matrix is singular (its determinant is 0), so it has no inverse (in the {what}). "
        "Check its entries; rank(A) counts its independent rows, nullspace(A) shows the dependency, and "
        "linsolve(A, b) solves A*x = b without an inverse."
    )


def _dimension(value: Any, name: str, what: str) -> int:
    value = scalar(value, f"the size given to {name}", what)
    if not value.is_Integer or value < 1:
        raise invalid_input(f"{name} takes positive whole numbers as sizes, e.g. {name}(3) (in the {what}).")
    if value > limits.MAX_FLOAT_SIZE:
        raise limit_exceeded(
            f"{name}({_short(value)}) is over the limit of {limits.MAX_FLOAT_SIZE} rows and columns (in the {what}): "
            f"exact up to {limits.MAX_NUMERIC_SIZE}, float64 above. Use a smaller size."
        )
    return int(value)


def _vector(matrix: Any, name: str, what: str) -> Any:
    if min(matrix.shape) != 1:
        raise invalid_input(
            f"{name} takes vectors such as [1, 2, 3]; got a {size(matrix)} matrix (in the {what}). "
            "Multiply matrices with * or @."
        )
    return matrix


def _dot(left: Any, right: Any, what: str) -> Any:
    left, right = _vector(left, "dot", what), _vector(right, "dot", what)
    if len(left) != len(right):
        raise invalid_input(f"dot needs two vectors of the same length; got {len(left)} and {len(right)} entries.")
    return left.dot(right)


def _cross(left: Any, right: Any, what: str) -> Any:
    left, right = _vector(left, "cross", what), _vector(right, "cross", what)
    if len(left) != 3 or len(right) != 3:
        raise invalid_input(f"cross takes two vectors of 3 entries; got {len(left)} and {len(right)} (in the {what}).")
    return checked(left.cross(right), what)


def _eigen(matrix: Any, name: str, what: str) -> Final:
    if matrix.rows > limits.MAX_EIGEN_SIZE:
        raise limit_exceeded(
            f"{name} takes matrices up to {limits.MAX_EIGEN_SIZE}×{limits.MAX_EIGEN_SIZE}, and this one is "
            f"{size(matrix)} "
            f"(in the {what}): the roots of a larger characteristic polynomial take too long. det, rank and trace "
            "take larger matrices."
        )
    field = _over_field(matrix)
    if field is None:
        items = _sympy_eigen(matrix, name)
    else:
        factors = _characteristic_factors(field, numbers=_rational(matrix))
        if name == "eigenvals":
            items = _eigenvalues(factors, numbers=_rational(matrix), what=what)
        else:
            _require_closed_forms(factors, name, what)
            items = _sympy_eigen(matrix, name)
    items.sort(key=_eigen_order)
    return Final(name, eigen=tuple(items))


Eigen = tuple[Any, int, tuple[Any, ...] | None, Any]  # value, multiplicity, eigenvectors, polynomial if numeric


def _characteristic_factors(field: DomainMatrix, numbers: bool) -> list[tuple[Any, int]]:
    """The irreducible factors of the characteristic polynomial (in x for a matrix of numbers)."""
    variable = sympy.Symbol("x") if numbers else sympy.Dummy("x")
    degree = field.shape[0]
    polynomial = sympy.Add(
        *(field.domain.to_sympy(c) * variable ** (degree - i) for i, c in enumerate(field.charpoly()))
    )
    return [(factor, int(power)) for factor, power in sympy.Poly(polynomial, variable).factor_list()[1]]


def _eigenvalues(factors: list[tuple[Any, int]], numbers: bool, what: str) -> list[Eigen]:
    """Exact roots of the factors of degree up to 4; for a matrix of numbers, 15-digit roots of higher factors."""
    items: list[Eigen] = []
    for factor, power in factors:
        if factor.degree() <= 4:
            items.extend((root, power * int(count), None, None) for root, count in sympy.roots(factor).items())
            continue
        if not numbers:
            _require_closed_forms([(factor, power)], "eigenvals", what)
        try:
            roots = factor.nroots(n=15, maxsteps=200)
        except mpmath.NoConvergence:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"the numeric roots of a degree-{factor.degree()} factor of the characteristic polynomial did not "
                "converge; use entries with fewer digits, or a smaller matrix.",
            ) from None
        items.extend((root, power, None, factor.as_expr()) for root in roots)
    return items


def _require_closed_forms(factors: list[tuple[Any, int]], name: str, what: str) -> None:
    """EXECUTION_FAILED, saying what to do instead, when a factor has degree 5 or more (no closed-form roots)."""
    degree = max(factor.degree() for factor, _ in factors)
    if degree > 4:
        instead = (
            "eigenvals gives these eigenvalues numerically when every entry is a number; "
            "linsolve or nullspace(A - c*eye(n)) then gives the eigenvectors for a known c."
            if name == "eigenvects"
            else "Put numbers instead of symbols in the matrix to get them numerically, or use a smaller matrix."
        )
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"{name} needs every eigenvalue in closed form, but the characteristic polynomial has an irreducible "
            f"factor of degree {degree}, whose roots have none (in the {what}). {instead}",
        )


def _sympy_eigen(matrix: Any, name: str) -> list[Eigen]:
    try:
        if name == "eigenvals":
            values = matrix.eigenvals(error_when_incomplete=True)
            return [(value, int(count), None, None) for value, count in values.items()]
        found = matrix.eigenvects(error_when_incomplete=True)
    except MatrixError as exc:
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"sympy could not find every eigenvalue in closed form ({str(exc)[:120]}). With numbers as entries, "
            "eigenvals gives the eigenvalues it cannot write exactly as numbers; otherwise use a smaller matrix.",
        ) from None
    return [(value, int(count), tuple(sympy.ImmutableMatrix(v) for v in basis), None) for value, count, basis in found]


def _eigen_order(item: Eigen) -> tuple[Any, ...]:
    """Numbers by real then imaginary part, then expressions in sympy's order."""
    value = item[0]
    if value.is_number:
        approximation = complex(value.evalf(15))
        return (0, approximation.real, approximation.imag, ())
    return (1, 0.0, 0.0, sympy.default_sort_key(value))


def _linsolve_matrix(matrix: Any, right: Any, what: str) -> Final:
    if min(right.shape) != 1 or len(right) != matrix.rows:
        raise invalid_input(
            f"linsolve(A, b) needs a vector b with one entry per row of A: A is {size(matrix)}, b is {size(right)} "
            f"(in the {what})."
        )
    unknowns = [sympy.Symbol(f"x{index + 1}") for index in range(matrix.cols)]
    taken = {symbol.name for symbol in matrix.free_symbols | right.free_symbols}
    if taken & {symbol.name for symbol in unknowns}:
        raise invalid_input(
            f"linsolve(A, b) names its unknowns x1..x{matrix.cols}, and A or b already uses one of these names; "
            "rename the variable, or pass equations: linsolve([...], [unknowns])."
        )
    return _solution_of(matrix.row_join(right if right.cols == 1 else right.T), unknowns)


def _solution_of(augmented: Any, unknowns: list[Any]) -> Final:
    """linsolve((A, b)) read off the rref of [A | b], in sympy's form: free unknowns stand for themselves."""
    reduced, pivots = _reduced(augmented)
    last = augmented.cols - 1
    if last in pivots:
        return Final("linsolve", unknowns=tuple(unknowns), solution=None)
    values = list(unknowns)
    free = [column for column in range(last) if column not in pivots]
    for row, pivot in enumerate(pivots):
        values[pivot] = reduced[row, last] - sympy.Add(*(reduced[row, column] * unknowns[column] for column in free))
    return Final("linsolve", unknowns=tuple(unknowns), solution=tuple(values))


def _solution(found: Any, unknowns: list[Any]) -> Final:
    solution = next(iter(found), None) if isinstance(found, sympy.FiniteSet) else None
    return Final("linsolve", unknowns=tuple(unknowns), solution=None if solution is None else tuple(solution))
