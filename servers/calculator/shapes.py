"""Shape checks shared by exact (`matrices`) and float64 (`floats`) linear algebra: any matrix with `rows` and
`cols`, refused with INVALID_INPUT and a message that says how to fix the expression."""

from __future__ import annotations

from typing import Any

from mcp_sections.shared.errors import invalid_input


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
