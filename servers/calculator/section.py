"""The calculator section: the seed's float operations plus exact maths with sympy in a worker process.

Importing this module imports neither sympy nor the worker-side modules; the sympy tools send their
work to `state.CalculatorState.worker` by name. Error codes: INVALID_INPUT (malformed call or refused
syntax), VALIDATION_FAILED (a value outside a domain, undefined result, incompatible units),
MAX_LIMIT_EXCEEDED (a bound: size, nesting, exponent, factorial, result size, MAX_VALUE 1e308),
TIMEOUT (the worker's wall-clock limit), DEPENDENCY_ERROR (sympy or numpy missing).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp_sections.servers.calculator import operations
from mcp_sections.servers.calculator.grammar import check_text, mentions_linear_algebra
from mcp_sections.servers.calculator.limits import (
    MAX_EIGEN_SIZE,
    MAX_EXPONENT,
    MAX_EXPRESSION_LENGTH,
    MAX_FACTORIAL,
    MAX_FLOAT_EXPRESSION_LENGTH,
    MAX_FLOAT_SIZE,
    MAX_MATRIX_EXPONENT,
    MAX_MATRIX_EXPRESSION_LENGTH,
    MAX_NODES,
    MAX_NUMERIC_SIZE,
    MAX_OUTPUT_CHARS,
    MAX_PLAIN_DIGITS,
    MAX_RESULT_DIGITS,
    MAX_SYMBOLIC_SIZE,
)
from mcp_sections.servers.calculator.models import (
    BinaryInput,
    BinaryInputs,
    BinaryResult,
    ConstantInput,
    ConstantResult,
    ConvertUnitsInput,
    ConvertUnitsResult,
    DifferentiateInput,
    DifferentiateResult,
    EvaluateInput,
    EvaluateResult,
    IntegrateInput,
    IntegrateResult,
    SimplifyInput,
    SimplifyResult,
    SolveInput,
    SolveResult,
    UnaryInput,
    UnaryResult,
)
from mcp_sections.servers.calculator.settings import CalculatorSettings
from mcp_sections.servers.calculator.state import CalculatorState, open_state, warm_up
from mcp_sections.servers.calculator.units import UNIT_DEFINITIONS_DOC, UNIT_NAMES_DOC
from mcp_sections.shared.framework.requirements import InstallExtra, Requirement, module
from mcp_sections.shared.framework.sections import Section
from mcp_sections.shared.framework.tools import READ_ONLY, tool

_DOMAIN_NOTE = (
    "Errors: VALIDATION_FAILED for a value outside the operation's domain, MAX_LIMIT_EXCEEDED when the result "
    "exceeds 1e308 in magnitude; invalid arguments give INVALID_INPUT."
)
_SYMBOLIC_NOTE = (
    "Runs in a separate worker process with a time limit (TIMEOUT: simplify or split the input, then retry). "
    "Errors: INVALID_INPUT for unsupported syntax (the message says how to rewrite it), VALIDATION_FAILED for "
    f"undefined maths (e.g. 1/0), MAX_LIMIT_EXCEEDED over the limits ({MAX_EXPRESSION_LENGTH} characters, "
    f"{MAX_NODES} terms, exponents up to {MAX_EXPONENT}, factorial/gamma up to {MAX_FACTORIAL}, exact results up "
    f"to {MAX_RESULT_DIGITS} digits)."
)

_UNITS_NOTE = f"Units: {UNIT_NAMES_DOC}. Definitions: {UNIT_DEFINITIONS_DOC}."
_LINEAR_NOTE = (
    "Linear algebra, exact: a matrix is a list of rows '[[1, 2], [3, 4]]' or Matrix([[1, 2], [3, 4]]); a vector "
    "'[1, 2, 3]' is a column. A*B and A@B are matrix products (sympy semantics: * of two matrices is the matrix "
    "product, of a number and a matrix it scales), A + B and A - B need equal shapes, A/c divides by a number, "
    f"A**k takes a whole k up to {MAX_MATRIX_EXPONENT} in magnitude (negative: powers of the inverse). Functions: "
    "det inv transpose rank trace rref nullspace eigenvals eigenvects dot cross, eye(n) zeros(n, m) ones(n, m) "
    "diag(a, b, ...), linsolve(A, b) (unknowns x1, x2, ...) or linsolve([x + y == 3, x - y == 1], [x, y]). An "
    "expression with linear algebra may hold variables: det([[a, b], [c, d]]) → a*d - b*c. Results: `kind`, and "
    "`matrix` + `shape` (exact entries as strings), `pivots` (rref, from 0), `vectors` (nullspace), `eigenvalues` "
    "(value, multiplicity, vectors for eigenvects) or `solutions` (linsolve: [] when there is none; unknowns left "
    "in a value are free). rref, nullspace, eigenvals, eigenvects and linsolve must be the whole expression. "
    "Eigenvalues without a closed form (roots of a factor of degree 5+ of the characteristic polynomial, numbers as "
    "entries) come as 15-digit numbers with exact=false; eigenvects then fails, saying so. "
    f"Limits: {MAX_NUMERIC_SIZE}×{MAX_NUMERIC_SIZE} when every entry is a number of at most {MAX_PLAIN_DIGITS} "
    f"digits, {MAX_SYMBOLIC_SIZE}×{MAX_SYMBOLIC_SIZE} otherwise, {MAX_EIGEN_SIZE}×{MAX_EIGEN_SIZE} for eigenvals and "
    f"eigenvects; {MAX_MATRIX_EXPRESSION_LENGTH} characters with an exact matrix literal; results up to "
    f"{MAX_OUTPUT_CHARS} characters. INVALID_INPUT for shapes that do not fit (non-square det, mismatched product), "
    "VALIDATION_FAILED for singular inverses (as a division by zero), saying why.\n"
    "Float64 (numpy): a matrix literal whose entries are all numbers with at least one decimal (0.5, 1e-3, 2.) is "
    "a float64 matrix, and so is everything computed from it (exact matrices of numbers meeting it are converted), "
    f"and eye/zeros/ones above {MAX_NUMERIC_SIZE} (e.g. eye(200) + ones(200)/100); "
    f"up to {MAX_FLOAT_SIZE}×{MAX_FLOAT_SIZE} and {MAX_FLOAT_EXPRESSION_LENGTH} characters. det inv rank trace "
    "transpose products A**k linsolve(A, b) (square A) eigenvals (numpy eigvalsh when symmetric, else eigvals; "
    "each listed with multiplicity 1) dot cross; rref, nullspace and eigenvects are exact only. rank by SVD with "
    "numpy's tolerance (largest singular value × max(rows, columns) × 2.2e-16). Results (rank aside) have "
    "float64=true, min(digits, 15) significant digits; a matrix over the output limit comes as its first rows "
    "(rows_shown) with its full shape. VALIDATION_FAILED for a matrix singular to working precision (condition "
    "number over 1/eps) in inv, A**-k or linsolve; MAX_LIMIT_EXCEEDED beyond the float64 range (about 1.8e308)."
)
_MATRIX_ADVICE = (
    "Exact linear algebra grows fast with the size and the kind of entries: use a smaller matrix, numbers instead "
    "of symbols or radicals as entries, or a cheaper function (det, rank or trace rather than eigenvects or inv)."
)


def _tool(
    name: str, title: str, note: str | None = None, examples: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`@tool` with READ_ONLY annotations and the docstring followed by a shared note."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        text = inspect.cleandoc(function.__doc__ or "") + (f"\n{note}" if note else "")
        return tool(name=name, title=title, annotations=READ_ONLY, description=text, examples=examples)(function)

    return decorate


# The float tools are `async def`: they finish in microseconds, so they skip the worker-thread hop.
@_tool(
    "calculator_unary",
    "Unary math operation",
    _DOMAIN_NOTE,
    examples=(
        "what's the cosine of 0.5 radians",
        "take the absolute value of -42.7",
        "round 3.14159 to the nearest integer",
        "hyperbolic tangent of 1.2",
        "e to the power of 3",
        "convert 90 degrees to radians",
    ),
)
async def calculator_unary(params: UnaryInput) -> UnaryResult:
    """Apply a one-argument float function: trigonometry (radians), hyperbolic, roots, exponentials,
    logarithms, rounding, abs/sign, angle conversion. Domains: tan is undefined at odd multiples of pi/2,
    asin/acos need a value in [-1, 1], sqrt needs value >= 0, ln/log10 need value > 0. round rounds half away
    from zero; sign(0) = 0. Results below 1e-308 in magnitude are reported as 0 with a note.
    Prefer this over mental arithmetic for precise values; for exact/symbolic results use calculator_evaluate.
    """
    outcome = operations.unary(params.operation, params.value)
    return UnaryResult(operation=params.operation, input=params.value, result=outcome.result, note=outcome.note)


@_tool(
    "calculator_binary",
    "Binary math operation",
    _DOMAIN_NOTE,
    examples=(
        "divide 144 by 12",
        "raise 1.07 to the 10th power",
        "log base 2 of 1024",
        "subtract one number from another, or multiply two numbers",
        "the remainder when 17 is divided by 5",
        "the larger of two numbers",
    ),
)
async def calculator_binary(params: BinaryInput) -> BinaryResult:
    """Apply a two-argument float operation to a and b: add, subtract, multiply, divide, modulo, pow, log
    (log of a in base b), min, max, atan2 (atan2(a, b) = angle of the point x=b, y=a), nroot (b-th root of a).
    Domains: divide/modulo need b != 0; pow with a < 0 needs an integer b; log needs a > 0, b > 0 and b != 1;
    nroot needs b != 0 and, when a < 0, an odd integer b. modulo keeps the sign of a: modulo(-7, 3) = -1.
    """
    outcome = operations.binary(params.operation, params.a, params.b)
    return BinaryResult(
        operation=params.operation,
        inputs=BinaryInputs(a=params.a, b=params.b),
        result=outcome.result,
        note=outcome.note,
    )


@_tool(
    "calculator_constant",
    "Mathematical constant",
    examples=(
        "I need pi to full float precision",
        "the numeric value of the square root of two",
        "tau, that is two pi",
        "the value of ln 2",
        "Euler's number e",
        "give me the value of the constant pi",
    ),
)
async def calculator_constant(params: ConstantInput) -> ConstantResult:
    """Return a mathematical constant as a float: pi, e, tau (2*pi), sqrt2, ln2, ln10."""
    value, description = operations.constant(params.name)
    return ConstantResult(constant=params.name, value=value, description=description)


@_tool(
    "calculator_evaluate",
    "Evaluate an expression (exact, or float64 for decimal matrices)",
    f"{_LINEAR_NOTE}\n{_SYMBOLIC_NOTE}",
    examples=(
        "work out (3 + 4i) * (2 - i)",
        "evaluate 100 factorial",
        "the determinant and inverse of a 3 by 3 matrix",
        "solve a system of linear equations",
        "compute 2 to the 100th power exactly",
        "calculate a long arithmetic expression with big integers",
    ),
)
def calculator_evaluate(params: EvaluateInput, state: CalculatorState) -> EvaluateResult:
    """Evaluate an arithmetic expression (no variables) exactly with sympy and numerically to `digits`
    significant digits, e.g. 'sqrt(8)' → 2*sqrt(2) ≈ 2.82842712474619, '2^100', '0.1 + 0.2' → 3/10,
    'sin(pi/6)' → 1/2, '100!'. ^ and ** are powers (2^3^2 = 2^9); n! and n!! bind tighter (2^3! = 2^6).
    Use it for long or exact computations, big integers, fractions and complex numbers (I); for one float
    operation calculator_unary/binary is faster.
    """
    check_text(params.expression, limit=MAX_FLOAT_EXPRESSION_LENGTH)
    advice = _MATRIX_ADVICE if mentions_linear_algebra(params.expression) else None
    data = state.call("evaluate", advice=advice, expression=params.expression, digits=params.digits)
    return EvaluateResult(**data)


@_tool(
    "calculator_simplify",
    "Simplify an expression",
    _SYMBOLIC_NOTE,
    examples=(
        "expand (a + b)^3",
        "tidy up this algebraic expression",
        "reduce sin(t)^2 + cos(t)^2",
        "cancel common factors in a fraction of polynomials",
        "factor the polynomial x^2 - 5x + 6",
        "simplify a trigonometric identity",
    ),
)
def calculator_simplify(params: SimplifyInput, state: CalculatorState) -> SimplifyResult:
    """Rewrite an expression with variables: simplify (default), expand, factor, cancel or trigsimp,
    e.g. '(x**2 - 1)/(x - 1)' → x + 1, 'sin(t)**2 + cos(t)**2' → 1, factor 'x**2 - 5*x + 6' → (x - 3)*(x - 2).
    """
    check_text(params.expression)
    return SimplifyResult(**state.call("simplify", expression=params.expression, method=params.method))


@_tool(
    "calculator_solve",
    "Solve equations",
    _SYMBOLIC_NOTE,
    examples=(
        "solve the quadratic x^2 - 5x + 6 = 0",
        "find the unknowns in these two equations",
        "for which y is 2^y = 64",
        "roots of a polynomial equation",
        "solve 3x + 7 = 22 for x",
        "what value of the variable makes this equation true",
    ),
)
def calculator_solve(params: SolveInput, state: CalculatorState) -> SolveResult:
    """Solve one equation or a small system exactly for the named variables, e.g. ['x^2 = 2'] →
    x = ±sqrt(2); ['x + y = 3', 'x - y = 1'] → x = 2, y = 1. Each solution comes with the numeric value of every
    unknown (`approximations`, same order; none for a value holding parameters). One equation in one unknown also
    returns its full solution set (`solution_set`: '{2, 3}', 'EmptySet', periodic solutions as a set such as
    ImageSet(Lambda(_n, 2*_n*pi), Integers)); where sympy has no closed form it is a ConditionSet, complete=false,
    with the particular solutions sympy finds. Then, or when sympy cannot solve it at all (solution_set null), an
    equation without parameters also has its real roots searched numerically in `interval`: e.g. 'cos(x) = x' →
    x ≈ 0.739085133215161. Those roots end `solutions` as 15-digit decimals, and
    `numeric_search` says how they were found, checked by substituting them back, and what may be missed (roots
    outside the interval, complex ones). Systems return the solutions sympy finds (solution_set null).
    domain='real' keeps only real solutions.
    """
    for text in params.equations:
        check_text(text, "equation")
    data = state.call(
        "solve",
        equations=params.equations,
        variables=params.variables,
        domain=params.domain,
        interval=params.interval,
        time_limit=state.settings.timeout_seconds,
    )
    return SolveResult(**data)


@_tool(
    "calculator_differentiate",
    "Differentiate",
    _SYMBOLIC_NOTE,
    examples=(
        "rate of change of t^3 - 2t",
        "take the derivative of sin(x)*exp(x)",
        "partial derivative with respect to y",
        "d/dx of a function",
        "second derivative of x^4",
        "differentiate an expression symbolically",
    ),
)
def calculator_differentiate(params: DifferentiateInput, state: CalculatorState) -> DifferentiateResult:
    """Differentiate an expression with respect to a variable, `order` times (1 to 10), e.g.
    'x**3*sin(x)' → x**2*(x*cos(x) + 3*sin(x)). Other variables are treated as constants.
    """
    check_text(params.expression)
    data = state.call(
        "differentiate",
        expression=params.expression,
        variable=params.variable,
        order=params.order,
        simplify=params.simplify,
    )
    return DifferentiateResult(**data)


@_tool(
    "calculator_integrate",
    "Integrate",
    _SYMBOLIC_NOTE,
    examples=(
        "integrate x^2 from 0 to 3",
        "indefinite integral of sin(x)*cos(x)",
        "the integral of a function over an interval",
        "find the primitive of cos(2x)",
        "area under the curve of exp(-x) from 0 to infinity",
        "antiderivative of 1/x",
    ),
)
def calculator_integrate(params: IntegrateInput, state: CalculatorState) -> IntegrateResult:
    """Integrate an expression: an antiderivative (no bounds; + C omitted in `result`) or a definite integral
    with `lower` and `upper` (expressions or numbers, oo for infinity), e.g. 'exp(-x**2)' from -oo to oo → sqrt(pi).
    A number bound is read exactly as written: 0.1 is 1/10.
    When no closed form exists, closed_form is false and a definite integral still gets its numeric value.
    A divergent definite integral gives oo, or VALIDATION_FAILED when it is undefined.
    """
    check_text(params.expression)
    for bound in (params.lower, params.upper):
        if bound is not None:
            check_text(bound, "bound")
    data = state.call(
        "integrate", expression=params.expression, variable=params.variable, lower=params.lower, upper=params.upper
    )
    return IntegrateResult(**data)


@_tool(
    "calculator_convert_units",
    "Convert units",
    _UNITS_NOTE,
    examples=(
        "how many pounds is 70 kg",
        "express 60 mph in km/h",
        "kilowatt-hours to joules",
        "convert a file size from MB to GiB",
        "20 degrees Celsius in Fahrenheit",
        "how many feet in 3 meters",
    ),
)
def calculator_convert_units(params: ConvertUnitsInput, state: CalculatorState) -> ConvertUnitsResult:
    """Convert a value between units of the same dimension, e.g. 100 'km/h' → 'm/s' = 27.78, 1 'kWh' → 'J',
    100 'degC' → 'degF' = 212. Units are names combined with *, / and ** (or ^): 'm/s^2', 'kg*m/s**2'.
    `exact` is the exact result (value read as written: 0.1 is 1/10), e.g. 250/9, and `decimal` its finite decimal
    when it has one (1 psi → bar: exact fraction, no decimal; 1 eV → J: 1.602176634e-19).
    Incompatible dimensions (e.g. 'm' to 's') give VALIDATION_FAILED naming both dimensions; unknown unit
    names give INVALID_INPUT listing the accepted ones. degC/degF convert only to other temperatures.
    """
    check_text(params.from_unit, "from_unit")
    check_text(params.to_unit, "to_unit")
    data = state.call("convert_units", value=params.value, from_unit=params.from_unit, to_unit=params.to_unit)
    return ConvertUnitsResult(**data)


SECTION = Section(
    id="calculator",
    requirements=(
        Requirement(
            "the exact engine (sympy, numpy)",
            module("sympy", "mpmath", "numpy"),
            InstallExtra("calculator"),
            optional=True,
            without="the float tools only (calculator_unary, calculator_binary, calculator_constant)",
        ),
    ),
    output_source="computation",
    trusted_output=True,
    name="Calculator",
    description="Float math operations and constants, plus exact evaluation, algebra, calculus and unit conversion.",
    tools=(
        calculator_unary,
        calculator_binary,
        calculator_constant,
        calculator_evaluate,
        calculator_simplify,
        calculator_solve,
        calculator_differentiate,
        calculator_integrate,
        calculator_convert_units,
    ),
    instructions=(
        "Use calculator_unary/binary/constant for single float operations (the seed's 23 unary and 11 binary "
        "operations), calculator_evaluate for whole expressions and exact results, calculator_simplify/solve/"
        "differentiate/integrate for algebra and calculus, calculator_convert_units for units. Trigonometry is in "
        "radians. Expressions are plain maths text (x**2 or x^2, sqrt(x), pi), never code."
    ),
    settings_model=CalculatorSettings,
    open_state=open_state,
    warm_up=warm_up,
    extra="calculator",
)
