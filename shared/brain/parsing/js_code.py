"""What JavaScript and TypeScript define besides their declarations, and the names of their top-level statements.

- Route registrations, express style (express and its routers, fastify, hono, koa-router): `app.get("/api/items",
  handler)`, `router.delete("/:id", auth, orders.remove)`, `app.use("/api/orders", ordersRouter)`, and chains such as
  `router.route("/carts/:id").get(show).delete(drop)`: scopes of kind `route` named `router.delete /:id`, always
  embedded, which refer to their handlers (a handler's callers list the routes that use it).
- Functions held by something: `const f = () => ...` (and `function` expressions), `exports.handler = async (event) =>
  ...`, `module.exports = (req, res, next) => ...` and `export default async (req, res) => ...` (named after the
  function, else the file), `Order.prototype.total = function ...` (`Order.total`), properties of object literals
  (`{ remove: async (req, res) => ... }`, qualified by the variable holding the object: `ordersController.remove`)
  and class fields (`handle = (event) => ...`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from mcp_sections.shared.brain.parsing.tree_nodes import (
    FUNCTION_VALUES,
    NAME_TYPES,
    head,
    squeezed,
    string_value,
    text_of,
)

ROUTE_METHODS = frozenset({"get", "post", "put", "delete", "patch", "head", "options", "all", "use"})
ROUTE_LINKS = ROUTE_METHODS | {"route"}
HTTP_CLIENTS = frozenset(
    {"axios", "$", "jquery", "http", "https", "superagent", "got", "ky", "fetch", "request", "supertest", "cy"}
)
"""Receivers whose `.get("/path", ...)` sends a request rather than registers a route."""
_NOT_HANDLERS = frozenset({"object", "string", "template_string", "number", "true", "false", "null", "undefined"})
_NAMED_VALUES = {  # node type → (the field naming it, the kind it defines when its value is a function)
    "variable_declarator": ("name", "function"),
    "field_definition": ("property", "function"),  # a class field: a method once in its class
    "public_field_definition": ("name", "function"),  # TypeScript's
    "pair": ("key", "method"),  # a property of an object literal
}
_EXPORTS = ("module.exports", "exports")
DETAIL_CHARS = 160


@dataclass(frozen=True)
class Definition:
    """A definition as the syntax walk makes it: its kind and name; its qualified name when it is not the enclosing
    one's plus its name; its signature when it is not the text before its body; for a route, what is embedded after
    its name and the names of its handlers."""

    kind: str
    name: str
    qualname: str | None = None
    signature: str | None = None
    detail: str | None = None
    refers: tuple[str, ...] = ()


def js_definition(node: Any, data: bytes, rel: str) -> Definition | None:
    """What `node` defines through a value (a function, a route), or None."""
    kind = node.type
    if kind in _NAMED_VALUES:
        field, made = _NAMED_VALUES[kind]
        name = _own_name(node.child_by_field_name(field))
        return Definition(made, name) if name and _is_function(node.child_by_field_name("value")) else None
    if kind == "assignment_expression":
        return _assigned(node, rel)
    if kind == "export_statement":
        value = node.child_by_field_name("value")
        if not _is_function(value):
            return None
        name = text_of(value.child_by_field_name("name")) or module_stem(rel)
        return Definition("function", name, name, head(data, node, value.child_by_field_name("body")))
    return route(node, data) if kind == "call_expression" else None


def js_object_holder(node: Any) -> str | None:
    """The name the methods of an object literal are qualified with: `ctrl` for `const ctrl = {...}` or
    `exports.ctrl = {...}`, `methods` for a property `methods: {...}`; None when `node` holds no object literal or
    is the module's exports (`module.exports = {...}`: its methods keep their own names)."""
    kind = node.type
    if kind == "variable_declarator":
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if value is not None and value.type == "object" and name is not None and name.type == "identifier":
            return text_of(name)
    elif kind == "assignment_expression":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is not None and right.type == "object" and left is not None:
            target = squeezed(text_of(left), 80)
            if target in _EXPORTS:
                return None
            for exported in _EXPORTS:
                target = target.removeprefix(f"{exported}.")
            return target
    elif kind == "pair":
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
        if value is not None and value.type == "object" and key is not None and key.type in NAME_TYPES:
            return text_of(key)
    return None


def js_statement_name(node: Any) -> str | None:
    """A name for a top-level statement, drawn from its code: the first name a declaration declares (`app`), what an
    assignment assigns to (`module.exports`), what a call calls and its first string (`app.listen`,
    `describe orders API`), `export`; None when the code gives none."""
    kind = node.type
    if kind in ("lexical_declaration", "variable_declaration"):
        declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        return _first_name(declarator.child_by_field_name("name")) if declarator is not None else None
    if kind == "export_statement":
        return "export default" if any(child.type == "default" for child in node.children) else "export"
    if kind != "expression_statement" or not node.named_children:
        return None
    expression = node.named_children[0]
    while expression.type in ("await_expression", "parenthesized_expression") and expression.named_children:
        expression = expression.named_children[0]
    if expression.type in ("assignment_expression", "augmented_assignment_expression"):
        return squeezed(text_of(expression.child_by_field_name("left")), 60) or None
    if expression.type == "call_expression":
        function = expression.child_by_field_name("function")
        if function is None or function.type not in ("identifier", "member_expression"):
            return None  # (function () {...})(): nothing to call it by
        arguments = expression.child_by_field_name("arguments")
        first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
        label = string_value(first)
        name = squeezed(text_of(function), 60)
        return f"{name} {squeezed(label, 60)}" if label else name
    return None


def route(node: Any, data: bytes) -> Definition | None:
    """A route registration (`app.get("/api/items", handler)`, `router.route("/x").get(a).delete(b)`), or None: the
    path is a string starting with / or *, a handler follows it, and the receiver is no HTTP client (axios.get)."""
    parent = node.parent
    if parent is not None and parent.type == "member_expression":
        return None  # a link inside a chain: the whole chain is the route
    links: list[tuple[str, Any]] = []  # (method, arguments), the last call first
    current = node
    while current is not None and current.type == "call_expression":
        function = current.child_by_field_name("function")
        if function is None or function.type != "member_expression":
            break
        links.append((text_of(function.child_by_field_name("property")), current.child_by_field_name("arguments")))
        current = function.child_by_field_name("object")
    if not links or current is None:
        return None
    receiver = squeezed(text_of(current), 60)
    if receiver.split(".", 1)[0].split("(", 1)[0].lower() in HTTP_CLIENTS:
        return None
    links.reverse()
    for position, (method, arguments) in enumerate(links):
        values = list(arguments.named_children) if arguments is not None else []
        path = _route_path(values[0]) if values else None
        if path is None:
            continue
        if method in ROUTE_METHODS and position == len(links) - 1 and _handles(values[1:]):
            handlers = values[1:]
        elif (
            method == "route"
            and position < len(links) - 1
            and all(m in ROUTE_METHODS for m, _ in links[position + 1 :])
        ):
            handlers = [value for _, later in links[position + 1 :] for value in later.named_children]
        else:
            return None
        body = next((value.child_by_field_name("body") for value in handlers if _is_function(value)), None)
        close = arguments.end_byte - 1 if method in ROUTE_METHODS else node.end_byte  # a chain: all its links
        after = data[values[0].end_byte : close].decode("utf-8", errors="replace")
        return Definition(
            "route",
            f"{receiver}.{method} {path}",
            signature=head(data, node, body),
            detail=squeezed(after, DETAIL_CHARS).lstrip(" ,)") or None,
            refers=tuple(dict.fromkeys(name for value in handlers for name in _handler_names(value))),
        )
    return None


def module_stem(rel: str) -> str:
    """What a module's default export is called when it has no name of its own: its file's stem (`auth` for
    `middleware/auth.js`), its directory's name for an index file."""
    stem = posixpath.splitext(posixpath.basename(rel))[0]
    if stem == "index":
        return posixpath.basename(posixpath.dirname(rel)) or stem
    return stem


def _is_function(node: Any) -> bool:
    return node is not None and node.type in FUNCTION_VALUES


def _own_name(node: Any) -> str | None:
    """The name a name node gives (an identifier, a quoted property key); None for a pattern or a computed key."""
    if node is None:
        return None
    if node.type == "string":
        return string_value(node) or None
    return text_of(node) if node.type in NAME_TYPES else None


def _assigned(node: Any, rel: str) -> Definition | None:
    """A function assigned to a name: `exports.handler = ...` (handler), `module.exports = function auth ...` (auth,
    else the file's stem), `Order.prototype.total = ...` (the method Order.total), `app.locals.format = ...`."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if not _is_function(right) or left is None:
        return None
    target = squeezed(text_of(left), 120)
    if left.type == "identifier":
        return Definition("function", target)
    if left.type != "member_expression":
        return None
    owner, name = (
        squeezed(text_of(left.child_by_field_name("object")), 120),
        text_of(left.child_by_field_name("property")),
    )
    if target in _EXPORTS:
        own = text_of(right.child_by_field_name("name")) or module_stem(rel)
        return Definition("function", own, own)
    if owner in _EXPORTS:
        return Definition("function", name, name)
    if owner.endswith(".prototype"):
        return Definition("method", name, f"{owner.removesuffix('.prototype')}.{name}")
    return Definition("function", name, target)


def _route_path(node: Any) -> str | None:
    value = string_value(node)
    return squeezed(value, 120) if value is not None and value.startswith(("/", "*")) and value.strip() else None


def _handles(values: list[Any]) -> bool:
    """Whether what follows a path registers something: at least one value, the last no plain data."""
    return bool(values) and values[-1].type not in _NOT_HANDLERS


def _handler_names(node: Any, depth: int = 0) -> list[str]:
    """The functions a route's argument names: `auth`, `remove` for `orders.remove`, those a wrapper receives
    (`asyncHandler(orders.remove)`) or a list holds."""
    if node.type == "identifier":
        return [text_of(node)]
    if node.type == "member_expression":
        return [text_of(node.child_by_field_name("property"))]
    if depth >= 2:
        return []
    if node.type == "call_expression":
        arguments = node.child_by_field_name("arguments")
        inner = list(arguments.named_children) if arguments is not None else []
        return [name for value in inner for name in _handler_names(value, depth + 1)]
    if node.type == "array":
        return [name for value in node.named_children for name in _handler_names(value, depth + 1)]
    return []


def _first_name(node: Any) -> str | None:
    """The first name a declaration's target binds (`app`; `renderInvoice` for `{ renderInvoice }`)."""
    stack = [node] if node is not None else []
    while stack:
        item = stack.pop(0)
        if item.type in ("identifier", "shorthand_property_identifier_pattern"):
            return text_of(item)
        stack = [child for child in item.named_children if child.type != "property_identifier"] + stack
    return None
