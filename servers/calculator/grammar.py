"""The maths language the calculator accepts, and its checks: untrusted text → a checked syntax tree (no sympy).

The text is parsed with Python's parser (`ast.parse(text, mode="eval")`, one parse at a time in the process:
`shared.text.python_syntax`) and the tree is checked against an allow-list;
`expressions` then builds the sympy object node by node. Nothing here imports sympy, so `check_text` and
`parse` are cheap and usable anywhere.

Accepted language:
- numbers: integers (`12`, `0x1F`), decimals (`2.5`, `1e-3`; made exact: `0.1` is 1/10);
- operators `+ - * / ** %` and unary `+ -`; `^` means power (every `^` is rewritten to `**` before
  parsing, so it has the precedence of `**`: `2^3+1` is 9 and `2^3^2` is 2^9). `%` is sympy's `Mod`;
- postfix `n!` (factorial) and `n!!` (double factorial), binding tighter than every other operator as
  mathematicians read them: `2^3!` is 2^6, `-3!` is -(3!), `(n+1)!` and `sqrt(4)!` apply to the whole
  group or call. `postfix_factorials` rewrites them as calls (`factorial(n)`, `factorial2(n)`) before
  parsing; `!=` stays "not equal" (refused as a comparison: write `n! = 120` with a space);
- calls of allow-listed functions (`FUNCTIONS`) with positional arguments only;
- constants `pi`, `e`/`E`, `I` (imaginary unit), `oo`/`inf` (infinity);
- variables (identifiers like `x`, `theta`, `v0`) only where the tool allows them;
- one equation `lhs = rhs` or `lhs == rhs` only through `parse_equation` (calculator_solve);
- where the grammar has `matrices` (calculator_evaluate): matrix literals `[[1, 2], [3, 4]]` (a list of
  rows), vectors `[1, 2, 3]` (a column), `@` and the functions of `MATRIX_FUNCTIONS`; equations
  `lhs == rhs` only as items of linsolve's list. An expression holding any of these may also hold
  variables (symbolic entries); `matrices.py` does the work.
Everything else (attributes, subscripts, strings, lambdas, comprehensions, keywords, names starting
with `_`, comparisons, boolean operators, non-ASCII text...) is refused with INVALID_INPUT naming the
construct. Bounds (length, AST size, nesting, literal size, exponents, factorials, intermediate
result size, matrix shapes) are enforced before the work is done and fail with MAX_LIMIT_EXCEEDED.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_sections.servers.calculator.limits import (
    MAX_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_FLOAT_EXPRESSION_LENGTH,
    MAX_FLOAT_NODES,
    MAX_FLOAT_SIZE,
    MAX_INTEGER_DIGITS,
    MAX_MATRIX_EXPRESSION_LENGTH,
    MAX_MATRIX_NODES,
    MAX_NAME_LENGTH,
    MAX_NODES,
    MAX_NUMERIC_SIZE,
    MAX_PAREN_DEPTH,
    MAX_PLAIN_DIGITS,
    MAX_SYMBOLIC_SIZE,
    check_shape,
)
from mcp_sections.shared.ground.errors import invalid_input, limit_exceeded
from mcp_sections.shared.text.python_syntax import parse_expression

IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TRANSLATIONS = str.maketrans({"×": "*", "·": "*", "÷": "/", "−": "-", "π": "pi", "²": "**2", "³": "**3"})

CONSTANT_NAMES = ("pi", "e", "E", "I", "oo", "inf")

# name -> (minimum arguments, maximum arguments or None for "any", sympy attribute or builder key)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "sin": (1, 1),
    "cos": (1, 1),
    "tan": (1, 1),
    "cot": (1, 1),
    "sec": (1, 1),
    "csc": (1, 1),
    "asin": (1, 1),
    "acos": (1, 1),
    "atan": (1, 1),
    "acot": (1, 1),
    "atan2": (2, 2),
    "sinh": (1, 1),
    "cosh": (1, 1),
    "tanh": (1, 1),
    "asinh": (1, 1),
    "acosh": (1, 1),
    "atanh": (1, 1),
    "exp": (1, 1),
    "log": (1, 2),
    "ln": (1, 1),
    "log10": (1, 1),
    "log2": (1, 1),
    "sqrt": (1, 1),
    "cbrt": (1, 1),
    "root": (2, 2),
    "abs": (1, 1),
    "sign": (1, 1),
    "floor": (1, 1),
    "ceil": (1, 1),
    "ceiling": (1, 1),
    "factorial": (1, 1),
    "factorial2": (1, 1),
    "binomial": (2, 2),
    "gamma": (1, 1),
    "gcd": (2, 2),
    "lcm": (2, 2),
    "min": (1, 20),
    "max": (1, 20),
    "re": (1, 1),
    "im": (1, 1),
    "conjugate": (1, 1),
    "arg": (1, 1),
    "erf": (1, 1),
}

# Functions of the grammars with `matrices`: name -> (minimum arguments, maximum arguments).
MATRIX_FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "Matrix": (1, 1),
    "eye": (1, 1),
    "zeros": (1, 2),
    "ones": (1, 2),
    "diag": (1, MAX_NUMERIC_SIZE),
    "det": (1, 1),
    "inv": (1, 1),
    "transpose": (1, 1),
    "rank": (1, 1),
    "trace": (1, 1),
    "rref": (1, 1),
    "nullspace": (1, 1),
    "eigenvals": (1, 1),
    "eigenvects": (1, 1),
    "dot": (2, 2),
    "cross": (2, 2),
    "linsolve": (1, 2),
}
_LINEAR_FUNCTIONS = {**FUNCTIONS, **MATRIX_FUNCTIONS}

_REFUSED: dict[type, str] = {
    ast.Attribute: "attribute access (`a.b`) is not allowed; call functions directly: sqrt(2), not math.sqrt(2)",
    ast.Subscript: "subscripts/indexing (`a[i]`) are not allowed; write single values",
    ast.Slice: "slices are not allowed",
    ast.Lambda: "lambda functions are not allowed; write the expression itself",
    ast.ListComp: "comprehensions are not allowed; write the terms out, e.g. 1 + 2 + 3",
    ast.SetComp: "comprehensions are not allowed; write the terms out, e.g. 1 + 2 + 3",
    ast.DictComp: "comprehensions are not allowed; write the terms out, e.g. 1 + 2 + 3",
    ast.GeneratorExp: "generator expressions are not allowed; write the terms out, e.g. 1 + 2 + 3",
    ast.List: "lists (`[...]`) are not allowed here; pass one expression (matrices and vectors go to "
    "calculator_evaluate; calculator_solve takes its equations as a JSON array)",
    ast.Tuple: "tuples (`a, b`) are not allowed; pass one expression (calculator_solve takes a JSON array)",
    ast.Set: "sets (`{...}`) are not allowed; pass one expression",
    ast.Dict: "dictionaries are not allowed; pass one expression",
    ast.IfExp: "conditional expressions (`a if c else b`) are not allowed; compute each case separately",
    ast.BoolOp: "boolean operators (and/or) are not allowed; use arithmetic only",
    ast.NamedExpr: "assignments (`:=`) are not allowed; substitute the value yourself",
    ast.Starred: "starred arguments (`*args`) are not allowed; pass the arguments one by one",
    ast.JoinedStr: "f-strings are not allowed; write numbers and names without quotes",
    ast.FormattedValue: "f-strings are not allowed; write numbers and names without quotes",
    ast.Await: "`await` is not allowed",
    ast.Yield: "`yield` is not allowed",
    ast.YieldFrom: "`yield from` is not allowed",
}

_OPERATOR_HINTS: dict[type, str] = {
    ast.FloorDiv: "the operator `//` is not supported; write floor(a/b)",
    ast.MatMult: "the operator `@` multiplies matrices, and only calculator_evaluate takes matrices; use * for numbers",
    ast.LShift: "the operator `<<` is not supported; write a*2**n",
    ast.RShift: "the operator `>>` is not supported; write floor(a/2**n)",
    ast.BitOr: "the operator `|` is not supported (use abs(x) for absolute values)",
    ast.BitAnd: "the operator `&` is not supported",
    ast.Invert: "the operator `~` is not supported; use - for negation",
    ast.Not: "`not` is not allowed; use arithmetic only",
}

ARITHMETIC = frozenset({ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.BitXor, ast.Mod})
LINEAR = ARITHMETIC | {ast.MatMult}
PRODUCTS = frozenset({ast.Mult, ast.Div, ast.Pow, ast.BitXor})


@dataclass(frozen=True)
class Grammar:
    """What one tool accepts. `names` replaces the functions and constants (used for unit expressions)."""

    tool: str
    variables: bool
    variable_hint: str = "use calculator_simplify, calculator_solve, calculator_differentiate or calculator_integrate"
    names: Mapping[str, Callable[[], Any]] | None = None
    operators: frozenset[type] = ARITHMETIC
    real_variables: bool = False
    reserved: frozenset[str] = field(default_factory=frozenset)
    matrices: bool = False

    @property
    def functions(self) -> Mapping[str, tuple[int, int | None]]:
        return _LINEAR_FUNCTIONS if self.matrices else FUNCTIONS

    @property
    def max_length(self) -> int:
        return MAX_FLOAT_EXPRESSION_LENGTH if self.matrices else MAX_EXPRESSION_LENGTH


# -- text and tree checks (no sympy) ------------------------------------------------------------------


_REFUSED_CHARACTER = re.compile(r"[^\x20-\x7e\t\n]")  # printable ASCII, space, tab and newline pass
_BRACKETS = re.compile(r"[()\[\]{}]")


def check_text(text: str, what: str = "expression", limit: int = MAX_EXPRESSION_LENGTH) -> str:
    """Length (at most `limit`), characters and bracket depth; returns the text with `^` rewritten to `**`."""
    if not isinstance(text, str):
        raise invalid_input(f"the {what} must be a string.")
    if len(text) > limit:
        raise _too_long(what, len(text), limit)
    text = text.translate(_TRANSLATIONS)
    if (refused := _REFUSED_CHARACTER.search(text)) is not None:
        position, character = refused.start(), refused.group()
        raise invalid_input(
            f"the {what} contains the character {character!r} (U+{ord(character):04X}) at position {position}; "
            "only plain ASCII maths is accepted (write pi, sqrt(x), x**2, * and / instead of symbols)."
        )
    if not text.strip():
        raise invalid_input(f"the {what} is empty; pass something like '2*x + 1'.")
    depth = deepest = 0
    for bracket in _BRACKETS.findall(text):  # only the brackets: a 200×200 literal has 800 KB of numbers
        if bracket in "([{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    if deepest > MAX_PAREN_DEPTH:
        raise limit_exceeded(
            f"the {what} nests brackets {deepest} levels deep; the limit is {MAX_PAREN_DEPTH}. "
            "Simplify the expression or split it into steps."
        )
    return text.replace("^", "**")


def source_text(text: str, what: str = "expression", limit: int = MAX_EXPRESSION_LENGTH) -> str:
    """The text Python's parser reads: `check_text`'s, with every postfix factorial written as a call."""
    return postfix_factorials(check_text(text, what, limit), what)


# One token of the (checked) text, as far as postfix `!` needs to know: Python's number literals, names, brackets,
# bangs, and the rest one piece at a time (quoted text and comments whole, so that a `!` inside them is left alone).
_TOKEN = re.compile(
    r"""(?P<number>0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<bangs>!+)
    |(?P<space>\s+)
    |(?P<other>'[^'\n]*'?|"[^"\n]*"?|\#[^\n]*|.)""",
    re.VERBOSE,
)
_FACTORIALS = {1: "factorial", 2: "factorial2"}


def postfix_factorials(source: str, what: str = "expression") -> str:
    """`n!` → `factorial(n)` and `n!!` → `factorial2(n)`, the operand being the number, name, bracketed group or
    call just before the bangs (so `2**3!` is 2**factorial(3) and `-3!` is -factorial(3)); a `!` followed by `=`
    stays `!=`. INVALID_INPUT for bangs with no operand before them, and for three or more."""
    if "!" not in source:
        return source
    rewrite = _Rewrite(what)
    for match in _TOKEN.finditer(source):
        kind, token = match.lastgroup, match.group()
        if kind != "bangs":
            rewrite.token(kind, token)
            continue
        count = len(token) - source.startswith("=", match.end())  # n!=3 reads as n != 3, n!!=3 as n! != 3
        if count:
            rewrite.factorial(count)
        if count < len(token):
            rewrite.pieces.append("!")
            rewrite.starts.append(-1)
    return "".join(rewrite.pieces)


class _Rewrite:
    """The text of `postfix_factorials` token by token, and where the operand ending with each token starts."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.pieces: list[str] = []
        self.starts: list[int] = []  # for each piece: the piece its operand starts at, -1 when it ends none
        self.openers: list[int] = []  # the pieces of the brackets still open

    def token(self, kind: str | None, token: str) -> None:
        start = -1
        if kind in ("number", "name"):
            start = len(self.pieces)
        elif kind == "open":
            self.openers.append(len(self.pieces))
        elif kind == "close" and self.openers:
            start = self.openers.pop()
            before = start - 1
            while before >= 0 and not self.pieces[before].strip():
                before -= 1
            if before >= 0 and self.starts[before] >= 0:
                start = self.starts[before]  # a call (or a subscript, refused later): sqrt(4)! is factorial(sqrt(4))
        self.pieces.append(token)
        self.starts.append(start)

    def factorial(self, count: int) -> None:
        """Wrap the operand that ends the text so far (white space before the bangs dropped)."""
        while self.pieces and not self.pieces[-1].strip():
            self.pieces.pop()
            self.starts.pop()
        start = self.starts[-1] if self.starts else -1
        if start < 0:
            raise invalid_input(
                f"'!' (factorial) needs what it applies to just before it in the {self.what}, e.g. 5!, n!, (n+1)! "
                "or sqrt(4)!; it is not a negation, and 'not' is not supported."
            )
        if count not in _FACTORIALS:
            raise invalid_input(
                f"{'!' * count} is not supported in the {self.what}: n! is the factorial and n!! the double "
                "factorial; for anything else write the calls, e.g. factorial(factorial(3)) for (3!)!."
            )
        operand = "".join(self.pieces[start:]).strip()
        del self.pieces[start:], self.starts[start:]
        self.pieces.append(f"{_FACTORIALS[count]}({operand})")
        self.starts.append(start)


def _too_long(what: str, length: int, limit: int) -> Exception:
    hint = "Split the computation into smaller steps."
    if limit == MAX_EXPRESSION_LENGTH:
        hint += (
            f" (calculator_evaluate takes up to {MAX_MATRIX_EXPRESSION_LENGTH} characters with exact matrix "
            f"literals, {MAX_FLOAT_EXPRESSION_LENGTH} with float64 ones.)"
        )
    return limit_exceeded(f"the {what} is {length} characters long; the limit is {limit}. {hint}")


def parse(text: str, grammar: Grammar, *, equation: bool = False, what: str = "expression") -> ast.expr:
    """Check the text and its syntax tree against `grammar`; returns the (validated) tree's body."""
    source = source_text(text, what, grammar.max_length)
    body = _syntax_tree(source, what)
    _check_size(body, what)
    if grammar.matrices:
        grammar = _with_linear_algebra(body, grammar, what, len(source))
    if equation and isinstance(body, ast.Compare):
        _check_equation(
            body,
            grammar,
            what,
            source,
            f"the {what} may contain one '=' (or '==') and no other comparison; "
            "inequalities and chained comparisons are not supported.",
        )
        return body
    _check_node(body, grammar, what, source)
    return body


def _syntax_tree(source: str, what: str) -> ast.expr:
    """The body of Python's parse of the (checked) text; INVALID_INPUT with a hint where it is not maths syntax."""
    try:
        return parse_expression(source.strip()).body
    except SyntaxError as exc:
        hint = ""
        if "decimal literal" in str(exc.msg) or "imaginary" in str(exc.msg):
            hint = " Write multiplication explicitly: 2*x, not 2x."
        elif "=" in source:
            hint = " Expressions contain no '='; equations go to calculator_solve as 'lhs = rhs'."
        raise invalid_input(
            f"the {what} is not valid maths syntax ({exc.msg}, at column {exc.offset}).{hint}"
        ) from None
    except (RecursionError, MemoryError):
        raise limit_exceeded(f"the {what} is too deeply nested to parse; simplify it or split it into steps.") from None
    except ValueError as exc:
        raise invalid_input(f"the {what} cannot be parsed ({exc}).") from None


def _with_linear_algebra(body: ast.expr, grammar: Grammar, what: str, length: int) -> Grammar:
    """A grammar with `matrices`: the length limit of what the tree holds (scalar maths, exact or float64 literals);
    an expression with linear algebra may hold variables (symbolic entries)."""
    if not _has_linear_algebra(body):
        if length > MAX_EXPRESSION_LENGTH:
            raise _too_long(what, length, MAX_EXPRESSION_LENGTH)
        return grammar
    _check_exact_literals(body, what, length)
    return grammar if grammar.variables else replace(grammar, variables=True)


def _check_equation(node: ast.Compare, grammar: Grammar, what: str, source: str, refusal: str) -> None:
    """`lhs == rhs` (or `lhs = rhs`, rewritten): one equality, both sides checked; INVALID_INPUT `refusal` else."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq):
        raise invalid_input(refusal + _not_equal_hint(node))
    _check_node(node.left, grammar, what, source)
    _check_node(node.comparators[0], grammar, what, source)


def _check_size(root: ast.expr, what: str) -> None:
    """At most MAX_NODES nodes outside list literals, MAX_FLOAT_NODES inside them, MAX_DEPTH levels
    (`_check_exact_literals` bounds the literals of the exact path further)."""
    count = inside = 0
    stack: list[tuple[ast.AST, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, in_list = stack.pop()
        if isinstance(node, ast.expr):
            if in_list:
                inside += 1
                if inside > MAX_FLOAT_NODES:
                    raise limit_exceeded(
                        f"the matrix literals in the {what} hold more than {MAX_FLOAT_NODES} numbers and "
                        "operations; use smaller matrices."
                    )
            else:
                count += 1
                if count > MAX_NODES:
                    raise limit_exceeded(
                        f"the {what} has more than {MAX_NODES} terms and operations; split it into smaller steps."
                    )
            if depth > MAX_DEPTH:
                raise limit_exceeded(
                    f"the {what} nests operations more than {MAX_DEPTH} levels deep; simplify it or split it."
                )
        in_list = in_list or isinstance(node, ast.List)
        stack.extend((child, depth + 1, in_list) for child in ast.iter_child_nodes(node))


def _check_exact_literals(root: ast.expr, what: str, length: int) -> None:
    """Without a float64 literal: at most MAX_MATRIX_EXPRESSION_LENGTH characters; the exact literals hold at
    most MAX_MATRIX_NODES nodes together (exact arithmetic grows with every entry)."""
    nodes, floats = 0, False
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.List):
            if is_float_literal(node):
                floats = True
            else:
                nodes += sum(1 for child in ast.walk(node) if isinstance(child, ast.expr))
            continue
        stack.extend(ast.iter_child_nodes(node))
    if nodes > MAX_MATRIX_NODES:
        raise limit_exceeded(
            f"the exact matrix literals in the {what} hold more than {MAX_MATRIX_NODES} numbers and operations; "
            "use smaller matrices (float64 matrices, with a decimal entry such as 0.5, take up to "
            f"{MAX_FLOAT_SIZE}×{MAX_FLOAT_SIZE})."
        )
    if not floats and length > MAX_MATRIX_EXPRESSION_LENGTH:
        raise _too_long(what, length, MAX_MATRIX_EXPRESSION_LENGTH)


_LINEAR_TEXT = re.compile(r"[\[@]|\b(?:" + "|".join(MATRIX_FUNCTIONS) + r")\s*\(")


def mentions_linear_algebra(text: str) -> bool:
    """A cheap textual guess (no parsing) that `text` does linear algebra: for choosing error advice only."""
    return _LINEAR_TEXT.search(text) is not None


def _has_linear_algebra(root: ast.expr) -> bool:
    """Whether the tree holds a list literal, `@` or a call of a matrix function."""
    for node in ast.walk(root):
        if isinstance(node, ast.List) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MATRIX_FUNCTIONS:
            return True
    return False


def _check_name(name: str, grammar: Grammar, what: str, called: bool) -> None:
    if name.startswith("_"):
        raise invalid_input(f"names starting with '_' are not allowed (got {name[:40]!r}) in the {what}.")
    if grammar.names is not None:
        _check_unit(name, grammar.names, what, called)
    elif called:
        _check_function_name(name, grammar, what)
    else:
        _check_plain_name(name, grammar, what)


def _check_unit(name: str, units: Mapping[str, Callable[[], Any]], what: str, called: bool) -> None:
    """A name in a unit expression: one of `units`, never called."""
    if called:
        raise invalid_input(
            f"functions such as {name[:40]}(...) are not allowed in unit expressions; "
            "write units like 'km/h' or 'm/s**2'."
        )
    if name not in units:
        raise invalid_input(f"unknown unit {name[:40]!r} in the {what}; accepted units: {', '.join(sorted(units))}.")


def _check_function_name(name: str, grammar: Grammar, what: str) -> None:
    """A called name: one of the grammar's functions."""
    if name not in grammar.functions:
        hint = ""
        if name in MATRIX_FUNCTIONS:
            hint = f" ({name} is a matrix function: only calculator_evaluate takes matrices)"
        allowed = ", ".join(sorted(grammar.functions))
        raise invalid_input(f"unknown function {name[:40]!r} in the {what}{hint}; allowed functions: {allowed}.")


def _check_plain_name(name: str, grammar: Grammar, what: str) -> None:
    """A name not called: a constant, or a variable where the grammar takes them."""
    if name in grammar.functions:
        raise invalid_input(f"{name!r} is a function; call it with an argument, e.g. {name}(x).")
    if name in CONSTANT_NAMES:
        return
    if name == "nan":
        raise invalid_input("nan (not a number) is not accepted; use finite numbers, or oo for infinity.")
    if not grammar.variables:
        raise invalid_input(
            f"unknown name {name[:40]!r}: {grammar.tool} takes numbers, the constants pi, e, I, oo and functions "
            f"only, no variables; {grammar.variable_hint}."
        )
    if len(name) > MAX_NAME_LENGTH or not IDENTIFIER.match(name) or name in grammar.reserved:
        raise invalid_input(
            f"invalid variable name {name[:40]!r}: use letters, digits and '_' (at most {MAX_NAME_LENGTH} characters)."
        )


def _check_node(node: ast.AST, grammar: Grammar, what: str, source: str) -> None:
    """Check one node of the tree, and below it, against the grammar (INVALID_INPUT naming what is refused)."""
    if isinstance(node, ast.Constant):
        _check_constant(node.value, what)
    elif isinstance(node, ast.Name):
        _check_name(node.id, grammar, what, called=False)
    elif isinstance(node, ast.BinOp):
        _check_operator(node.op, grammar, what)
        _check_node(node.left, grammar, what, source)
        _check_node(node.right, grammar, what, source)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise invalid_input(
                f"{_OPERATOR_HINTS.get(type(node.op), 'this unary operator is not allowed')} (in the {what})."
            )
        _check_node(node.operand, grammar, what, source)
    elif isinstance(node, ast.Call):
        _check_call(node, grammar, what, source)
    elif isinstance(node, ast.List) and grammar.matrices:
        _check_literal(node, grammar, what, source)
    else:
        raise invalid_input(_refusal(node, what))


def _check_constant(value: object, what: str) -> None:
    """A literal: a number, and an integer of at most MAX_INTEGER_DIGITS digits."""
    if isinstance(value, bool) or value is None or value is Ellipsis:
        raise invalid_input(f"{value!r} is not allowed in the {what}; use numbers.")
    if isinstance(value, str | bytes):
        raise invalid_input(
            f"text strings (quoted values) are not allowed in the {what}; write numbers and names without quotes."
        )
    if isinstance(value, complex):
        raise invalid_input(f"imaginary literals like 2j are not supported in the {what}; write 2*I.")
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_DIGITS * 3.33:
        raise limit_exceeded(
            f"an integer in the {what} has more than {MAX_INTEGER_DIGITS} digits; use smaller numbers "
            "or powers like 10**300."
        )


def _check_operator(op: ast.operator, grammar: Grammar, what: str) -> None:
    """A binary operator the grammar has; INVALID_INPUT with the way to write it otherwise."""
    if type(op) in grammar.operators:
        return
    hint = _OPERATOR_HINTS.get(type(op))
    if hint is None:
        symbols = {ast.Add: "+", ast.Sub: "-", ast.Mod: "%"}
        hint = f"the operator {symbols.get(type(op), type(op).__name__)!r} is not allowed here"
        if grammar.names is not None:
            hint += "; units combine with *, / and ** only (e.g. 'kg*m/s**2')"
    raise invalid_input(f"{hint} (in the {what}).")


def _check_call(node: ast.Call, grammar: Grammar, what: str, source: str) -> None:
    """A direct call of an allowed function with its number of positional arguments, each checked."""
    if isinstance(node.func, ast.Attribute):
        raise invalid_input(f"{_REFUSED[ast.Attribute]} (in the {what}).")
    if not isinstance(node.func, ast.Name):
        raise invalid_input(
            f"only direct calls of the allowed functions are supported in the {what}, e.g. sin(x); "
            "no attribute calls, no calling the result of an expression."
        )
    _check_name(node.func.id, grammar, what, called=True)
    if node.keywords:
        raise invalid_input(
            f"keyword arguments are not supported in {node.func.id}(...); pass arguments by position, "
            "e.g. log(x, 2) for the base-2 logarithm."
        )
    low, high = grammar.functions[node.func.id]
    count = len(node.args)
    if count < low or (high is not None and count > high):
        expected = str(low) if low == high else f"{low} to {high}"
        raise invalid_input(f"{node.func.id} takes {expected} argument(s), got {count} (in the {what}).")
    if node.func.id == "linsolve" and is_equation_list(node.args[0]):
        _check_equations(node.args, grammar, what, source)
        return
    for argument in node.args:
        _check_node(argument, grammar, what, source)


def _refusal(node: ast.AST, what: str) -> str:
    """Why a construct the grammar has no place for is refused, and what to write instead."""
    if isinstance(node, ast.Compare):
        return (
            f"comparisons (==, <, >, ...) are not allowed in the {what}; "
            "write a single expression, or use calculator_solve for equations ('lhs = rhs')." + _not_equal_hint(node)
        )
    message = _REFUSED.get(type(node))
    if message is None:
        message = f"the construct {type(node).__name__} is not allowed; use numbers, operators and function calls"
    return f"{message} (in the {what})."


def _not_equal_hint(node: ast.Compare) -> str:
    if not any(isinstance(op, ast.NotEq) for op in node.ops):
        return ""
    return " ('!=' reads as 'not equal'; for a factorial followed by '=', leave a space: n! = 120.)"


def is_equation_list(node: ast.expr) -> bool:
    """linsolve's first argument is a list of equations when it is a list literal of anything but rows."""
    return isinstance(node, ast.List) and not any(isinstance(item, ast.List) for item in node.elts)


def _check_equations(arguments: list[ast.expr], grammar: Grammar, what: str, source: str) -> None:
    equations = arguments[0]
    assert isinstance(equations, ast.List)
    if not equations.elts:
        raise invalid_input(
            f"linsolve needs at least one equation (in the {what}), e.g. linsolve([x + y == 3], [x, y])."
        )
    if len(equations.elts) > MAX_SYMBOLIC_SIZE:
        raise limit_exceeded(f"linsolve takes at most {MAX_SYMBOLIC_SIZE} equations; got {len(equations.elts)}.")
    for item in equations.elts:
        if isinstance(item, ast.Compare):
            _check_equation(
                item,
                grammar,
                what,
                source,
                f"linsolve's equations are 'lhs == rhs' or an expression meaning '= 0' (in the {what}); "
                "inequalities and chained comparisons are not supported.",
            )
        else:
            _check_node(item, grammar, what, source)
    if len(arguments) == 2:
        _check_unknowns(arguments[1], grammar, what)


def _check_unknowns(unknowns: ast.expr, grammar: Grammar, what: str) -> None:
    """linsolve's second argument: a list of 1 to MAX_SYMBOLIC_SIZE variable names."""
    if not isinstance(unknowns, ast.List) or not all(isinstance(item, ast.Name) for item in unknowns.elts):
        raise invalid_input(
            f"linsolve's second argument is the list of unknowns, e.g. linsolve([x + y == 3, x - y == 1], [x, y]) "
            f"(in the {what})."
        )
    if not unknowns.elts or len(unknowns.elts) > MAX_SYMBOLIC_SIZE:
        raise invalid_input(f"linsolve takes 1 to {MAX_SYMBOLIC_SIZE} unknowns (in the {what}).")
    for item in unknowns.elts:
        assert isinstance(item, ast.Name)
        _check_name(item.id, grammar, what, called=False)
        if item.id in CONSTANT_NAMES:
            raise invalid_input(f"{item.id!r} is a constant, not an unknown (in the {what}).")


def literal_rows(node: ast.List) -> list[list[ast.expr]]:
    """The entries of a matrix literal row by row (a flat list is a column)."""
    return [item.elts if isinstance(item, ast.List) else [item] for item in node.elts]


def is_float_literal(node: ast.List) -> bool:
    """THE rule of the float64 path: a matrix literal whose entries are all number literals (maybe signed, or a
    fraction of two) with at least one decimal literal (a point or an exponent: 0.5, 1e-3, 2.)."""
    entries = [entry for row in literal_rows(node) for entry in row]
    return not any(isinstance(entry, ast.List) for entry in entries) and _float_entries(entries)


def _float_entries(entries: list[ast.expr]) -> bool:
    numbers = [_literal_numbers(entry) for entry in entries]
    return all(found is not None for found in numbers) and any(
        isinstance(constant.value, float) for found in numbers for constant in found or ()
    )


def _literal_numbers(node: ast.expr) -> list[ast.Constant] | None:
    """The number literals of an entry `c`, `-c`, `+c` or `a/b` (a, b maybe signed), None for anything else."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _literal_numbers(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _literal_numbers(node.left), _literal_numbers(node.right)
        return None if left is None or right is None or len(left) + len(right) != 2 else left + right
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    assert isinstance(node, ast.Constant)
    return [node]


def _plain_number(node: ast.expr) -> bool:
    """A number literal of at most MAX_PLAIN_DIGITS digits, maybe signed, or a fraction of two such literals."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # -1/3 parses as (-1)/3
        return _plain_signed(node.left) and _plain_signed(node.right)
    return _plain_signed(node)


def _plain_signed(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _plain_signed(node.operand)
    return _plain_literal(node)


def _plain_literal(node: ast.expr) -> bool:
    """An integer or decimal literal of at most MAX_PLAIN_DIGITS digits, below 10**MAX_PLAIN_DIGITS in magnitude."""
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) < 10**MAX_PLAIN_DIGITS
    written = (node.end_col_offset or 0) - node.col_offset  # a number literal is one token on one line
    in_range = value == 0 or 10.0**-MAX_PLAIN_DIGITS <= abs(value) < 10.0**MAX_PLAIN_DIGITS
    return written <= MAX_PLAIN_DIGITS + 4 and in_range  # + 4: the point, the exponent's e, sign and digit


def _check_literal(node: ast.List, grammar: Grammar, what: str, source: str) -> None:
    """A matrix literal: a list of rows of the same length, or a flat list (a column vector)."""
    items = node.elts
    if not items:
        raise invalid_input(f"an empty list `[]` in the {what}; a matrix needs entries, e.g. [[1, 2], [3, 4]].")
    rows = [item for item in items if isinstance(item, ast.List)]
    if rows and len(rows) != len(items):
        raise invalid_input(
            f"a list in the {what} mixes rows and single entries; write a matrix as a list of rows "
            "[[1, 2], [3, 4]], or a vector as [1, 2, 3]."
        )
    if rows:
        width = len(rows[0].elts)
        for index, row in enumerate(rows):
            if len(row.elts) != width:
                raise invalid_input(
                    f"row {index + 1} of a matrix in the {what} has {len(row.elts)} entries but row 1 has {width}; "
                    "every row needs the same number of entries."
                )
        entries = [entry for row in rows for entry in row.elts]
        shape = (len(rows), width)
    else:
        entries, shape = items, (len(items), 1)
    if not entries:
        raise invalid_input(f"a matrix in the {what} has empty rows; write entries, e.g. [[1, 2], [3, 4]].")
    if any(isinstance(entry, ast.List) for entry in entries):
        raise invalid_input(
            f"a matrix in the {what} nests lists deeper than rows; entries are numbers or expressions, "
            "e.g. [[1, 2], [3, 4]]."
        )
    floats = _float_entries(entries)
    check_shape(*shape, floats or all(_plain_number(entry) for entry in entries), what, floats=floats)
    for entry in entries:
        _check_node(entry, grammar, what, source)
