"""JavaScript, TypeScript/TSX, Go, Rust and Java through tree-sitter grammars from PyPI, imported lazily
(`pip install 'mcp-sections[rag]'`); a missing grammar means the file is indexed as plain chunks."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp_sections.shared.brain.parsing.builder import Builder
from mcp_sections.shared.brain.parsing.files import MAX_SCOPES_PER_FILE

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
_NAME_TYPES = frozenset(
    {"identifier", "property_identifier", "field_identifier", "type_identifier", "shorthand_property_identifier"}
)
_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})


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


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def _ts_name(node: Any) -> str:
    """A definition's name: its `name` field, or a Rust `impl`'s "Trait for Type" (or its type alone)."""
    if node.type == "impl_item":
        trait = node.child_by_field_name("trait")
        typ = _text(node.child_by_field_name("type"))
        return f"{_text(trait)} for {typ}" if trait is not None else typ
    return _text(node.child_by_field_name("name"))


def _callee(node: Any, field: str) -> str:
    target = node.child_by_field_name(field)
    while target is not None and target.type not in _NAME_TYPES:
        nxt = (
            target.child_by_field_name("property")
            or target.child_by_field_name("field")
            or target.child_by_field_name("name")
            or target.child_by_field_name("function")
        )
        if nxt is None:
            named = [c for c in target.named_children if c.type in _NAME_TYPES]
            nxt = named[-1] if named else None
        target = nxt
    return _text(target)


def _leading_comment(node: Any) -> str:
    comments = []
    current = node
    anchor = node.parent if node.parent is not None and node.parent.type == "export_statement" else node
    current = anchor.prev_named_sibling
    row = anchor.start_point[0]
    while current is not None and current.type in _COMMENT_TYPES and current.end_point[0] >= row - 1:
        comments.append(_text(current))
        row = current.start_point[0]
        current = current.prev_named_sibling
    lines = []
    for comment in reversed(comments):
        for line in comment.splitlines():
            line = re.sub(r"^\s*(///?|/\*\*?|\*/|\*|#)\s?", "", line).rstrip()
            line = re.sub(r"\*/\s*$", "", line).rstrip()
            if line:
                lines.append(line)
    return "\n".join(lines)


def _signature(node: Any, data: bytes, spec: TSLanguage) -> str:
    body = None
    for field in spec.body_fields:
        body = node.child_by_field_name(field)
        if body is not None:
            break
    if node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        body = value.child_by_field_name("body") if value is not None else None
    end = body.start_byte if body is not None else node.end_byte
    head = data[node.start_byte : end].decode("utf-8", errors="replace")
    head = " ".join(head.split())
    if body is None:
        head = head.split("{", 1)[0]
    return head.rstrip(" {=>:")[:240]


JS_LIKE = ("javascript", "typescript", "tsx")
FUNCTION_VALUES = ("arrow_function", "function_expression", "function")  # `const f = () => ...` defines f
TYPE_KINDS = ("class", "interface", "struct", "enum", "type")  # scopes whose calls are their members'


def parse_tree_sitter(builder: Builder, text: str, data: bytes, language: str) -> None:
    spec = TREE_SITTER_LANGUAGES[language]
    parser = ts_parser(language)
    root = parser.parse(data).root_node
    walk = _SyntaxWalk(builder, data, language, spec)
    walk.visit(root, builder.file_id, "", None)
    builder.imports(walk.imports)
    builder.file.props["module"] = _module_name(language, builder.rel, walk.package)
    first = root.named_children[0] if root.named_children else None
    if first is not None and first.type in _COMMENT_TYPES:
        builder.file.props["summary"] = _leading_comment_text(_text(first))


class _SyntaxWalk:
    """One file's syntax tree walked once: its definitions as scopes (at most `MAX_SCOPES_PER_FILE`), its imports
    and its package."""

    def __init__(self, builder: Builder, data: bytes, language: str, spec: TSLanguage) -> None:
        self.builder = builder
        self.data = data
        self.language = language
        self.spec = spec
        self.imports: list[str] = []
        self.package = ""
        self.count = 0
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

    def visit(self, node: Any, parent: str, prefix: str, parent_kind: str | None) -> None:
        for child in node.named_children:
            if self.count >= MAX_SCOPES_PER_FILE:
                return
            kind = self._kind_of(child)
            if kind is not None:
                name = _ts_name(child)
                if name:
                    sid = self.define(child, kind, name, parent, prefix, parent_kind)
                    self.visit(child, sid, f"{prefix}.{name}" if prefix else name, kind)
                    continue
            statement = self.statements.get(child.type)
            if statement is not None:
                statement(child)
            self.visit(child, parent, prefix, parent_kind)

    def _kind_of(self, node: Any) -> str | None:
        """The scope kind `node` defines, or None."""
        kind = self.spec.defs.get(node.type)
        if kind is None and node.type == "variable_declarator" and self.language in JS_LIKE:
            value = node.child_by_field_name("value")
            if value is not None and value.type in FUNCTION_VALUES:
                kind = "function"
        return kind

    def define(self, node: Any, kind: str, name: str, parent: str, prefix: str, parent_kind: str | None) -> str:
        self.count += 1
        if kind == "function" and parent_kind in self.spec.containers:
            kind = "method"
        if node.type == "method_declaration" and self.language == "go":
            receiver = node.child_by_field_name("receiver")
            rtype = re.sub(r"[^\w]", " ", _text(receiver)).split()
            prefix = rtype[-1] if rtype else prefix
        qualname = f"{prefix}.{name}" if prefix else name
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        declaration = node.parent if node.type == "variable_declarator" else node  # `const f = ...` as a whole
        content = self._source(declaration if declaration is not None else node)
        return self.builder.scope(
            parent=parent,
            kind=kind,
            name=name,
            qualname=qualname,
            signature=_signature(node, self.data, self.spec),
            docstring=_leading_comment(declaration),
            start=start,
            end=end,
            content=content,
            calls=self.calls_in(node) if kind not in TYPE_KINDS else [],
        )

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
                name = _callee(item, field)
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
            self.imports.append(_resolve_js(self.builder.rel, _text(source).strip("'\"`")))

    def _go_import(self, node: Any) -> None:
        self.imports.append(_text(node.child_by_field_name("path")).strip('"`'))

    def _rust_use(self, node: Any) -> None:
        self.imports.append(_rust_use(_text(node.child_by_field_name("argument"))))

    def _java_import(self, node: Any) -> None:
        if self.language == "java":
            self.imports.append(_text(node).removeprefix("import").removeprefix(" static").strip(" ;").rstrip(".*"))

    def _java_package(self, node: Any) -> None:
        self.package = _text(node).removeprefix("package").strip(" ;")

    def _go_package(self, node: Any) -> None:
        self.package = _text(node).removeprefix("package").strip()

    def _js_require(self, node: Any) -> None:
        if self.language not in JS_LIKE:
            return
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if _text(func) == "require" and args is not None and args.named_children:
            self.imports.append(_resolve_js(self.builder.rel, _text(args.named_children[0]).strip("'\"`")))


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


def _leading_comment_text(comment: str) -> str:
    lines = [re.sub(r"^\s*(///?|//!|/\*\*?|\*/|\*)\s?", "", line).rstrip() for line in comment.splitlines()]
    return "\n".join(line for line in lines if line and line != "/")[:1000]


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
