"""The sympy tools' work. Runs inside the calculator's worker process (see `shared.workers`).

Each function takes plain arguments and returns a plain dict (strings, floats, lists) for the result
model; failures are `ToolFailure`s (they travel back to the server with their code). Inputs are checked
by `grammar` and built by `expressions` (never by sympify). This module imports sympy at import time: the server
refers to it only by name ("mcp_sections.servers.calculator.symbolic:evaluate"), so only the worker imports it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import sympy
from sympy.physics import units as u

from mcp_sections.servers.calculator import expressions as ex
from mcp_sections.servers.calculator import floats as fl
from mcp_sections.servers.calculator import grammar as gr
from mcp_sections.servers.calculator import limits, roots
from mcp_sections.servers.calculator import matrices as la
from mcp_sections.servers.calculator.units import MEASURED, TEMPERATURES, Measured, unit_names
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, limit_exceeded, validation_failed

MAX_UNKNOWNS = 6
MAX_ECHO_CHARS = 1000  # of the expression repeated in calculator_evaluate's result
MAX_VALUE = 1e308
SI_BASE = [u.meter, u.kilogram, u.second, u.ampere, u.kelvin, u.mole, u.candela, u.bit, u.radian]

EVALUATE = gr.Grammar(tool="calculator_evaluate", variables=False, matrices=True, operators=gr.LINEAR)
SIMPLIFY = gr.Grammar(tool="calculator_simplify", variables=True)
CALCULUS = gr.Grammar(tool="calculator_differentiate", variables=True)
BOUNDS = gr.Grammar(tool="calculator_integrate", variables=True)
SIMPLIFY_METHODS = {
    "simplify": sympy.simplify,
    "expand": sympy.expand,
    "factor": sympy.factor,
    "cancel": sympy.cancel,
    "trigsimp": sympy.trigsimp,
}

F = TypeVar("F", bound=Callable[..., Any])


def _guarded(function: F) -> F:
    """sympy's own exceptions become ToolFailures here, so the server never unpickles a sympy class."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (ToolFailure, MemoryError):
            raise
        except RecursionError:
            raise limit_exceeded(
                "the expression is too deeply nested for sympy; simplify it or split it into steps."
            ) from None
        except ValueError as exc:
            if "integer string conversion" in str(exc):
                raise limit_exceeded(
                    "the result holds an integer of more than 4300 digits; use smaller numbers or logarithms."
                ) from None
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"sympy failed (ValueError: {str(exc)[:200]}); check the input or try another formulation.",
            ) from None
        except NotImplementedError as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"sympy cannot do this ({str(exc)[:200] or 'not implemented'}); try another formulation or method.",
            ) from None
        except Exception as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"sympy failed ({type(exc).__name__}: {str(exc)[:200]}); check the input or try another formulation.",
            ) from None

    return run  # type: ignore[return-value]


def warm() -> bool:
    """Touch the parts of sympy the tools use, so the first real call is fast."""
    x = sympy.Symbol("x")
    sympy.integrate(x**2, x)
    sympy.solveset(x**2 - 1, x)
    unit_names()
    return True


def _text(value: Any, what: str = "result") -> str:
    return _bounded(sympy.sstr(value), what)


def _bounded(text: str, what: str = "result", hint: str = "Ask for something smaller.") -> str:
    if len(text) > limits.MAX_OUTPUT_CHARS:
        raise limit_exceeded(
            f"the {what} is {len(text)} characters long; the limit is {limits.MAX_OUTPUT_CHARS}. {hint}"
        )
    return text


def _undefined(value: Any, what: str) -> None:
    if value.has(sympy.nan):
        raise validation_failed(f"the {what} is undefined (NaN), e.g. 0/0 or oo - oo; check the input.")
    if value.has(sympy.zoo):
        raise validation_failed(
            f"the {what} is undefined (complex infinity), e.g. a division by zero; check the input."
        )


def _numeric(value: Any, digits: int = 15) -> str | None:
    """The value to `digits` significant digits, or None when it is not a number."""
    if not value.is_number:
        return None
    if value.is_Integer:
        return str(value)
    approx = value.evalf(digits)
    if not approx.is_number or approx.has(sympy.Symbol):
        return None
    return _text(approx, "numeric value")


def _float(value: Any) -> float | None:
    if not value.is_number or value.is_real is False:
        return None
    try:
        number = float(value.evalf(17))
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(number) or abs(number) > MAX_VALUE:
        return None
    return number


def _variable(name: str, symbols: dict[str, Any], real: bool = False) -> Any:
    if name in symbols:
        return symbols[name]
    if not gr.IDENTIFIER.match(name) or len(name) > limits.MAX_NAME_LENGTH:
        raise invalid_input(f"invalid variable name {name[:40]!r}: use letters, digits and '_' (e.g. x, theta, v0).")
    if name in gr.FUNCTIONS or name in gr.CONSTANT_NAMES:
        raise invalid_input(f"{name!r} is a function or constant name, not a variable; pick another name.")
    symbol = sympy.Symbol(name, real=True) if real else sympy.Symbol(name)
    symbols[name] = symbol
    return symbol


def _only_variable(expression: Any, variable: str | None, symbols: dict[str, Any], tool: str) -> Any:
    if variable is not None:
        return _variable(variable, symbols, real=False)
    free = sorted(expression.free_symbols, key=lambda symbol: symbol.name)
    if len(free) == 1:
        return free[0]
    if not free:
        return sympy.Symbol("x")
    names = ", ".join(symbol.name for symbol in free)
    raise invalid_input(
        f"the expression has several variables ({names}); pass `variable` to say which one {tool} uses."
    )


@_guarded
def evaluate(expression: str, digits: int = 15) -> dict[str, Any]:
    value = ex.build(expression, EVALUATE)
    echo = _echo(expression)
    if la.is_value(value):
        return {"expression": echo, "value": None, "digits": digits, **_linear(value, digits)}
    _undefined(value, "result")
    if value.has(sympy.Float):  # a scalar computed from a float64 matrix (det, trace, dot...)
        shown = fl.text(value, digits) if value.is_number else _text(value)
        return {
            "expression": echo,
            "exact": shown,
            "numeric": shown,
            "value": _float(value),
            "digits": digits,
            "float64": True,
        }
    return {
        "expression": echo,
        "exact": _text(value),
        "numeric": _numeric(value, digits) or _text(value),
        "value": _float(value),
        "digits": digits,
    }


def _echo(expression: str) -> str:
    """The expression as given, its middle cut when over MAX_ECHO_CHARS (a 200×200 literal is not repeated)."""
    text = expression.strip()
    if len(text) <= MAX_ECHO_CHARS:
        return text
    half = MAX_ECHO_CHARS // 2
    return f"{text[:half]} …({len(text) - 2 * half} characters)… {text[-half:]}"


_MATRIX_HINT = (
    "Exact matrix results grow fast: ask for a scalar (det, rank, trace), use a smaller matrix, or entries "
    "with fewer digits."
)


def _linear(value: Any, digits: int) -> dict[str, Any]:
    """The fields of a matrix or `matrices.Final` result (see EvaluateResult)."""
    if la.is_floats(value):
        return _float_matrix(value, digits)
    if isinstance(value, la.Final) and value.floats:

        def floating(entry: Any) -> str:
            return fl.text(entry, digits)

        shown = _bounded(_show(value, floating), "numeric result")
        fields = {"kind": value.function, "exact": shown, "numeric": shown, "float64": True}
        return fields | _structure(value, floating, floating)

    def exact(entry: Any) -> str:
        _undefined(entry, "result")
        return sympy.sstr(entry)

    def numeric(entry: Any) -> str:
        return _approximate(entry, digits)

    return {
        "kind": "matrix" if la.is_matrix(value) else value.function,
        "exact": _bounded(_show(value, exact), "exact result", _MATRIX_HINT),
        "numeric": _bounded(_show(value, numeric), "numeric result", f"{_MATRIX_HINT} Or ask for fewer digits."),
        **_structure(value, exact, numeric),
    }


def _float_matrix(matrix: Any, digits: int) -> dict[str, Any]:
    """A float64 matrix to min(digits, 15) digits; over MAX_OUTPUT_CHARS, its first rows (`rows_shown`)."""
    rows, text = fl.matrix_rows(matrix, digits, limits.MAX_OUTPUT_CHARS - 300)
    fields: dict[str, Any] = {"kind": "matrix", "shape": list(matrix.shape), "matrix": rows, "float64": True}
    if len(rows) < matrix.rows:
        text += (
            f" …{matrix.rows - len(rows)} more rows: a {matrix.rows}×{matrix.cols} float64 matrix is too large to "
            f"show in full ({limits.MAX_OUTPUT_CHARS} characters); the first {len(rows)} rows are shown. Ask for what "
            "you need: det, trace, a product with a vector (A*v), or fewer digits."
        )
        fields["rows_shown"] = len(rows)
    return {**fields, "exact": text, "numeric": text}


def _show(value: Any, entry: Callable[[Any], str]) -> str:
    """The text of a linear-algebra result, each scalar written by `entry`."""
    if la.is_matrix(value):
        return _matrix_text(value, entry)
    if value.function == "rref":
        return f"({_matrix_text(value.matrix, entry)}, {value.pivots})"
    if value.function == "nullspace":
        return _listing(_vector_text(vector, entry) for vector in value.vectors)
    if value.function == "eigenvals":
        return "{" + ", ".join(f"{entry(eigenvalue)}: {count}" for eigenvalue, count, _, _ in value.eigen) + "}"
    if value.function == "eigenvects":
        return _listing(
            f"({entry(eigenvalue)}, {count}, {_listing(_vector_text(vector, entry) for vector in basis or ())})"
            for eigenvalue, count, basis, _ in value.eigen
        )
    if value.solution is None:
        return "EmptySet"
    pairs = zip(value.unknowns, value.solution, strict=True)
    return "{" + ", ".join(f"{unknown.name}: {entry(solution)}" for unknown, solution in pairs) + "}"


def _structure(value: Any, exact: Callable[[Any], str], numeric: Callable[[Any], str]) -> dict[str, Any]:
    """The structured fields of a linear-algebra result: shape, matrix, pivots, vectors, eigenvalues, solutions."""

    def rows(matrix: Any) -> list[list[str]]:
        return [[exact(entry) for entry in matrix.row(index)] for index in range(matrix.rows)]

    def entries(vector: Any) -> list[str]:
        return [exact(entry) for entry in vector]

    if la.is_matrix(value):
        return {"shape": list(value.shape), "matrix": rows(value)}
    if value.function == "rref":
        return {"shape": list(value.matrix.shape), "matrix": rows(value.matrix), "pivots": list(value.pivots)}
    if value.function == "nullspace":
        return {"vectors": [entries(vector) for vector in value.vectors]}
    if value.function in ("eigenvals", "eigenvects"):
        eigenvalues = [
            {
                "value": exact(eigenvalue),
                "numeric": numeric(eigenvalue),
                "multiplicity": count,
                "vectors": None if basis is None else [entries(vector) for vector in basis],
                "exact": polynomial is None and not value.floats,
                "polynomial": None if polynomial is None else sympy.sstr(polynomial),
            }
            for eigenvalue, count, basis, polynomial in value.eigen
        ]
        return {"eigenvalues": eigenvalues}
    if value.solution is None:
        return {"solutions": []}
    return {"solutions": [{u.name: exact(v) for u, v in zip(value.unknowns, value.solution, strict=True)}]}


def _approximate(value: Any, digits: int) -> str:
    """`_numeric` without a real or imaginary part below the digits shown: the real roots of a cubic come back
    from evalf as e.g. 0.198246863397010 + 0.e-19*I."""
    if value.is_number and not value.is_Rational:
        if value.has(sympy.Float):  # a numeric eigenvalue: 15 digits are known
            digits = min(digits, 15)
        approx = value.evalf(digits)
        real, imaginary = approx.as_real_imag()
        if real.is_Number and imaginary.is_Number:
            tiny = max(abs(real), abs(imaginary)) * sympy.Rational(1, 10**digits)
            if abs(imaginary) <= tiny:
                approx = real
            elif abs(real) <= tiny:
                approx = imaginary * sympy.I
            return _text(approx, "numeric value")
    return _numeric(value, digits) or sympy.sstr(value)


def _matrix_text(matrix: Any, entry: Any) -> str:
    """[[a, b], [c, d]]; a column vector as [a, b, c] (both are valid calculator_evaluate input)."""
    if matrix.cols == 1:
        return _listing(entry(value) for value in matrix)
    return _listing(_listing(entry(value) for value in matrix.row(index)) for index in range(matrix.rows))


def _vector_text(vector: Any, entry: Any) -> str:
    return f"Matrix({_listing(entry(value) for value in vector)})"


def _listing(items: Any) -> str:
    return "[" + ", ".join(items) + "]"


@_guarded
def simplify(expression: str, method: str = "simplify") -> dict[str, Any]:
    value = ex.build(expression, SIMPLIFY)
    result = SIMPLIFY_METHODS[method](value)
    _undefined(result, "result")
    return {"expression": expression.strip(), "method": method, "result": _text(result)}


def _solve_one(difference: Any, unknown: Any, real: bool) -> tuple[list[dict[Any, Any]], str, bool]:
    """One equation in one unknown: (solutions as rows, the solution set, complete). The set is solveset's: finite
    ({2, 3}: each element a row), empty, infinite (periodic: an ImageSet, no rows) or implicit (a ConditionSet, when
    solveset finds no closed form: the rows are then the particular solutions sympy.solve finds, perhaps not all);
    solveset raises NotImplementedError, or ValueError (e.g. 'Absolute values cannot be inverted in the complex
    domain'), where it cannot handle the equation at all."""
    found = sympy.solveset(difference, unknown, domain=sympy.S.Reals if real else sympy.S.Complexes)
    if isinstance(found, sympy.FiniteSet):
        listed = [{unknown: value} for value in sorted(found, key=sympy.default_sort_key)]
        text = sympy.sstr(found)
        if len(text) > limits.MAX_OUTPUT_CHARS:  # each value is in `solutions`, bounded one by one
            text = f"the {len(listed)} values of solutions (as a set, over {limits.MAX_OUTPUT_CHARS} characters)"
        return listed, text, True
    rows: list[dict[Any, Any]] = []
    if found.has(sympy.ConditionSet):
        with contextlib.suppress(NotImplementedError, ValueError, TypeError):
            rows = [row for row in sympy.solve(difference, unknown, dict=True) if not real or row[unknown].is_real]
    return rows, _text(found, "solution set"), not found.has(sympy.ConditionSet)


def _one_equation(
    difference: Any, unknown: Any, real: bool, interval: tuple[float, float], deadline: float
) -> tuple[list[dict[Any, Any]], str | None, bool, dict[str, Any] | None]:
    """`_solve_one`, then, when it is not complete and the equation has no parameters, the real roots found
    numerically in `interval` (also when solveset cannot handle the equation: the solution set is then None)."""
    searchable = difference.free_symbols == {unknown}
    solution_set: str | None
    try:
        rows, solution_set, complete = _solve_one(difference, unknown, real)
    except (NotImplementedError, ValueError) as exc:
        if not searchable or "integer string conversion" in str(exc):
            raise
        rows, solution_set, complete = [], None, False
    if complete or not searchable:
        return rows, solution_set, complete, None
    numeric, search = _numeric_roots(difference, unknown, rows, interval, deadline)
    return rows + numeric, solution_set, False, search


def _numeric_roots(
    difference: Any, unknown: Any, rows: list[dict[Any, Any]], interval: tuple[float, float], deadline: float
) -> tuple[list[dict[Any, Any]], dict[str, Any]]:
    """The real roots `roots` finds in `interval` that are not among sympy's `rows` (as rows of 15-digit values),
    and the `numeric_search` field that says how they were found and what they leave out."""
    low, high = interval
    found = roots.real_roots(difference, unknown, low, high, deadline)
    known = [number for row in rows if (number := _float(row[unknown])) is not None]
    new = [
        {unknown: sympy.Integer(0) if root == 0 else root.evalf(15)}
        for root in found.roots
        if not any(abs(float(root) - number) <= 1e-9 * max(1.0, abs(number)) for number in known)
    ]
    step = (high - low) / limits.ROOT_SAMPLES
    note = (
        f"only real roots in [{low:g}, {high:g}] were searched (15 significant digits); others may lie outside it "
        f"(pass `interval` to search elsewhere), closer than one step ({step:.3g}) to another root or to a pole, or "
        "be complex (not searched)."
    )
    if found.more:
        note += (
            f" {found.more} more roots were found beyond the first {limits.MAX_NUMERIC_ROOTS} from the low end: "
            "narrow `interval`."
        )
    if found.stopped:
        note += " The time limit ended the search before every candidate was checked: narrow `interval`."
    method = (
        f"f = lhs - rhs sampled at {limits.ROOT_SAMPLES + 1} equally spaced points; each sign change (bisected) and "
        "each minimum of |f| near 0 refined by Newton's method at 30 digits, and kept only when substituting it "
        "back gives f = 0 to 10 digits beside the size of f's terms (poles and jumps are refused)"
    )
    return new, {"method": method, "interval": [low, high], "found": len(new), "note": note}


def _approximations(row: dict[Any, Any]) -> dict[str, str]:
    """Each unknown of a solution → its numeric value (an integer as itself); none for a value holding parameters."""
    return {symbol.name: _approximate(value, 15) for symbol, value in row.items() if value.is_number}


@_guarded
def solve(
    equations: list[str],
    variables: list[str] | None = None,
    domain: str = "complex",
    interval: list[float] | None = None,
    time_limit: float = 10.0,
) -> dict[str, Any]:
    """`time_limit`: the worker's, in seconds; a numeric search for roots stops at 80% of it."""
    deadline = time.monotonic() + 0.8 * time_limit
    real = domain == "real"
    grammar = gr.Grammar(tool="calculator_solve", variables=True, real_variables=real)
    symbols: dict[str, Any] = {}
    if variables:
        for name in variables:
            _variable(name, symbols, real=real)
    differences = []
    for index, text in enumerate(equations):
        left, right = ex.parse_equation(text, grammar, symbols, what=f"equation {index + 1}")
        difference = left - right
        _undefined(difference, f"equation {index + 1}")
        differences.append(difference)
    if variables:
        unknowns = [symbols[name] for name in variables]
    else:
        free = set().union(*(difference.free_symbols for difference in differences))
        unknowns = sorted(free, key=lambda symbol: symbol.name)
    if not unknowns:
        raise invalid_input("the equations contain no variable to solve for; include one, e.g. 'x**2 = 4'.")
    if len(unknowns) > MAX_UNKNOWNS:
        raise limit_exceeded(
            f"{len(unknowns)} unknowns ({', '.join(s.name for s in unknowns)}); at most {MAX_UNKNOWNS} can be solved "
            "for at once. Pass `variables` to choose which ones."
        )
    names = [symbol.name for symbol in unknowns]
    numeric_search = None
    if len(differences) == 1 and len(unknowns) == 1:
        bounds = (interval[0], interval[1]) if interval else limits.ROOT_INTERVAL
        one = _one_equation(differences[0], unknowns[0], real, bounds, deadline)
        rows, solution_set, complete, numeric_search = one
    else:
        rows, solution_set, complete = sympy.solve(differences, unknowns, dict=True), None, True
    solutions = [{symbol.name: _text(value, "solution") for symbol, value in row.items()} for row in rows]
    approximations = [_approximations(row) for row in rows]
    return {
        "equations": [text.strip() for text in equations],
        "variables": names,
        "domain": domain,
        "solutions": solutions,
        "approximations": approximations,
        "solution_set": solution_set,
        "complete": complete,
        "numeric_search": numeric_search,
    }


@_guarded
def differentiate(
    expression: str, variable: str | None = None, order: int = 1, simplify: bool = True
) -> dict[str, Any]:
    symbols: dict[str, Any] = {}
    value = ex.build(expression, CALCULUS, symbols)
    symbol = _only_variable(value, variable, symbols, "calculator_differentiate")
    result = sympy.diff(value, symbol, order)
    if simplify:
        result = sympy.simplify(result)
    _undefined(result, "derivative")
    return {
        "expression": expression.strip(),
        "variable": symbol.name,
        "order": order,
        "result": _text(result),
    }


@_guarded
def integrate(
    expression: str, variable: str | None = None, lower: str | None = None, upper: str | None = None
) -> dict[str, Any]:
    if (lower is None) != (upper is None):
        raise invalid_input("pass both `lower` and `upper` for a definite integral, or neither for an antiderivative.")
    symbols: dict[str, Any] = {}
    value = ex.build(expression, gr.Grammar(tool="calculator_integrate", variables=True), symbols)
    symbol = _only_variable(value, variable, symbols, "calculator_integrate")
    numeric: str | None = None
    result_value: Any = None
    if lower is None or upper is None:
        result = sympy.integrate(value, symbol)
        closed_form = not result.has(sympy.Integral)
    else:
        low = ex.build(lower, BOUNDS, symbols, what="lower bound")
        high = ex.build(upper, BOUNDS, symbols, what="upper bound")
        result = sympy.integrate(value, (symbol, low, high))
        closed_form = not result.has(sympy.Integral)
        _undefined(result, "definite integral (it may diverge)")
        result_value = result
        if result.is_number:
            # a fresh Integral evaluates numerically (mpmath quadrature) where integrate's leftover may not
            target = result if closed_form else sympy.Integral(value, (symbol, low, high))
            numeric = _numeric(target)
            if numeric is not None and "Integral" in numeric:
                numeric = None
            elif numeric is not None and not closed_form:
                result_value = target.evalf(17)
    _undefined(result, "integral")
    return {
        "expression": expression.strip(),
        "variable": symbol.name,
        "lower": None if lower is None else lower.strip(),
        "upper": None if upper is None else upper.strip(),
        "result": _text(result),
        "closed_form": closed_form,
        "numeric": numeric,
        "value": _float(result_value) if result_value is not None else None,
    }


def _temperature(value: float, source: str, target: str) -> dict[str, Any]:
    (sf, so), (tf, to) = (
        (sympy.Rational(*TEMPERATURES[source][0]), sympy.Rational(*TEMPERATURES[source][1])),
        (sympy.Rational(*TEMPERATURES[target][0]), sympy.Rational(*TEMPERATURES[target][1])),
    )
    kelvin = _exact(value) * sf + so
    result = (kelvin - to) / tf
    return _conversion(value, source, target, result)


def _exact(value: float) -> Any:
    """The value as the caller wrote it: the shortest decimal that reads back as this float (0.1 → 1/10, not
    3602879701896397/36028797018963968)."""
    numerator, denominator = Decimal(repr(value)).as_integer_ratio()
    return sympy.Rational(numerator, denominator)


def _decimal(value: Any) -> str | None:
    """An exact rational as the decimal it ends as ('1609.344', '1.602176634e-19'), None when its expansion does not
    end (250/9) or it is not rational (pi/180)."""
    if not value.is_Rational:
        return None
    numerator, denominator = int(value.p), int(value.q)
    twos, fives = (denominator & -denominator).bit_length() - 1, 0
    rest = denominator >> twos
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return None
    places = max(twos, fives)
    number = Decimal(numerator * 10**places // denominator).scaleb(-places).normalize()
    plain = format(number, "f")
    return _bounded(plain if len(plain) <= 24 else format(number, "e"), "exact decimal")


def _conversion(
    value: float, source: str, target: str, result: Any, measured: Measured | None = None
) -> dict[str, Any]:
    """The result fields; `measured`: the measured constant `result` went through (then not exact)."""
    number = _float(result)
    if number is None:
        raise limit_exceeded(f"the converted value exceeds MAX_VALUE ({MAX_VALUE:g}); use a larger target unit.")
    return {
        "value": value,
        "from_unit": source,
        "to_unit": target,
        "result": number,
        "exact": None if measured else _text(result),
        "decimal": None if measured else _decimal(result),
        "note": measured.note() if measured else None,
    }


@_guarded
def convert_units(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    source, target = from_unit.strip(), to_unit.strip()
    if source in TEMPERATURES and target in TEMPERATURES:
        return _temperature(value, source, target)
    grammar = gr.Grammar(tool="calculator_convert_units", variables=False, names=unit_names(), operators=gr.PRODUCTS)
    source_quantity = ex.build(source, grammar, what="from_unit")
    target_quantity = ex.build(target, grammar, what="to_unit")
    ratio = sympy.simplify(u.convert_to(source_quantity, SI_BASE) / u.convert_to(target_quantity, SI_BASE))
    constants = sorted(symbol.name for symbol in ratio.free_symbols if symbol.name in MEASURED)
    measured = MEASURED[constants[0]] if constants else None  # one measured unit so far: the dalton
    ratio = ratio.subs({sympy.Symbol(name, positive=True): sympy.Rational(MEASURED[name].value) for name in constants})
    if ratio.has(u.Quantity) or ratio.free_symbols or not ratio.is_number:
        from sympy.physics.units.systems.si import SI

        raise validation_failed(
            f"cannot convert {source!r} to {target!r}: their dimensions differ "
            f"({sympy.sstr(SI.get_dimensional_expr(source_quantity))} vs "
            f"{sympy.sstr(SI.get_dimensional_expr(target_quantity))}). Pick units of the same kind."
        )
    return _conversion(value, source, target, _exact(value) * ratio, measured)
