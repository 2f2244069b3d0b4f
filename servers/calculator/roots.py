"""Real roots of one equation in one unknown, found numerically (for calculator_solve, where sympy finds no closed
form). Runs in the calculator's worker, like `symbolic`, which imports it.

f = lhs - rhs is sampled at ROOT_SAMPLES + 1 equally spaced points of the interval with numpy: the sympy tree is
walked once into numpy functions (no code is generated or evaluated; gamma, factorial, binomial and erf go point by
point through mpmath, any other node without a numpy twin through sympy's evalf). The candidates are the sign
changes of f (bisected down to adjacent floats, all at once) and the local minima of |f| that come close to 0
(roots of even multiplicity, where f keeps its sign: zoomed in). Each is then polished by Newton's method on f/f'
(quadratic at multiple roots too) at 30 digits with sympy, and kept only when it converged and sympy, substituting
it back, finds |f| negligible beside the size of the terms it is made of: a pole or a jump, where f changes sign too,
is refused there, and so is a tail where f only tends to 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import sympy

from mcp_sections.servers.calculator.limits import MAX_NUMERIC_ROOTS, ROOT_SAMPLES

DIGITS = 30  # of the polishing and of the check
TOLERANCE = sympy.Float("1e-10")  # |f(root)| relative to the size of f's terms there
NEWTON_STEPS = 12
BISECTIONS = 80  # a grid step / 2**80: adjacent floats, or 1e-24 of a step near 0 (where Newton's method goes on)
ZOOMS = 14  # each narrows a minimum's window by (ZOOM_POINTS - 1) / 2
ZOOM_POINTS = 41
TINY = sympy.Float("1e-25")  # a Newton step this small (relative) has converged; a root this close to 0 is 0
NEAR_ZERO = 1e-6  # a minimum of |f| is a candidate when under this fraction of |f| one step away

Array = Any  # a numpy array (complex values at real points)


class _OutOfTime(Exception):
    pass


@dataclass
class Roots:
    """The roots found (ascending, each to DIGITS digits) and why the search may have missed some."""

    roots: list[Any] = field(default_factory=list)
    more: int = 0  # roots found beyond MAX_NUMERIC_ROOTS, left out
    stopped: bool = False  # the time ran out before every candidate was checked


_UFUNCS: dict[Any, Callable[[Array], Array]] = {
    sympy.sin: np.sin,
    sympy.cos: np.cos,
    sympy.tan: np.tan,
    sympy.asin: np.arcsin,
    sympy.acos: np.arccos,
    sympy.atan: np.arctan,
    sympy.sinh: np.sinh,
    sympy.cosh: np.cosh,
    sympy.tanh: np.tanh,
    sympy.asinh: np.arcsinh,
    sympy.acosh: np.arccosh,
    sympy.atanh: np.arctanh,
    sympy.exp: np.exp,
    sympy.log: np.log,
    sympy.Abs: np.abs,
    sympy.conjugate: np.conj,
    sympy.re: np.real,
    sympy.im: np.imag,
    sympy.arg: np.angle,
    sympy.cot: lambda z: 1 / np.tan(z),
    sympy.sec: lambda z: 1 / np.cos(z),
    sympy.csc: lambda z: 1 / np.sin(z),
    sympy.acot: lambda z: np.arctan(1 / z),
}
_MPMATH: dict[Any, Callable[..., Any]] = {
    sympy.gamma: mpmath.gamma,
    sympy.factorial: mpmath.factorial,
    sympy.binomial: mpmath.binomial,
    sympy.erf: mpmath.erf,
}
_REAL_UFUNCS: dict[Any, Callable[..., Array]] = {  # defined here for real arguments only (NaN elsewhere)
    sympy.floor: np.floor,
    sympy.ceiling: np.ceil,
    sympy.sign: np.sign,
    sympy.atan2: np.arctan2,
    sympy.Mod: np.mod,
    sympy.Min: lambda *values: np.minimum.reduce(values),
    sympy.Max: lambda *values: np.maximum.reduce(values),
}


def _real_part(values: Array) -> Array:
    """The real values as floats; NaN where a value is not finite or not real."""
    real, imaginary = values.real, values.imag
    keep = np.isfinite(values) & (np.abs(imaginary) <= 1e-12 * np.maximum(1.0, np.abs(real)))
    return np.where(keep, real, np.nan)


class _Numeric:
    """f as a numpy function of real points (complex128 results), built by walking the sympy tree."""

    def __init__(self, expression: Any, unknown: Any, deadline: float) -> None:
        self.unknown = unknown
        self.deadline = deadline
        self.function = self.compile(expression)

    def __call__(self, points: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(self.function(np.asarray(points, dtype=complex)), dtype=complex)

    def compile(self, node: Any) -> Callable[[Array], Array]:
        if node == self.unknown:
            return lambda points: points
        if not node.has(self.unknown):
            constant = _complex(node)
            return lambda points: np.full(points.shape, constant)
        parts = [self.compile(argument) for argument in node.args]
        if node.is_Add:
            return lambda points: sum(part(points) for part in parts)
        if node.is_Mul:
            return lambda points: np.prod([part(points) for part in parts], axis=0)
        if node.is_Pow:
            base, exponent = parts
            return lambda points: np.power(base(points), exponent(points))
        if node.func in _UFUNCS and len(parts) == 1:
            ufunc, (inner,) = _UFUNCS[node.func], parts
            return lambda points: ufunc(inner(points))
        if node.func in _REAL_UFUNCS:
            real = _REAL_UFUNCS[node.func]
            return lambda points: real(*(_real_part(part(points)) for part in parts)).astype(complex)
        return self.pointwise(node)

    def pointwise(self, node: Any) -> Callable[[Array], Array]:
        """A node numpy has no twin for: mpmath's function at each point (gamma, factorial, binomial, erf), or
        sympy's evaluation of the node (gcd, lcm...)."""
        function = _MPMATH.get(node.func)
        if function is not None:
            parts = [self.compile(argument) for argument in node.args]
            return lambda points: self.each(lambda *values: function(*values), *(part(points) for part in parts))
        return lambda points: self.each(lambda value: node.evalf(17, subs={self.unknown: _number(value)}), points)

    def each(self, function: Callable[..., Any], *arrays: Array) -> Array:
        """function(*values) as a complex at each point (NaN where it fails: a pole, a value it cannot take)."""
        values = np.empty(arrays[0].shape, dtype=complex)
        for index in np.ndindex(values.shape):
            if time.monotonic() > self.deadline:
                raise _OutOfTime
            arguments = [_plain(array[index]) for array in arrays]
            try:
                values[index] = complex(function(*arguments))
            except (ArithmeticError, TypeError, ValueError):
                values[index] = complex("nan")
        return values


def _complex(value: Any) -> complex:
    try:
        return complex(value.evalf(17))
    except (TypeError, ValueError, OverflowError):
        return complex("nan")


def _plain(value: complex) -> complex | float:
    """A point as mpmath and sympy take it: a float when it is real."""
    value = complex(value)
    return value.real if value.imag == 0 else value


def _number(value: complex | float) -> Any:
    if isinstance(value, complex):
        return sympy.Float(value.real) + sympy.I * sympy.Float(value.imag)
    return sympy.Float(value)


def real_roots(difference: Any, unknown: Any, low: float, high: float, deadline: float) -> Roots:
    """The verified real roots of `difference` = 0 in [low, high], found before `deadline` (time.monotonic())."""
    variable = sympy.Dummy(unknown.name, real=True)  # real points: Abs' is sign, not an expression in re and im
    expression = difference.xreplace({unknown: variable})
    found = Roots()
    try:
        f = _Numeric(expression, variable, deadline)
        grid = np.linspace(low, high, ROOT_SAMPLES + 1)
        values = _real_part(f(grid))
        candidates = _zeros(grid, values) + _sign_changes(f, grid, values) + _minima(f, grid, values)
    except _OutOfTime:
        found.stopped = True
        return found
    step = (high - low) / ROOT_SAMPLES
    checker = _Checker(expression, variable)
    roots: list[Any] = []
    for point in sorted(candidates):
        if time.monotonic() > deadline:
            found.stopped = True
            break
        root = checker.root_near(point, step)
        if root is not None and low - step * 1e-9 <= root <= high + step * 1e-9:
            roots.append(root)
    distinct = _distinct(roots)
    found.roots, found.more = distinct[:MAX_NUMERIC_ROOTS], max(0, len(distinct) - MAX_NUMERIC_ROOTS)
    return found


def _zeros(grid: Array, values: Array) -> list[float]:
    """The samples where f is 0: each alone, or the ends of a run (f underflowing to 0, or 0 on a whole stretch)."""
    zero = values == 0
    before = np.concatenate(([False], zero[:-1]))
    after = np.concatenate((zero[1:], [False]))
    return [float(point) for point in grid[zero & ~(before & after)]]


def _sign_changes(f: _Numeric, grid: Array, values: Array) -> list[float]:
    """Each sign change between two samples, bisected (all at once) down to adjacent floats."""
    signs = np.sign(values)
    change = np.flatnonzero(signs[:-1] * signs[1:] < 0)
    lows, highs, low_signs = grid[change], grid[change + 1], signs[change]
    for _ in range(BISECTIONS):
        middles = (lows + highs) / 2
        moving = np.isfinite(middles) & (middles != lows) & (middles != highs)
        if not moving.any():
            break
        middle_signs = np.sign(_real_part(f(middles)))
        lows = np.where(moving & (middle_signs == low_signs), middles, lows)
        highs = np.where(moving & (middle_signs == -low_signs), middles, highs)
        exact = moving & (middle_signs == 0)
        lows, highs = np.where(exact, middles, lows), np.where(exact, middles, highs)
        gap = moving & np.isnan(middle_signs)  # f is not real somewhere inside: no root claimed there
        lows, highs = np.where(gap, np.nan, lows), np.where(gap, np.nan, highs)
    middles = (lows + highs) / 2
    return [float(point) for point in middles[np.isfinite(middles)]]


def _minima(f: _Numeric, grid: Array, values: Array) -> list[float]:
    """Local minima of |f| between two samples of its sign (a root of even multiplicity touches 0 there) whose
    parabola through the three samples dips towards 0, zoomed in; those that come near 0."""
    size = np.where(np.isnan(values), np.inf, np.abs(values))
    inner = np.arange(1, len(grid) - 1)
    left, middle, right = size[inner - 1], size[inner], size[inner + 1]
    same_sign = np.sign(values[inner - 1]) * np.sign(values[inner + 1]) > 0
    dip = same_sign & (middle > 0) & (middle < left) & (middle <= right)
    with np.errstate(all="ignore"):
        vertex = middle - (right - left) ** 2 / (8 * (left - 2 * middle + right))
    dips = inner[dip & (vertex <= middle / 2)]
    if not len(dips):
        return []
    lows, highs = grid[dips - 1], grid[dips + 1]
    around = np.maximum(size[dips - 1], size[dips + 1])
    offsets = np.linspace(0.0, 1.0, ZOOM_POINTS)
    rows = np.arange(len(dips))
    best, smallest = grid[dips], size[dips]
    for _ in range(ZOOMS):
        points = lows[:, None] + (highs - lows)[:, None] * offsets[None, :]
        sizes = np.abs(_real_part(f(points)))
        index = np.argmin(np.where(np.isnan(sizes), np.inf, sizes), axis=1)
        best, smallest = points[rows, index], sizes[rows, index]
        width = (highs - lows) / (ZOOM_POINTS - 1)
        lows, highs = np.maximum(best - width, lows), np.minimum(best + width, highs)
    return [float(point) for point in best[smallest <= NEAR_ZERO * around]]


class _Checker:
    """Polishes a candidate at DIGITS digits and keeps it when f vanishes there, by sympy's own evaluation."""

    def __init__(self, expression: Any, variable: Any) -> None:
        self.expression = expression
        self.variable = variable
        self.first = expression.diff(variable)
        self.second = self.first.diff(variable)

    def at(self, expression: Any, point: Any) -> Any:
        """expression(point) at DIGITS digits, real when its imaginary part is negligible; None if not a number."""
        try:
            value = expression.evalf(DIGITS, subs={self.variable: point})
        except (ArithmeticError, TypeError, ValueError):
            return None
        if not value.is_number or value.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
            return None
        real, imaginary = value.as_real_imag()
        if abs(imaginary) > TOLERANCE * max(1, abs(real)):
            return value
        return real

    def root_near(self, start: float, step: float) -> Any:
        """The root polished from `start`, or None when f does not vanish there (a pole, a jump, a near miss)."""
        point, converged = self.polish(sympy.Float(start, DIGITS), step)
        if converged is False:
            return None
        if abs(point) <= TINY and self.expression.xreplace({self.variable: sympy.Integer(0)}).is_zero:
            return sympy.Float(0)  # evalf says 0.e-165, not 0
        return point if self.vanishes(point) else None

    def polish(self, start: Any, step: float) -> tuple[Any, bool | None]:
        """Newton's method on f/f' (x -= f f' / (f'^2 - f f'')) from `start`: (the point, True when it converged,
        False when it did not or left the grid step around `start`, None when f' or f'' cannot be evaluated)."""
        point = start
        for _ in range(NEWTON_STEPS):
            value, slope, curve = (self.at(e, point) for e in (self.expression, self.first, self.second))
            if value is not None and value == 0:
                return point, True
            if value is None or slope is None or curve is None or not (slope.is_real and curve.is_real):
                return point, None
            denominator = slope**2 - value * curve
            if denominator == 0 or not value.is_real:
                return point, None
            move = value * slope / denominator
            point -= move
            if abs(point - start) > step:
                return start, False
            if abs(move) <= TINY * max(1, abs(point)):
                return point, True
        return point, False

    def vanishes(self, point: Any) -> bool:
        value = self.at(self.expression, point)
        if value is None:
            return False
        if value == 0:
            return True
        size = self.size(self.expression, point)
        return size is not None and abs(value) <= TOLERANCE * size

    def size(self, expression: Any, point: Any) -> Any:
        """How large f's parts are at `point`: the largest term of a sum, the product of a product's factors' sizes,
        at least 1 for a part holding the unknown (sin(1/x) vanishes at its roots beside 1, not beside itself)."""
        if expression.is_Add:
            sizes = [self.size(term, point) for term in expression.args]
            return None if None in sizes else max(sizes)
        if expression.is_Mul:
            product = sympy.Integer(1)
            for factor in expression.args:
                size = self.size(factor, point)
                if size is None:
                    return None
                product *= size
            return product
        value = self.at(expression, point)
        if value is None:
            return None
        return max(abs(value), 1) if expression.has(self.variable) else abs(value)


def _distinct(roots: list[Any]) -> list[Any]:
    """Ascending, one of each cluster closer than 1e-10 (relative)."""
    kept: list[Any] = []
    for root in sorted(roots):
        if not kept or abs(root - kept[-1]) > sympy.Float("1e-10") * max(1, abs(root)):
            kept.append(root)
    return kept
