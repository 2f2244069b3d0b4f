"""The seed's float calculator: 23 unary operations, 11 binary operations, 6 constants (plain `math`).

Error codes (the seed's CalculatorTool contract):
- VALIDATION_FAILED: a value outside an operation's domain (the seed's "Contraintes" column): divide or
  modulo by zero, sqrt of a negative, ln/log10 of a non-positive, asin/acos outside [-1, 1], tan at an odd
  multiple of pi/2, pow of a negative base with a non-integer exponent (or 0 to a negative power), log of a
  non-positive value or with a base <= 0 or == 1, nroot of index 0, an even (or non-integer) root of a
  negative. The seed documents VALIDATION_FAILED as "business validation: fix the data according to the
  rules"; its Rust implementation reports these as ExecutionFailed, which in this suite means an internal
  failure, so the documented code is used.
- MAX_LIMIT_EXCEEDED: a result whose magnitude exceeds MAX_VALUE (1e308), including float overflow.
- Results whose magnitude is below MIN_POSITIVE (1e-308) are returned as 0.0 with a note (underflow).
Inputs are bounded to [-MAX_VALUE, MAX_VALUE] and finite by the input models (INVALID_INPUT otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, get_args

from mcp_sections.shared.ground.errors import ToolFailure, limit_exceeded, validation_failed

MAX_VALUE = 1e308
MIN_POSITIVE = 1e-308
TAN_POLE_TOLERANCE = 1e-10

UnaryOperation = Literal[
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "sqrt",
    "cbrt",
    "exp",
    "exp2",
    "ln",
    "log10",
    "floor",
    "ceil",
    "round",
    "trunc",
    "abs",
    "sign",
    "degrees",
    "radians",
]
BinaryOperation = Literal[
    "add", "subtract", "multiply", "divide", "modulo", "pow", "log", "min", "max", "atan2", "nroot"
]
ConstantName = Literal["pi", "e", "tau", "sqrt2", "ln2", "ln10"]

UNARY_OPS: tuple[str, ...] = get_args(UnaryOperation)
BINARY_OPS: tuple[str, ...] = get_args(BinaryOperation)
VALID_CONSTANTS: tuple[str, ...] = get_args(ConstantName)

CONSTANTS: dict[str, tuple[float, str]] = {
    "pi": (math.pi, "Circle constant: ratio of a circle's circumference to its diameter"),
    "e": (math.e, "Euler's number, the base of the natural logarithm"),
    "tau": (math.tau, "Tau = 2*pi, a full turn in radians"),
    "sqrt2": (math.sqrt(2.0), "Square root of 2"),
    "ln2": (math.log(2.0), "Natural logarithm of 2"),
    "ln10": (math.log(10.0), "Natural logarithm of 10"),
}


@dataclass(frozen=True)
class Outcome:
    """A finite result, and a note when it was adjusted (underflow to 0)."""

    result: float
    note: str | None = None


def _domain(message: str) -> ToolFailure:
    return validation_failed(message)


def _tan(x: float) -> float:
    k = round(x / (math.pi / 2))
    if k % 2 != 0 and abs(x - k * (math.pi / 2)) < TAN_POLE_TOLERANCE:
        raise _domain(
            f"tan is undefined at {x!r} (an odd multiple of pi/2, within {TAN_POLE_TOLERANCE:g}); "
            "move the angle away from the pole, or check that the value is in radians (use radians first)."
        )
    return math.tan(x)


def _unit_interval(name: str, function: Callable[[float], float]) -> Callable[[float], float]:
    def apply(x: float) -> float:
        if not -1.0 <= x <= 1.0:
            raise _domain(f"{name} is defined only on [-1, 1]; got {x!r}. Pass a value between -1 and 1.")
        return function(x)

    return apply


def _sqrt(x: float) -> float:
    if x < 0:
        raise _domain(
            f"cannot take the square root of a negative number ({x!r}); use abs first, or cbrt for odd roots."
        )
    return math.sqrt(x)


def _positive_log(name: str, function: Callable[[float], float]) -> Callable[[float], float]:
    def apply(x: float) -> float:
        if x <= 0:
            raise _domain(f"{name} is defined only for values > 0; got {x!r}. Pass a positive value.")
        return function(x)

    return apply


def _round_half_away(x: float) -> float:
    """Round half away from zero (the seed's semantics: round(2.5) = 3, round(-2.5) = -3)."""
    return float(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _sign(x: float) -> float:
    return 0.0 if x == 0 else math.copysign(1.0, x)


UNARY: dict[str, Callable[[float], float]] = {
    "sin": math.sin,
    "cos": math.cos,
    "tan": _tan,
    "asin": _unit_interval("asin", math.asin),
    "acos": _unit_interval("acos", math.acos),
    "atan": math.atan,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "sqrt": _sqrt,
    "cbrt": math.cbrt,
    "exp": math.exp,
    "exp2": math.exp2,
    "ln": _positive_log("ln", math.log),
    "log10": _positive_log("log10", math.log10),
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "round": _round_half_away,
    "trunc": lambda x: float(math.trunc(x)),
    "abs": abs,
    "sign": _sign,
    "degrees": math.degrees,
    "radians": math.radians,
}


def _divide(a: float, b: float) -> float:
    if b == 0:
        raise _domain(f"division by zero: cannot divide {a!r} by 0. Pass a non-zero divisor b.")
    return a / b


def _modulo(a: float, b: float) -> float:
    if b == 0:
        raise _domain(f"modulo by zero: cannot compute {a!r} % 0. Pass a non-zero divisor b.")
    return math.fmod(a, b)


def _pow(a: float, b: float) -> float:
    if a < 0 and not b.is_integer():
        raise _domain(
            f"cannot raise a negative number ({a!r}) to a non-integer power ({b!r}); the result is not real. "
            "Use an integer exponent, or nroot for odd roots of negatives."
        )
    if a == 0 and b < 0:
        raise _domain(f"0 raised to a negative power ({b!r}) is a division by zero. Use a non-zero base.")
    return math.pow(a, b)


def _log(a: float, b: float) -> float:
    if a <= 0:
        raise _domain(f"log is defined only for values a > 0; got a = {a!r}. Pass a positive value.")
    if b <= 0 or b == 1:
        raise _domain(f"invalid logarithm base b = {b!r}: the base must be > 0 and != 1 (e.g. 2, 10, or e).")
    return math.log(a) / math.log(b)


def _nroot(a: float, b: float) -> float:
    if b == 0:
        raise _domain("the 0th root is undefined; pass a non-zero root index b (2 = square root, 3 = cube root).")
    if a < 0:
        if not b.is_integer():
            raise _domain(
                f"cannot take a non-integer root ({b!r}) of a negative number ({a!r}); use an odd integer index."
            )
        if int(b) % 2 == 0:
            raise _domain(
                f"cannot take an even root ({b!r}) of a negative number ({a!r}); "
                "even roots need a >= 0 (use abs first), odd roots accept negatives."
            )
        return -_positive_root(-a, b)
    return _positive_root(a, b)


def _positive_root(a: float, b: float) -> float:
    root = math.pow(a, 1.0 / b)
    if b.is_integer() and abs(b) <= 64:  # snap 27**(1/3) = 3.0000000000000004 to 3 when it is exact
        candidate = float(round(root))
        try:
            if candidate != 0 and math.pow(candidate, b) == a:
                return candidate
        except OverflowError:
            pass
    return root


BINARY: dict[str, Callable[[float, float], float]] = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": _divide,
    "modulo": _modulo,
    "pow": _pow,
    "log": _log,
    "min": min,
    "max": max,
    "atan2": math.atan2,
    "nroot": _nroot,
}


def _bounded(description: str, compute: Callable[[], float]) -> Outcome:
    try:
        result = compute()
    except OverflowError:
        raise limit_exceeded(
            f"{description} overflows: the result exceeds MAX_VALUE ({MAX_VALUE:g}). Use smaller inputs."
        ) from None
    except (ValueError, ZeroDivisionError) as exc:  # a domain the checks above did not anticipate
        raise _domain(f"{description} is undefined ({exc}); check the inputs against the operation's domain.") from None
    if math.isnan(result):
        raise _domain(f"{description} is not a real number (NaN); check the inputs against the operation's domain.")
    if math.isinf(result) or abs(result) > MAX_VALUE:
        raise limit_exceeded(
            f"{description} = {result!r} exceeds MAX_VALUE ({MAX_VALUE:g}) in magnitude. Use smaller inputs."
        )
    if result != 0 and abs(result) < MIN_POSITIVE:
        return Outcome(
            0.0, f"the exact result is smaller in magnitude than MIN_POSITIVE ({MIN_POSITIVE:g}); reported as 0"
        )
    return Outcome(result + 0.0)  # normalise -0.0 to 0.0


def unary(operation: str, value: float) -> Outcome:
    """Apply one of the seed's unary operations to a finite value (radians for trigonometry)."""
    function, value = UNARY[operation], float(value)
    return _bounded(f"{operation}({format_number(value)})", lambda: function(value))


def binary(operation: str, a: float, b: float) -> Outcome:
    """Apply one of the seed's binary operations to two finite values."""
    function, a, b = BINARY[operation], float(a), float(b)
    return _bounded(f"{operation}({format_number(a)}, {format_number(b)})", lambda: function(a, b))


def constant(name: str) -> tuple[float, str]:
    """The value and description of one of the seed's constants."""
    return CONSTANTS[name]


def format_number(x: float) -> str:
    """Short text form: integers without '.0' (below 1e16), other values as Python's shortest repr."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)
