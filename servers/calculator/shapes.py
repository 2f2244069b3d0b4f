"""What exact (`matrices`) and float64 (`floats`) linear algebra share: the kinds of values (a sympy matrix, a `Final`
result), the shapes of any matrix with `rows` and `cols`, and the operators no matrix arithmetic means — refused with
INVALID_INPUT and a message that says how to fix the expression."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import sympy

from mcp_sections.shared.ground.errors import invalid_input


@dataclass(frozen=True)
class Final:
    """A result that is not a number or a matrix; `function` names the call that made it.

    rref: `matrix` and `pivots`; nullspace: `vectors`; eigenvals/eigenvects: `eigen` as (value,
    multiplicity, basis vectors or None, and for a value known only numerically the irreducible factor of
    the characteristic polynomial it is a root of); linsolve: `unknowns` and `solution` (None: none).
    `floats`: computed in float64 (`floats.py`), the values are sympy Floats.
    """

    function: str
    matrix: Any = None
    pivots: tuple[int, ...] = ()
    vectors: tuple[Any, ...] = ()
    eigen: tuple[tuple[Any, int, tuple[Any, ...] | None, Any], ...] = ()
    unknowns: tuple[Any, ...] = ()
    solution: tuple[Any, ...] | None = None
    floats: bool = False


def is_matrix(value: Any) -> bool:
    return isinstance(value, sympy.MatrixBase)


def size(matrix: Any) -> str:
    return f"{matrix.rows}×{matrix.cols}"


def check_product(left: Any, right: Any, what: str) -> None:
    if left.cols != right.rows:
        raise invalid_input(
            f"cannot multiply a {size(left)} matrix by a {size(right)} matrix in the {what}: the columns of the "
            f"first ({left.cols}) must equal the rows of the second ({right.rows}). Check the order, or transpose "
            "one of them (transpose(B)); dot(u, v) multiplies two vectors."
        )


def check_square(matrix: Any, operation: str, what: str, any_shape: str) -> None:
    """`any_shape`: what the caller offers that takes any shape (e.g. "rank, which takes any shape")."""
    if matrix.rows != matrix.cols:
        raise invalid_input(
            f"{operation} needs a square matrix, and this one is {size(matrix)} (in the {what}); "
            f"check the rows, or use {any_shape}."
        )


def check_binary(op: ast.operator, left: Any, right: Any, matrices: tuple[bool, bool], what: str) -> None:
    """The refusals of `left op right` with a matrix among them, for exact and float64 matrices alike: the operators
    no matrix arithmetic means, + and - of two shapes, and a product of two matrices whose inner sizes differ.
    `matrices`: which sides are matrices."""
    check_operator(op, matrices, what)
    check_shapes(op, left, right, matrices, what)


def check_shapes(op: ast.operator, left: Any, right: Any, matrices: tuple[bool, bool], what: str) -> None:
    """The shapes `left op right` needs, once `check_operator` passed: + and - of the same shape, a product of two
    matrices whose inner sizes agree."""
    if isinstance(op, ast.Add | ast.Sub):
        _check_same_shape(left, right, what)
    elif isinstance(op, ast.Mult | ast.MatMult) and all(matrices):
        check_product(left, right, what)


def check_operator(op: ast.operator, matrices: tuple[bool, bool], what: str) -> None:
    """Refuse `left op right` where it means nothing for matrices; `matrices`: which sides are matrices."""
    if isinstance(op, ast.Add | ast.Sub) and not all(matrices):
        raise invalid_input(
            f"cannot add or subtract a matrix and a number in the {what}; to shift the diagonal of an n×n "
            "matrix write A + c*eye(n)."
        )
    if isinstance(op, ast.MatMult) and not all(matrices):
        raise invalid_input(f"`@` multiplies two matrices (in the {what}); scale a matrix by a number with *.")
    if isinstance(op, ast.Div) and matrices[1]:
        raise invalid_input(f"cannot divide by a matrix in the {what}; multiply by its inverse instead: A*inv(B).")
    if isinstance(op, ast.Pow | ast.BitXor) and matrices[1]:
        raise invalid_input(
            f"a matrix cannot be an exponent (in the {what}); matrix powers are A**k with a whole number k."
        )
    if not isinstance(op, ast.Add | ast.Sub | ast.Mult | ast.MatMult | ast.Div | ast.Pow | ast.BitXor):
        raise invalid_input(f"the operator % does not apply to matrices (in the {what}).")


def _check_same_shape(left: Any, right: Any, what: str) -> None:
    if (left.rows, left.cols) != (right.rows, right.cols):
        raise invalid_input(
            f"cannot add or subtract a {size(left)} and a {size(right)} matrix in the {what}; both need the same shape."
        )
