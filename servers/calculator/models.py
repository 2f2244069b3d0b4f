"""Inputs and outputs of the calculator tools."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, model_validator

from mcp_sections.servers.calculator.limits import (
    MAX_EXPRESSION_LENGTH,
    MAX_FLOAT_EXPRESSION_LENGTH,
    MAX_MATRIX_EXPRESSION_LENGTH,
    MAX_NAME_LENGTH,
    MAX_ROOT_BOUND,
    ROOT_INTERVAL,
)
from mcp_sections.servers.calculator.operations import (
    MAX_VALUE,
    BinaryOperation,
    ConstantName,
    UnaryOperation,
    format_number,
)
from mcp_sections.shared.framework.tools import ToolInput, ToolResult

MAX_DIGITS = 100
MAX_ORDER = 10
MAX_EQUATIONS = 6


def _number(description: str) -> Any:
    return Field(description=description, ge=-MAX_VALUE, le=MAX_VALUE, allow_inf_nan=False)


def _expression(description: str, limit: int = MAX_EXPRESSION_LENGTH) -> Any:
    if limit == MAX_EXPRESSION_LENGTH:
        description += f" At most {MAX_EXPRESSION_LENGTH} characters."
    return Field(description=description, json_schema_extra={"maxLength": limit})


MAX_BOUND_LENGTH = 200


def _number_as_text(value: Any) -> Any:
    """A JSON number given for an expression, as the text the grammar reads exactly: an integer as itself, a float as
    the shortest decimal that reads back as the same float (0.1 → '0.1', read as exactly 1/10, not the binary
    double's 3602879701896397/36028797018963968). Anything else is left to the string check."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number, or an expression: write 'oo' or '-oo' for infinity")
    text = str(value) if isinstance(value, int) else repr(value)
    if len(text) > MAX_BOUND_LENGTH:
        raise ValueError(
            f"must be a number of at most {MAX_BOUND_LENGTH} digits; write a larger one as a power: 10**300"
        )
    return text


_Bound = Annotated[str, Field(max_length=MAX_BOUND_LENGTH)]
ExpressionOrNumber = Annotated[_Bound, BeforeValidator(_number_as_text, json_schema_input_type=_Bound | int | float)]
"""An expression argument (at most MAX_BOUND_LENGTH characters) that may also be a JSON number, read as written."""


def _with_note(text: str, note: str | None) -> str:
    return f"{text} ({note})" if note else text


# -- the seed's float operations ---------------------------------------------------------------------------


class UnaryInput(ToolInput):
    operation: UnaryOperation = Field(
        description=(
            "sin cos tan asin acos atan (radians) | sinh cosh tanh | sqrt cbrt | exp (e^x) exp2 (2^x) | "
            "ln log10 | floor ceil round (half away from zero) trunc | abs sign | degrees (rad→deg) radians (deg→rad)."
        )
    )
    value: float = _number("Input value, finite, |value| <= 1e308. Angles are in radians.")


class UnaryResult(ToolResult):
    operation: str
    input: float
    result: float
    note: str | None = None

    def render_text(self) -> str:
        return _with_note(f"{self.operation}({format_number(self.input)}) = {format_number(self.result)}", self.note)


class BinaryInput(ToolInput):
    operation: BinaryOperation = Field(
        description=(
            "add subtract multiply divide | modulo (remainder with the sign of a: modulo(-7, 3) = -1) | "
            "pow (a^b) | log (logarithm of a in base b) | min max | atan2 (angle of the point (x=b, y=a), radians) | "
            "nroot (the b-th root of a)."
        )
    )
    a: float = _number("First operand, finite, |a| <= 1e308.")
    b: float = _number("Second operand, finite, |b| <= 1e308.")


class BinaryInputs(BaseModel):
    a: float
    b: float


class BinaryResult(ToolResult):
    operation: str
    inputs: BinaryInputs
    result: float
    note: str | None = None

    def render_text(self) -> str:
        a, b = format_number(self.inputs.a), format_number(self.inputs.b)
        return _with_note(f"{self.operation}({a}, {b}) = {format_number(self.result)}", self.note)


class ConstantInput(ToolInput):
    name: ConstantName = Field(
        description="pi (3.14159...), e (2.71828...), tau (2*pi), sqrt2 (√2), ln2 (ln 2), ln10 (ln 10)."
    )


class ConstantResult(ToolResult):
    constant: str
    value: float
    description: str

    def render_text(self) -> str:
        return f"{self.constant} = {self.value!r} ({self.description})"


# -- the sympy tools -----------------------------------------------------------------------------------------


class EvaluateInput(ToolInput):
    expression: str = _expression(
        "Arithmetic expression without variables, e.g. 'sqrt(2)*pi', '2^10 + 3/7', 'factorial(20)', "
        "'log(8, 2)'. Operators + - * / % ** (^ is power), postfix n! and n!! (double factorial; binding tightest: "
        "2^3! = 2^6, -3! = -6), functions such as sin cos tan asin acos atan sinh "
        "exp log (log(x) natural, log(x, b)) ln log10 log2 sqrt cbrt root(x, n) abs sign floor ceil factorial "
        "factorial2 binomial gamma gcd lcm min max re im; constants pi, e, I, oo. Decimals are exact (0.1 = 1/10), "
        "except as matrix entries: a matrix literal with a decimal entry is float64. "
        "Or linear algebra (see the tool description): matrices '[[1, 2], [3, 4]]', vectors '[1, 2, 3]', det(A), "
        f"linsolve(A, b)... At most {MAX_EXPRESSION_LENGTH} characters without a matrix literal, "
        f"{MAX_MATRIX_EXPRESSION_LENGTH} with an exact one, {MAX_FLOAT_EXPRESSION_LENGTH} with a float64 one.",
        MAX_FLOAT_EXPRESSION_LENGTH,
    )
    digits: int = Field(default=15, ge=1, le=MAX_DIGITS, description="Significant digits of the numeric value.")


class Eigenvalue(BaseModel):
    value: str = Field(description="The eigenvalue: exact, or to 15 digits when `exact` is false.")
    numeric: str = Field(description="The eigenvalue to `digits` significant digits (at most 15 when not exact).")
    multiplicity: int = Field(description="Algebraic multiplicity.")
    vectors: list[list[str]] | None = Field(
        default=None, description="eigenvects: a basis of the eigenspace, each vector as its entries."
    )
    exact: bool = Field(
        default=True,
        description="False for a root of an irreducible factor of degree 5 or more of the characteristic "
        "polynomial (numbers as entries): such roots have no closed form and come numerically.",
    )
    polynomial: str | None = Field(default=None, description="When not exact: the factor (in x) it is a root of.")


class EvaluateResult(ToolResult):
    expression: str
    exact: str = Field(
        description="Exact result (sympy form), e.g. '2*sqrt(2)' or '5/6'; a matrix as '[[1, 2], [3, 4]]' "
        "(a column vector as '[1, 2]')."
    )
    numeric: str = Field(description="The result to `digits` significant digits (the same shape as `exact`).")
    value: float | None = Field(description="The result as a float, or null if not a real number or beyond 1e308.")
    digits: int
    kind: Literal["number", "matrix", "rref", "nullspace", "eigenvals", "eigenvects", "linsolve"] = Field(
        default="number",
        description="What the result is: a number (or expression), a matrix, or what the named function gives.",
    )
    shape: list[int] | None = Field(default=None, description="[rows, columns] of a matrix or rref result.")
    matrix: list[list[str]] | None = Field(
        default=None, description="The exact entries of a matrix or rref result, row by row (a vector: n rows of 1)."
    )
    pivots: list[int] | None = Field(default=None, description="rref: the pivot columns, counted from 0.")
    vectors: list[list[str]] | None = Field(default=None, description="nullspace: the basis vectors' entries.")
    eigenvalues: list[Eigenvalue] | None = Field(default=None, description="eigenvals / eigenvects.")
    solutions: list[dict[str, str]] | None = Field(
        default=None,
        description="linsolve: [] when there is no solution, else one map unknown → value; a value holding unknowns "
        "is a family of solutions (those unknowns are free). linsolve(A, b) names the unknowns x1, x2, ...",
    )
    float64: bool = Field(
        default=False,
        description="True when computed in float64 with numpy (a matrix literal with a decimal entry): `exact` and "
        "`numeric` then both hold float64 values to min(digits, 15) significant digits.",
    )
    rows_shown: int | None = Field(
        default=None,
        description="A float64 matrix too large to show in full: how many of its first rows `matrix` and the "
        "text hold (`shape` is the whole).",
    )

    def render_text(self) -> str:
        parts = [self.expression]
        for text in (self.exact, self.numeric):
            if text != parts[-1]:
                parts.append(text)
        return " = ".join(parts)


class SimplifyInput(ToolInput):
    expression: str = _expression(
        "Expression with variables, e.g. '(x**2 - 1)/(x - 1)' or 'sin(t)**2 + cos(t)**2'. Same syntax as "
        "calculator_evaluate; variables are identifiers like x, y, theta, v0."
    )
    method: Literal["simplify", "expand", "factor", "cancel", "trigsimp"] = Field(
        default="simplify",
        description=(
            "simplify (general, may be slower) | expand (multiply out) | factor (into irreducible factors) | "
            "cancel (rational function p/q in lowest terms) | trigsimp (trigonometric identities)."
        ),
    )


class SimplifyResult(ToolResult):
    expression: str
    method: str
    result: str

    def render_text(self) -> str:
        return f"{self.method}: {self.expression} = {self.result}"


RootBound = Annotated[float, Field(ge=-MAX_ROOT_BOUND, le=MAX_ROOT_BOUND, allow_inf_nan=False)]


class SolveInput(ToolInput):
    equations: list[Annotated[str, Field(json_schema_extra={"maxLength": MAX_EXPRESSION_LENGTH})]] = Field(
        min_length=1,  # the length of each: MAX_LIMIT_EXCEEDED from check_text, saying what to do, as _expression
        max_length=MAX_EQUATIONS,
        description=(
            f"1 to {MAX_EQUATIONS} equations, each 'lhs = rhs' (or 'lhs == rhs', or an expression meaning '= 0'), "
            "e.g. ['x^2 - 5*x + 6 = 0'] or ['x + y = 3', 'x - y = 1']. Same syntax as calculator_evaluate, plus "
            f"variables. At most {MAX_EXPRESSION_LENGTH} characters each."
        ),
    )
    variables: list[Annotated[str, Field(max_length=MAX_NAME_LENGTH)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_EQUATIONS,
        description="The unknowns to solve for (others are parameters); default: every variable that appears. "
        f"Names of at most {MAX_NAME_LENGTH} characters.",
    )
    domain: Literal["complex", "real"] = Field(
        default="complex", description="complex: all solutions; real: variables are real, real solutions only."
    )
    interval: list[RootBound] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description=f"[low, high]: where real roots are searched numerically (|bounds| <= {MAX_ROOT_BOUND:g}), for "
        "one equation in one unknown when sympy cannot give every root in closed form (e.g. cos(x) = x). Default "
        f"[{ROOT_INTERVAL[0]:g}, {ROOT_INTERVAL[1]:g}]; not used otherwise.",
    )

    @model_validator(mode="after")
    def _interval_ascends(self) -> SolveInput:
        if self.interval is not None and not self.interval[0] < self.interval[1]:
            raise ValueError("interval must be [low, high] with low < high, e.g. [0, 10]")
        return self


class NumericSearch(BaseModel):
    method: str = Field(description="How the roots were searched, refined and checked.")
    interval: list[float] = Field(description="[low, high]: the real interval searched.")
    found: int = Field(description="How many of `solutions` (the last ones) were found numerically.")
    note: str = Field(description="What the search may have missed.")


class SolveResult(ToolResult):
    equations: list[str]
    variables: list[str]
    domain: str
    solutions: list[dict[str, str]] = Field(
        description="Each solution maps every unknown to its exact value (a root found numerically, see "
        "numeric_search: its 15-digit decimal value)."
    )
    approximations: list[dict[str, str]] = Field(
        description="Each solution's numeric values, in the same order: every unknown whose value is a number (an "
        "integer as itself, else 15 significant digits); a value holding parameters (e.g. -b/a) has none."
    )
    solution_set: str | None = Field(
        default=None,
        description="One equation in one unknown: its full solution set in sympy notation — finite ('{2, 3}', the "
        "same values as `solutions`), 'EmptySet', infinite (periodic: 'ImageSet(...)', `solutions` empty) or implicit "
        "('ConditionSet(...)': no closed form; `solutions` then holds the particular ones sympy found, perhaps not "
        "all, and the roots found numerically). null for a system, or when sympy cannot solve the equation.",
    )
    complete: bool = Field(description="False when sympy could only describe the solutions implicitly, or not at all.")
    numeric_search: NumericSearch | None = Field(
        default=None,
        description="One equation in one unknown, without parameters, that sympy could not solve completely: its "
        "real roots were searched numerically in `interval`; those sympy had not given end `solutions`.",
    )

    def render_text(self) -> str:
        numeric = self.numeric_search
        exact = len(self.solutions) - (numeric.found if numeric else 0)
        lines = []
        for index, (values, approx) in enumerate(zip(self.solutions, self.approximations, strict=False)):
            items = []
            for name, value in values.items():
                if index >= exact:
                    items.append(f"{name} ≈ {value}")
                    continue
                item = f"{name} = {value}"
                if approx.get(name) and approx[name] != value:
                    item += f" ≈ {approx[name]}"
                items.append(item)
            lines.append(", ".join(items) if items else "any value (identity)")
        if self.complete:
            return "; ".join(lines) if lines else self._nothing()
        if exact:
            reasons = [f"found by sympy, perhaps not all: {self.solution_set}"]
        else:
            reasons = ["sympy cannot solve it" if self.solution_set is None else f"sympy: {self.solution_set}"]
        if numeric:
            found = "found numerically" if numeric.found else "no other root found numerically" if exact else ""
            reasons.append(f"{found or 'no root found numerically'}: {numeric.note}")
        elif not lines:
            return self._nothing()
        return f"{'; '.join(lines) or 'no solution found'} ({'; '.join(reasons)})"

    def _nothing(self) -> str:
        if self.solution_set == "EmptySet":
            return f"no solution in the {self.domain} numbers"
        if self.solution_set is not None:
            return f"{', '.join(self.variables)} ∈ {self.solution_set}"
        return f"no solution found in the {self.domain} numbers"


class DifferentiateInput(ToolInput):
    expression: str = _expression(
        "Expression to differentiate, e.g. 'x**3*sin(x)'. Same syntax as calculator_simplify."
    )
    variable: str | None = Field(
        default=None,
        max_length=MAX_NAME_LENGTH,
        description="Variable to differentiate with respect to; may be omitted when the expression has one variable.",
    )
    order: int = Field(default=1, ge=1, le=MAX_ORDER, description=f"Order of the derivative, 1 to {MAX_ORDER}.")
    simplify: bool = Field(default=True, description="Simplify the derivative (slower on big expressions).")


class DifferentiateResult(ToolResult):
    expression: str
    variable: str
    order: int
    result: str

    def render_text(self) -> str:
        v = self.variable
        operator = f"d/d{v}" if self.order == 1 else f"d^{self.order}/d{v}^{self.order}"
        return f"{operator} [{self.expression}] = {self.result}"


class IntegrateInput(ToolInput):
    expression: str = _expression("Integrand, e.g. 'x**2*exp(x)'. Same syntax as calculator_simplify.")
    variable: str | None = Field(
        default=None,
        max_length=MAX_NAME_LENGTH,
        description="Integration variable; may be omitted when the expression has one variable.",
    )
    lower: ExpressionOrNumber | None = Field(
        default=None,
        description="Lower bound for a definite integral: an expression such as '0', 'pi/2' or '-oo', or a number "
        "(0, 0.5: read as written, exactly 1/2). With `upper`.",
    )
    upper: ExpressionOrNumber | None = Field(
        default=None,
        description="Upper bound for a definite integral, e.g. '1', 'oo' or 2.5. Omit both bounds for an "
        "antiderivative.",
    )


class IntegrateResult(ToolResult):
    expression: str
    variable: str
    lower: str | None
    upper: str | None
    result: str = Field(description="Antiderivative (without + C) or the value of the definite integral.")
    closed_form: bool = Field(description="False when sympy found no closed form (the result holds an Integral).")
    numeric: str | None = Field(description="Numeric value of a definite integral (15 significant digits).")
    value: float | None = Field(description="The definite integral as a float, when real and finite.")

    def render_text(self) -> str:
        if self.lower is None:
            text = f"∫ {self.expression} d{self.variable} = {self.result} + C"
        else:
            text = f"∫[{self.lower}, {self.upper}] {self.expression} d{self.variable} = {self.result}"
            if self.numeric and self.numeric != self.result:
                text += f" ≈ {self.numeric}"
        return text if self.closed_form else f"{text} (no closed form found)"


class ConvertUnitsInput(ToolInput):
    value: float = _number(
        "Quantity to convert, finite, |value| <= 1e308; read as the decimal it is written as (0.1 is exactly 1/10)."
    )
    from_unit: str = Field(
        max_length=200,
        description=(
            "Unit of `value`: a name or a product/quotient/power of names, e.g. 'km/h', 'm/s^2', 'kWh', 'lb', "
            "'degC'. Names: see the tool description."
        ),
    )
    to_unit: str = Field(max_length=200, description="Target unit, of the same dimension, e.g. 'm/s', 'J', 'kg'.")


class ConvertUnitsResult(ToolResult):
    value: float
    from_unit: str
    to_unit: str
    result: float
    exact: str | None = Field(
        description="The exact converted value: an integer, a fraction such as '250/9' (100 km/h in m/s), or with pi "
        "(angles, parsecs). null when the conversion goes through a measured constant (see `note`)."
    )
    decimal: str | None = Field(
        default=None,
        description="The exact value as a decimal when it has a finite one, e.g. '1609.344' (1 mi in m) or "
        "'1.602176634e-19' (1 eV in J); null when its expansion does not end (250/9), or it is not exact.",
    )
    note: str | None = Field(
        default=None, description="Why the result is not exact: the measured constant, its value and uncertainty."
    )

    def render_text(self) -> str:
        text = f"{format_number(self.value)} {self.from_unit} = {format_number(self.result)} {self.to_unit}"
        return f"{text} ({self.note})" if self.note else text
