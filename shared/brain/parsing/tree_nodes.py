"""Reading tree-sitter nodes: their text, the name a call calls, the comment above a definition, the head of a
definition (what comes before its body)."""

from __future__ import annotations

import re
from typing import Any

NAME_TYPES = frozenset(
    {"identifier", "property_identifier", "field_identifier", "type_identifier", "shorthand_property_identifier"}
)
COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")
"""The values that make what holds them a function: `const f = () => ...`, `exports.f = function () ...`."""


def text_of(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def squeezed(text: str, limit: int) -> str:
    """`text` on one line, its runs of whitespace as one space, at most `limit` characters."""
    return " ".join(text.split())[:limit]


def head(data: bytes, node: Any, body: Any) -> str:
    """A definition's text before its body (`body` None: all of it), on one line, without the `{`, `=>` or `:` that
    opens the body (a return type's `>` is kept), at most 240 characters."""
    end = body.start_byte if body is not None else node.end_byte
    text = " ".join(data[node.start_byte : end].decode("utf-8", errors="replace").split())
    if body is None:
        text = text.split("{", 1)[0]
    text = text.rstrip(" {")
    return text.removesuffix("=>").rstrip(" =:")[:240]


def callee(node: Any, field: str) -> str:
    """The name a call calls: `b` for `a.b(...)`, `f` for `f(...)`, through chains and parentheses."""
    target = node.child_by_field_name(field)
    while target is not None and target.type not in NAME_TYPES:
        nxt = (
            target.child_by_field_name("property")
            or target.child_by_field_name("field")
            or target.child_by_field_name("name")
            or target.child_by_field_name("function")
        )
        if nxt is None:
            named = [c for c in target.named_children if c.type in NAME_TYPES]
            nxt = named[-1] if named else None
        target = nxt
    return text_of(target)


def leading_comment(node: Any) -> str:
    """The comment lines right above `node` (or above the `export` statement holding it), without their markers."""
    comments = []
    anchor = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
    current = anchor.prev_named_sibling
    row = anchor.start_point[0]
    while current is not None and current.type in COMMENT_TYPES and current.end_point[0] >= row - 1:
        comments.append(text_of(current))
        row = current.start_point[0]
        current = current.prev_named_sibling
    lines = []
    for comment in reversed(comments):
        for line in comment.splitlines():
            line = re.sub(r"^\s*(//!|///?|/\*\*?|\*/|\*|#)\s?", "", line).rstrip()
            line = re.sub(r"\*/\s*$", "", line).rstrip()
            if line:
                lines.append(line)
    return "\n".join(lines)


def comment_text(comment: str) -> str:
    """A comment's text without its markers (a file's first comment is its summary, a block's the docstring of the
    code below it)."""
    lines = [re.sub(r"^\s*(//!|///?|/\*\*?|\*/|\*)\s?", "", line).rstrip() for line in comment.splitlines()]
    lines = [re.sub(r"\s*\*/$", "", line) for line in lines]
    return "\n".join(line for line in lines if line and line != "/")[:1000]


def string_value(node: Any) -> str | None:
    """The value of a string literal, or of a template literal without substitutions; None for anything else."""
    if node is None or node.type not in ("string", "template_string"):
        return None
    if any(child.type == "template_substitution" for child in node.named_children):
        return None
    return text_of(node)[1:-1]
