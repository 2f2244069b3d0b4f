"""JavaScript, TypeScript/TSX, Go, Rust and Java through tree-sitter grammars from PyPI, imported lazily
(`pip install 'mcp-sections[rag]'`); a missing grammar means the file is indexed as plain chunks."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp_sections.shared.brain.parsing.builder import Builder, Statement, module_blocks
from mcp_sections.shared.brain.parsing.files import MAX_SCOPES_PER_FILE
from mcp_sections.shared.brain.parsing.js_code import (
    ROUTE_LINKS,
    Definition,
    js_definition,
    js_object_holder,
    js_statement_name,
)
from mcp_sections.shared.brain.parsing.tree_nodes import (
    COMMENT_TYPES,
    callee,
    comment_text,
    head,
    leading_comment,
    text_of,
)

# ---- tree-sitter languages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TSLanguage:
    module: str
    function: str  # attribute of the module returning the language pointer
    defs: dict[str, str]  # node type → scope kind
    containers: frozenset[str]  # scope kinds whose functions are methods
    call_types: dict[str, str]  # call node type → field holding the callee
    body_fields: tuple[str, ...] = ("body",)


_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
}
TREE_SITTER_LANGUAGES: dict[str, TSLanguage] = {
    "javascript": TSLanguage(
        "tree_sitter_javascript", "language", _JS_DEFS, frozenset({"class"}), {"call_expression": "function"}
    ),
    "typescript": TSLanguage(
        "tree_sitter_typescript",
        "language_typescript",
        {
            **_JS_DEFS,
            "abstract_class_declaration": "class",
            "interface_declaration": "interface",
            "type_alias_declaration": "type",
            "enum_declaration": "enum",
        },
        frozenset({"class"}),
        {"call_expression": "function"},
    ),
    "go": TSLanguage(
        "tree_sitter_go",
        "language",
        {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
        frozenset(),
        {"call_expression": "function"},
    ),
    "rust": TSLanguage(
        "tree_sitter_rust",
        "language",
        {
            "function_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "module",
            "type_item": "type",
        },
        frozenset({"impl", "trait"}),
        {"call_expression": "function"},
    ),
    "java": TSLanguage(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "record",
            "annotation_type_declaration": "interface",
            "method_declaration": "method",
            "constructor_declaration": "constructor",
        },
        frozenset({"class", "interface", "enum", "record"}),
        {"method_invocation": "name", "object_creation_expression": "type"},
    ),
}
TREE_SITTER_LANGUAGES["tsx"] = TSLanguage(
    "tree_sitter_typescript",
    "language_tsx",
    TREE_SITTER_LANGUAGES["typescript"].defs,
    frozenset({"class"}),
    {"call_expression": "function"},
)


@cache
def _ts_language(language: str) -> Any:
    spec = TREE_SITTER_LANGUAGES[language]
    try:
        import importlib

        import tree_sitter

        module = importlib.import_module(spec.module)
        return tree_sitter.Language(getattr(module, spec.function)())
    except (ImportError, AttributeError, ValueError, TypeError):
        return None


def ts_parser(language: str) -> Any:
    lang = _ts_language(language)
    if lang is None:
        return None
    import tree_sitter

    return tree_sitter.Parser(lang)


def tree_sitter_available() -> dict[str, bool]:
    return {language: _ts_language(language) is not None for language in TREE_SITTER_LANGUAGES}


def _ts_name(node: Any) -> str:
    """A definition's name: its `name` field, or a Rust `impl`'s "Trait for Type" (or its type alone)."""
    if node.type == "impl_item":
        trait = node.child_by_field_name("trait")
        typ = text_of(node.child_by_field_name("type"))
        return f"{text_of(trait)} for {typ}" if trait is not None else typ
    return text_of(node.child_by_field_name("name"))


def _signature(node: Any, data: bytes, spec: TSLanguage) -> str:
    body = None
    for field in spec.body_fields:
        body = node.child_by_field_name(field)
        if body is not None:
            break
    if node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    return head(data, node, body)


JS_LIKE = ("javascript", "typescript", "tsx")
TYPE_KINDS = ("class", "interface", "struct", "enum", "type")  # scopes whose calls are their members'
IMPORT_TYPES = frozenset(
    {
        "import_statement",
        "import_declaration",
        "package_clause",
        "package_declaration",
        "use_declaration",
        "extern_crate_declaration",
    }
)
PREFIX_TYPES = COMMENT_TYPES | {"attribute_item", "inner_attribute_item", "hash_bang_line"}
"""Top-level nodes that belong with what follows them (comments, Rust attributes, a `#!` line)."""
WRAPPERS = frozenset({"lexical_declaration", "variable_declaration", "export_statement", "type_declaration"})
"""Statements that hold the definitions they declare (`export const f = ...`, Go's `type ( A struct{...} )`): a
definition when its definitions cover its lines, its first and last (`type (`, `)`) aside."""
_HELD = ("variable_declarator", "assignment_expression", "call_expression")  # defined as part of a statement
_STATEMENTS = ("lexical_declaration", "variable_declaration", "expression_statement")


def parse_tree_sitter(builder: Builder, text: str, data: bytes, language: str) -> None:
    spec = TREE_SITTER_LANGUAGES[language]
    parser = ts_parser(language)
    root = parser.parse(data).root_node
    walk = _SyntaxWalk(builder, data, language, spec)
    statements = [walk.top_level(child) for child in root.named_children]
    builder.imports(walk.imports)
    builder.file.props["module"] = _module_name(language, builder.rel, walk.package)
    first = root.named_children[0] if root.named_children else None
    if first is not None and first.type in COMMENT_TYPES:
        builder.file.props["summary"] = comment_text(text_of(first))
        statements[0] = Statement(statements[0].start, statements[0].end, "boundary")  # the File node holds it
    module_blocks(builder, [line.removesuffix("\r") for line in text.split("\n")], statements)


class _SyntaxWalk:
    """One file's syntax tree walked once: its definitions as scopes (at most `MAX_SCOPES_PER_FILE`), its imports,
    its package, and what each top-level statement is to the module-level blocks."""

    def __init__(self, builder: Builder, data: bytes, language: str, spec: TSLanguage) -> None:
        self.builder = builder
        self.data = data
        self.language = language
        self.spec = spec
        self.imports: list[str] = []
        self.package = ""
        self.count = 0
        self.made: list[tuple[int, int, int, int]] = []  # top-level definitions: their statement's bytes, their lines
        self.statements = {  # node type → what it imports or declares
            "import_statement": self._js_import,
            "export_statement": self._js_import,
            "import_spec": self._go_import,
            "use_declaration": self._rust_use,
            "import_declaration": self._java_import,
            "package_declaration": self._java_package,
            "package_clause": self._go_package,
            "call_expression": self._js_require,
        }

    def top_level(self, node: Any) -> Statement:
        """Walk one top-level statement, and say what it is to the module-level blocks: a comment, a boundary (an
        import, a definition) or code outside every definition."""
        first = len(self.made)
        self.visit_node(node, self.builder.file_id, "", None)
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        if node.type in PREFIX_TYPES:
            doc = comment_text(text_of(node)) if node.type in COMMENT_TYPES else ""
            return Statement(start, end, "comment", doc=doc)
        source = node.type == "export_statement" and node.child_by_field_name("source") is not None
        if node.type in IMPORT_TYPES or source or self._defined(node, self.made[first:]):
            return Statement(start, end, "boundary")
        return Statement(start, end, name=self._statement_name(node), calls=tuple(self.calls_in(node)))

    def _defined(self, node: Any, made: list[tuple[int, int, int, int]]) -> bool:
        """Whether a top-level statement is a definition: one made from it is all of it (a `;` aside), or it is a
        wrapper whose definitions cover its lines."""
        if any(begin <= node.start_byte and finish >= node.end_byte - 1 for begin, finish, _, _ in made):
            return True
        if node.type not in WRAPPERS or not made:
            return False
        covered = {line for _, _, first, last in made for line in range(first, last + 1)}
        return all(line in covered for line in range(node.start_point[0] + 2, node.end_point[0] + 1))

    def _statement_name(self, node: Any) -> str | None:
        """A name for a top-level statement drawn from its code (`app`, `ErrNotFound`, `lazy_static!`)."""
        if self.language in JS_LIKE:
            return js_statement_name(node)
        if node.type == "macro_invocation":
            return f"{text_of(node.child_by_field_name('macro'))}!"
        for item in (node, *node.named_children, *(c for child in node.named_children for c in child.named_children)):
            name = item.child_by_field_name("name")
            if name is not None:
                return f"{text_of(name)}!" if node.type == "macro_definition" else text_of(name)
        return None

    def visit(self, node: Any, parent: str, prefix: str, parent_kind: str | None) -> None:
        for child in node.named_children:
            self.visit_node(child, parent, prefix, parent_kind)

    def visit_node(self, node: Any, parent: str, prefix: str, parent_kind: str | None) -> None:
        if self.count >= MAX_SCOPES_PER_FILE:
            return
        found = self._definition(node)
        if found is not None:
            sid, qualname, kind = self.define(node, found, parent, prefix, parent_kind)
            self.visit(node, sid, qualname, kind)
            return
        statement = self.statements.get(node.type)
        if statement is not None:
            statement(node)
        holder = js_object_holder(node) if self.language in JS_LIKE else None
        self.visit(node, parent, f"{prefix}.{holder}" if prefix and holder else holder or prefix, parent_kind)

    def _definition(self, node: Any) -> Definition | None:
        """What `node` defines: a declaration of its language, or (JavaScript, TypeScript) a function or a route
        held by a value (`js_code`)."""
        kind = self.spec.defs.get(node.type)
        if kind is not None:
            name = _ts_name(node)
            return Definition(kind, name) if name else None
        return js_definition(node, self.data, self.builder.rel) if self.language in JS_LIKE else None

    def define(
        self, node: Any, found: Definition, parent: str, prefix: str, parent_kind: str | None
    ) -> tuple[str, str, str]:
        """A scope for `found`; its id, qualified name and kind."""
        self.count += 1
        kind = found.kind
        if kind == "function" and parent_kind in self.spec.containers:
            kind = "method"
        if node.type == "method_declaration" and self.language == "go":
            receiver = node.child_by_field_name("receiver")
            rtype = re.sub(r"[^\w]", " ", text_of(receiver)).split()
            prefix = rtype[-1] if rtype else prefix
        qualname = found.qualname or (f"{prefix}.{found.name}" if prefix else found.name)
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        held = node.type in _HELD and node.parent is not None and node.parent.type in _STATEMENTS
        statement = node.parent if held else node  # `const f = ...`, `app.get(...);` as a whole
        if parent == self.builder.file_id:
            self.made.append((statement.start_byte, statement.end_byte, start, end))
        calls = [] if kind in TYPE_KINDS else self.calls_in(node)
        if kind == "route":  # its handlers, not the chain's own links (`.route(path).get(...)`)
            calls = [*found.refers, *(call for call in calls if call not in ROUTE_LINKS)]
        sid = self.builder.scope(
            parent=parent,
            kind=kind,
            name=found.name,
            qualname=qualname,
            signature=found.signature or _signature(node, self.data, self.spec),
            docstring=leading_comment(statement),
            start=start,
            end=end,
            content=self._source(statement),
            calls=calls,
            detail=found.detail,
        )
        return sid, qualname, kind

    def _source(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def calls_in(self, node: Any) -> list[str]:
        """The names `node` calls, not descending into nested definitions."""
        names: list[str] = []
        stack = list(node.named_children)
        while stack:
            item = stack.pop()
            if item.type in self.spec.defs:
                continue
            field = self.spec.call_types.get(item.type)
            if field:
                name = callee(item, field)
                if name:
                    names.append(name)
            stack.extend(item.named_children)
        return names

    # ---- imports and packages, by statement type ----
    def _js_import(self, node: Any) -> None:
        if self.language == "java":
            return
        source = node.child_by_field_name("source")
        if source is not None:
            self.imports.append(_resolve_js(self.builder.rel, text_of(source).strip("'\"`")))

    def _go_import(self, node: Any) -> None:
        self.imports.append(text_of(node.child_by_field_name("path")).strip('"`'))

    def _rust_use(self, node: Any) -> None:
        self.imports.append(_rust_use(text_of(node.child_by_field_name("argument"))))

    def _java_import(self, node: Any) -> None:
        if self.language == "java":
            self.imports.append(text_of(node).removeprefix("import").removeprefix(" static").strip(" ;").rstrip(".*"))

    def _java_package(self, node: Any) -> None:
        self.package = text_of(node).removeprefix("package").strip(" ;")

    def _go_package(self, node: Any) -> None:
        self.package = text_of(node).removeprefix("package").strip()

    def _js_require(self, node: Any) -> None:
        if self.language not in JS_LIKE:
            return
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if text_of(func) == "require" and args is not None and args.named_children:
            self.imports.append(_resolve_js(self.builder.rel, text_of(args.named_children[0]).strip("'\"`")))


def _module_name(language: str, rel: str, package: str) -> str:
    """The module a file is, as its language names it (a Java class with its package, a Go package directory, a
    Rust module path, a JS/TS module path without `/index`)."""
    stem = rel.rsplit(".", 1)[0]
    if language == "java":
        return f"{package}.{posixpath.basename(stem)}" if package else posixpath.basename(stem)
    if language == "go":
        return posixpath.dirname(rel) or package
    if language == "rust":
        module = stem.removeprefix("src/")
        return module.removesuffix("/mod").removesuffix("/lib").removesuffix("/main")
    return stem.removesuffix("/index") if stem.endswith("/index") else stem


def _resolve_js(rel: str, spec: str) -> str:
    """A relative JS/TS import as a project path without extension; package imports unchanged."""
    if not spec.startswith("."):
        return spec
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), spec))
    root, ext = posixpath.splitext(joined)
    if ext in (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs", ".mts", ".cts"):
        joined = root
    return joined.removesuffix("/index")


def _rust_use(argument: str) -> str:
    path = argument.split("{", 1)[0].strip(": ")
    parts = [p for p in path.split("::") if p and p not in ("crate", "self", "super")]
    return "/".join(parts)
