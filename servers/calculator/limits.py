"""The calculator's limits, in one place: how long an expression may be, how large a number, a matrix, a result —
each sized so that a computation ends within the worker's time limit (`[sections.calculator] timeout_seconds`)."""

from __future__ import annotations

from mcp_sections.shared.ground.errors import limit_exceeded

MAX_EXPRESSION_LENGTH = 2000
MAX_NODES = 500
MAX_DEPTH = 100
MAX_PAREN_DEPTH = 40
MAX_INTEGER_DIGITS = 1000
MAX_EXPONENT = 10_000
MAX_RESULT_DIGITS = 4000
MAX_OUTPUT_CHARS = 20_000  # the text of a result
MAX_FACTORIAL = 1000
MAX_BINOMIAL = 10_000
MAX_VARIABLES = 10
MAX_NAME_LENGTH = 32
MAX_DECIMAL_EXPONENT = 308  # decimal literals stay within the float range: MAX_VALUE 1e308, MIN_POSITIVE 1e-308

# Linear algebra (grammars with `matrices`). Numbers measured on this 2-core machine (README, calculator row).
MAX_MATRIX_EXPRESSION_LENGTH = 100_000  # characters, when the expression holds an exact matrix literal (else 2000)
MAX_FLOAT_EXPRESSION_LENGTH = 1_000_000  # ... when it holds a float64 literal: one 200×200 of 17-digit decimals
MAX_MATRIX_NODES = 13_000  # nodes inside exact matrix literals: two 40×40 of -1/3 (4 nodes each); MAX_NODES: the rest
MAX_FLOAT_NODES = 170_000  # nodes inside float64 literals: a 200×200 of -1/3 (4 nodes each) and a vector
MAX_SYMBOLIC_SIZE = 20  # rows and columns of a matrix with an entry that is not a number
MAX_NUMERIC_SIZE = 40  # rows and columns of a matrix of numbers (exact rational arithmetic)
MAX_FLOAT_SIZE = 200  # rows and columns of a float64 matrix (numpy): a literal with a decimal entry
MAX_PLAIN_DIGITS = 20  # a literal entry with more digits counts as symbolic
MAX_MATRIX_EXPONENT = 1000  # |k| in A**k
MAX_EIGEN_SIZE = 20  # eigenvals/eigenvects: the roots of a larger characteristic polynomial take too long


def check_shape(rows: int, columns: int, numbers: bool, what: str = "expression", *, floats: bool = False) -> None:
    """MAX_LIMIT_EXCEEDED when a rows×columns matrix is over its limit (`numbers`: every entry is a number;
    `floats`: a float64 matrix)."""
    limit = MAX_FLOAT_SIZE if floats else MAX_NUMERIC_SIZE if numbers else MAX_SYMBOLIC_SIZE
    if rows > limit or columns > limit:
        raise limit_exceeded(
            f"a {rows}×{columns} matrix in the {what} is over the limit: {MAX_FLOAT_SIZE}×{MAX_FLOAT_SIZE} for "
            f"float64 matrices (a literal of numbers with a decimal entry such as 0.5 or 1e-3), "
            f"{MAX_NUMERIC_SIZE}×{MAX_NUMERIC_SIZE} for exact ones when every entry is a number (integers or "
            f"fractions of at most {MAX_PLAIN_DIGITS} digits), {MAX_SYMBOLIC_SIZE}×{MAX_SYMBOLIC_SIZE} when an entry "
            "is an expression (sqrt(2), pi, x, 10**30...). Use a smaller matrix, or numeric entries"
            + (
                "; for float64, write one entry of the literal with a decimal point (3 → 3.0)."
                if numbers and not floats
                else "."
            )
        )


# calculator_solve's numeric roots (one equation in one unknown that sympy cannot solve in closed form)
ROOT_INTERVAL = (-100.0, 100.0)  # searched by default
MAX_ROOT_BOUND = 1e12  # |low|, |high| of an interval the caller gives
ROOT_SAMPLES = 4000  # equal steps of the interval where f is sampled
MAX_NUMERIC_ROOTS = 50
