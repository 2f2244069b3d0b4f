"""Untrusted maths text → sympy objects, without ever calling `eval`, `sympify`, `parse_expr` or `S()`.

`grammar` parses the text and checks its tree against an allow-list (the accepted language is described
there); this module builds the sympy object node by node (`sympy.Integer`, `sympy.Rational`, `sympy.Symbol`,
`sympy.sin(...)`), bounding every intermediate result. sympy is imported only when building.
"""

from __future__ import annotations

import ast
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_sections.servers.calculator.grammar import (
    MATRIX_FUNCTIONS,
    Grammar,
    check_text,
    is_equation_list,
    is_float_literal,
    literal_rows,
    parse,
    source_text,
)
from mcp_sections.servers.calculator.limits import (
    MAX_BINOMIAL,
    MAX_DECIMAL_EXPONENT,
    MAX_EXPONENT,
    MAX_FACTORIAL,
    MAX_RESULT_DIGITS,
    MAX_VARIABLES,
)
from mcp_sections.shared.ground.errors import invalid_input, limit_exceeded, validation_failed

# -- building sympy objects -----------------------------------------------------------------------------


class _Builder:
    def __init__(self, grammar: Grammar, source: str, what: str, symbols: dict[str, Any]) -> None:
        import sympy

        self.sp = sympy
        self.grammar = grammar
        self.source = source
        self.line_starts = [0, *(match.end() for match in re.finditer("\n", source))]
        self.what = what
        self.symbols = symbols
        self.la: Any = None
        if grammar.matrices:
            from mcp_sections.servers.calculator import matrices

            self.la = matrices

    def build(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return self.sp.Integer(node.value) if isinstance(node.value, int) else self.decimal(node)
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BinOp):
            return self.binary_node(node)
        if isinstance(node, ast.List):
            return self.matrix_literal(node)
        if isinstance(node, ast.Call):
            return self.call_node(node)
        raise invalid_input(f"unsupported construct {type(node).__name__} in the {self.what}.")  # pragma: no cover

    def unary(self, node: ast.UnaryOp) -> Any:
        operand = self.build(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        la = self.la
        return self.bounded(la.negate(operand, self.what) if la and la.is_value(operand) else -operand)

    def binary_node(self, node: ast.BinOp) -> Any:
        left, right = self.build(node.left), self.build(node.right)
        la = self.la
        if la and (la.is_value(left) or la.is_value(right) or isinstance(node.op, ast.MatMult)):
            return self.bounded(la.binary(node.op, left, right, self.what))
        return self.bounded(self.binary(node.op, left, right))

    def matrix_literal(self, node: ast.List) -> Any:
        rows = literal_rows(node)  # [1, 2]: a column
        if is_float_literal(node):
            return self.la.float_literal([[self.float_entry(entry) for entry in row] for row in rows], self.what)
        entries = [[self.scalar(self.build(entry), "a matrix entry") for entry in row] for row in rows]
        return self.bounded(self.la.literal(entries, self.what))

    def call_node(self, node: ast.Call) -> Any:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        if self.la and name in MATRIX_FUNCTIONS:
            if name == "linsolve" and is_equation_list(node.args[0]):
                return self.bounded(self.linsolve(node.args))
            arguments = [self.build(argument) for argument in node.args]
            return self.bounded(self.la.call(name, arguments, self.what))
        arguments = [self.scalar(self.build(argument), f"the argument of {name}") for argument in node.args]
        return self.bounded(self.call(name, arguments))

    def scalar(self, value: Any, role: str) -> Any:
        return self.la.scalar(value, role, self.what) if self.la else value

    def linsolve(self, arguments: list[ast.expr]) -> Any:
        """linsolve([lhs == rhs or expression, ...], [unknowns]) (the parser checked the shape of the call)."""
        listed, equations = arguments[0], []
        assert isinstance(listed, ast.List)
        for item in listed.elts:
            if isinstance(item, ast.Compare):
                left = self.scalar(self.build(item.left), "each side of an equation")
                right = self.scalar(self.build(item.comparators[0]), "each side of an equation")
                equations.append(left - right)
            else:
                equations.append(self.scalar(self.build(item), "an equation"))
        unknowns = None
        if len(arguments) == 2:
            assert isinstance(arguments[1], ast.List)
            unknowns = [self.name(item.id) for item in arguments[1].elts if isinstance(item, ast.Name)]
        return self.la.linsolve_equations(equations, unknowns, self.what)

    def decimal(self, node: ast.Constant) -> Any:
        numerator, denominator = self.checked_decimal(node).as_integer_ratio()
        return self.sp.Rational(numerator, denominator)

    def checked_decimal(self, node: ast.Constant) -> Decimal:
        """The decimal literal as written, once its magnitude is within 1e-308..1e308 (MAX_LIMIT_EXCEEDED)."""
        start = self.line_starts[node.lineno - 1] + node.col_offset
        end = self.line_starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
        segment = self.source[start:end] or repr(node.value)
        try:
            number = Decimal(segment.replace("_", ""))
        except InvalidOperation:  # pragma: no cover - ast accepted it as a float literal
            number = Decimal(repr(node.value))
        if number != 0 and not -MAX_DECIMAL_EXPONENT <= number.adjusted() <= MAX_DECIMAL_EXPONENT - 1:
            raise limit_exceeded(
                f"the number {segment[:40]} in the {self.what} is outside the accepted range "
                f"(magnitude between 1e-{MAX_DECIMAL_EXPONENT} and 1e{MAX_DECIMAL_EXPONENT}); "
                "write very large or small values as powers, e.g. 10**400 or 10**-400."
            )
        return number

    def float_entry(self, node: ast.expr) -> float:
        """An entry of a float64 literal (`is_float_literal`: c, -c, +c or a/b of number literals) as a float."""
        if isinstance(node, ast.UnaryOp):
            value = self.float_entry(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            numerator, denominator = self.float_entry(node.left), self.float_entry(node.right)
            if denominator == 0:
                raise validation_failed(f"division by zero in a matrix entry of the {self.what}.")
            return numerator / denominator
        assert isinstance(node, ast.Constant)
        if isinstance(node.value, float):
            return float(self.checked_decimal(node))
        assert isinstance(node.value, int)
        try:
            return float(node.value)
        except OverflowError:
            raise limit_exceeded(
                f"the integer entry {str(node.value)[:20]}... in the {self.what} is beyond the float64 range "
                "(about 1.8e308) of a matrix with decimal entries."
            ) from None

    def name(self, name: str) -> Any:
        sp = self.sp
        if self.grammar.names is not None:
            return self.grammar.names[name]()
        constants = {"pi": sp.pi, "e": sp.E, "E": sp.E, "I": sp.I, "oo": sp.oo, "inf": sp.oo}
        if name in constants:
            return constants[name]
        symbol = self.symbols.get(name)
        if symbol is None:
            if len(self.symbols) >= MAX_VARIABLES:
                raise limit_exceeded(f"the {self.what} uses more than {MAX_VARIABLES} different variables.")
            symbol = sp.Symbol(name, real=True) if self.grammar.real_variables else sp.Symbol(name)
            self.symbols[name] = symbol
        return symbol

    def binary(self, op: ast.operator, left: Any, right: Any) -> Any:
        sp = self.sp
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            if right.is_zero:
                raise validation_failed(f"division by zero in the {self.what}; the divisor evaluates to 0.")
            return left / right
        if isinstance(op, ast.Mod):
            if right.is_zero:
                raise validation_failed(f"modulo by zero in the {self.what}; the divisor evaluates to 0.")
            return sp.Mod(left, right)
        return self.power(left, right)

    def power(self, base: Any, exponent: Any) -> Any:
        sp = self.sp
        if exponent.is_number:
            magnitude = _magnitude(sp, exponent)
            if magnitude is not None and magnitude > MAX_EXPONENT:
                raise limit_exceeded(
                    f"an exponent in the {self.what} is about {_short(magnitude)}; exponents are limited to "
                    f"{MAX_EXPONENT} in magnitude (e.g. 9**9**9 and 10**10**10 are refused). Use logarithms instead."
                )
            if base.is_zero and exponent.is_extended_negative:
                raise validation_failed(f"0 raised to a negative power in the {self.what} is a division by zero.")
            if base.is_Rational and exponent.is_Rational and not base.is_zero:
                size = int(max(math.log10(abs(base.p)), math.log10(base.q)) * abs(float(exponent))) + 1
                if size > MAX_RESULT_DIGITS:
                    raise limit_exceeded(
                        f"a power in the {self.what} would have about {size} digits; exact results are limited to "
                        f"{MAX_RESULT_DIGITS} digits. Use logarithms, or smaller numbers."
                    )
        return sp.Pow(base, exponent)

    def call(self, name: str, args: list[Any]) -> Any:
        """An allowed function of numbers and expressions, with its bounds and undefined cases refused."""
        sp = self.sp
        checked = {
            "factorial": self.factorial,
            "factorial2": self.factorial,
            "gamma": self.factorial,
            "binomial": self.binomial,
            "log": self.logarithm,
            "ln": self.logarithm,
            "log10": self.logarithm,
            "log2": self.logarithm,
            "cbrt": self.cube_root,
            "root": self.root,
        }
        if name in checked:
            return checked[name](name, args)
        simple = {
            "abs": sp.Abs,
            "ceil": sp.ceiling,
            "ceiling": sp.ceiling,
            "atan2": sp.atan2,
            "min": sp.Min,
            "max": sp.Max,
        }
        function = simple.get(name) or getattr(sp, name)  # gcd and lcm have sympy's names too
        return function(*args)

    def factorial(self, name: str, args: list[Any]) -> Any:
        value = args[0]
        if value.is_number and (magnitude := _magnitude(self.sp, value)) is not None and magnitude > MAX_FACTORIAL:
            raise limit_exceeded(
                f"{name}({_short(magnitude)}) is too large; the argument is limited to {MAX_FACTORIAL} "
                "(use loggamma-style estimates such as Stirling's formula instead)."
            )
        if name == "factorial2":
            if value.is_number and not (value.is_integer and (value >= 0 or value.is_odd)):
                raise validation_failed(
                    "n!! (factorial2) is defined for whole numbers n >= 0 and negative odd ones; got "
                    f"{str(value)[:40]} in the {self.what}. For other values use gamma."
                )
            return self.sp.factorial2(value)
        return self.sp.factorial(value) if name == "factorial" else self.sp.gamma(value)

    def binomial(self, name: str, args: list[Any]) -> Any:
        for value in args:
            if value.is_number and (magnitude := _magnitude(self.sp, value)) is not None and magnitude > MAX_BINOMIAL:
                raise limit_exceeded(f"binomial arguments are limited to {MAX_BINOMIAL} in magnitude.")
        return self.sp.binomial(*args)

    def logarithm(self, name: str, args: list[Any]) -> Any:
        sp = self.sp
        value = args[0]
        if value.is_zero:
            raise validation_failed(f"{name}(0) is undefined (minus infinity); pass a non-zero value.")
        if name == "log" and len(args) == 2:
            base = args[1]
            if base.is_zero or (base - 1).is_zero:
                raise validation_failed("invalid logarithm base: the base must be > 0 and != 1.")
            return sp.log(value, base)
        fixed = {"log10": 10, "log2": 2}.get(name)
        return sp.log(value, fixed) if fixed else sp.log(value)

    def cube_root(self, name: str, args: list[Any]) -> Any:
        value = args[0]
        if value.is_number and value.is_extended_negative:
            return self.sp.real_root(value, 3)
        return self.sp.cbrt(value)

    def root(self, name: str, args: list[Any]) -> Any:
        value, index = args
        if index.is_zero:
            raise validation_failed("the 0th root is undefined; pass a non-zero root index.")
        return self.sp.root(value, index)

    def bounded(self, value: Any) -> Any:
        sp = self.sp
        if self.la and (isinstance(value, self.la.Final) or self.la.is_floats(value)):
            return value
        numbers = [value] if value.is_Rational else value.atoms(sp.Rational)
        for number in numbers:
            size = max(_digits(number.p), _digits(number.q))
            if size > MAX_RESULT_DIGITS:
                raise limit_exceeded(
                    f"an intermediate result in the {self.what} has about {size} digits; exact numbers are limited "
                    f"to {MAX_RESULT_DIGITS} digits. Use smaller numbers or logarithms."
                )
        return value


def _digits(number: int) -> int:
    return max(1, int(abs(number).bit_length() * 0.30103) + 1)


def _short(value: float) -> str:
    return f"{value:.6g}"


def _magnitude(sp: Any, value: Any) -> float | None:
    """|value| as a float for the bounds checks (inf when huge), None when it cannot be told cheaply."""
    if value.is_Integer or value.is_Rational:
        if abs(value.p).bit_length() - abs(value.q).bit_length() > 1000:
            return float("inf")
        return abs(float(value))
    try:
        approx = sp.Abs(value).evalf(8)
    except Exception:
        return None
    if approx.is_Number:
        if approx.is_infinite:
            return float("inf")
        try:
            return float(approx)
        except (TypeError, ValueError, OverflowError):
            return float("inf")
    return None


def build(
    text: str,
    grammar: Grammar,
    symbols: dict[str, Any] | None = None,
    *,
    what: str = "expression",
) -> Any:
    """Parse and build one expression; `symbols` (name → Symbol) is shared across calls when given."""
    tree = parse(text, grammar, what=what)
    builder = _Builder(
        grammar, source_text(text, what, grammar.max_length).strip(), what, {} if symbols is None else symbols
    )
    return builder.build(tree)


def parse_equation(text: str, grammar: Grammar, symbols: dict[str, Any], *, what: str = "equation") -> tuple[Any, Any]:
    """An equation 'lhs = rhs' or 'lhs == rhs' (or an expression, meaning '= 0') as (lhs, rhs)."""
    source = check_text(text, what)  # split as written; `build` rewrites each side's postfix factorials
    single = re.sub(r"==|<=|>=|!=", "", source)
    if "==" not in source and single.count("=") == 1:
        left, right = source.split("=")
        if not left.strip() or not right.strip():
            raise invalid_input(f"the {what} {text[:60]!r} needs an expression on both sides of '='.")
        return build(left, grammar, symbols, what=what), build(right, grammar, symbols, what=what)
    if single.count("=") > 1 or ("==" in source and single.count("=") > 0):
        raise invalid_input(f"the {what} may contain only one '='; pass each equation as its own array item.")
    tree = parse(text, grammar, equation=True, what=what)
    builder = _Builder(grammar, source_text(text, what).strip(), what, symbols)
    if isinstance(tree, ast.Compare):
        return builder.build(tree.left), builder.build(tree.comparators[0])
    return builder.build(tree), builder.sp.Integer(0)
