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


def _ts_name(node: Any, language: str) -> str:
    if node.type == "impl_item":
        trait = node.child_by_field_name("trait")
        typ = _text(node.child_by_field_name("type"))
        return f"{_text(trait)} for {typ}" if trait is not None else typ
    name = node.child_by_field_name("name")
    if name is None and node.type == "variable_declarator":
        name = node.child_by_field_name("name")
    return _text(name)


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


def parse_tree_sitter(builder: Builder, text: str, data: bytes, language: str) -> None:
    spec = TREE_SITTER_LANGUAGES[language]
    parser = ts_parser(language)
    tree = parser.parse(data)
    root = tree.root_node
    imports: list[str] = []
    package = ""
    count = 0

    def calls_in(node: Any) -> list[str]:
        names: list[str] = []
        stack = list(node.named_children)
        while stack:
            item = stack.pop()
            if item.type in spec.defs:
                continue
            field = spec.call_types.get(item.type)
            if field:
                name = _callee(item, field)
                if name:
                    names.append(name)
            stack.extend(item.named_children)
        return names

    def define(node: Any, kind: str, name: str, parent: str, prefix: str, parent_kind: str | None) -> str:
        nonlocal count
        count += 1
        if kind == "function" and parent_kind in spec.containers:
            kind = "method"
        if node.type == "method_declaration" and language == "go":
            receiver = node.child_by_field_name("receiver")
            rtype = re.sub(r"[^\w]", " ", _text(receiver)).split()
            prefix = rtype[-1] if rtype else prefix
        qualname = f"{prefix}.{name}" if prefix else name
        start, end = node.start_point[0] + 1, node.end_point[0] + 1
        content = data[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
        if node.type == "variable_declarator" and node.parent is not None:
            content = data[node.parent.start_byte : node.parent.end_byte].decode("utf-8", errors="replace")
        sid = builder.scope(
            parent=parent,
            kind=kind,
            name=name,
            qualname=qualname,
            signature=_signature(node, data, spec),
            docstring=_leading_comment(node if node.type != "variable_declarator" else node.parent),
            start=start,
            end=end,
            content=content,
            calls=calls_in(node) if kind not in ("class", "interface", "struct", "enum", "type") else [],
        )
        return sid

    def visit(node: Any, parent: str, prefix: str, parent_kind: str | None) -> None:
        nonlocal package
        for child in node.named_children:
            if count >= MAX_SCOPES_PER_FILE:
                return
            ctype = child.type
            kind = spec.defs.get(ctype)
            if kind is None and ctype == "variable_declarator" and language in ("javascript", "typescript", "tsx"):
                value = child.child_by_field_name("value")
                if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                    kind = "function"
            if kind is not None:
                name = _ts_name(child, language)
                if name:
                    sid = define(child, kind, name, parent, prefix, parent_kind)
                    qual = f"{prefix}.{name}" if prefix else name
                    visit(child, sid, qual, kind)
                    continue
            # imports
            if ctype in ("import_statement", "export_statement") and language != "java":
                source = child.child_by_field_name("source")
                if source is not None:
                    imports.append(_resolve_js(builder.rel, _text(source).strip("'\"`")))
            elif ctype == "import_spec":
                imports.append(_text(child.child_by_field_name("path")).strip('"`'))
            elif ctype == "use_declaration":
                imports.append(_rust_use(_text(child.child_by_field_name("argument"))))
            elif ctype == "import_declaration" and language == "java":
                imports.append(_text(child).removeprefix("import").removeprefix(" static").strip(" ;").rstrip(".*"))
            elif ctype == "package_declaration":
                package = _text(child).removeprefix("package").strip(" ;")
            elif ctype == "package_clause":
                package = _text(child).removeprefix("package").strip()
            elif ctype == "call_expression" and language in ("javascript", "typescript", "tsx"):
                func = child.child_by_field_name("function")
                args = child.child_by_field_name("arguments")
                if _text(func) == "require" and args is not None and args.named_children:
                    imports.append(_resolve_js(builder.rel, _text(args.named_children[0]).strip("'\"`")))
            visit(child, parent, prefix, parent_kind)

    visit(root, builder.file_id, "", None)
    builder.imports(imports)
    stem = builder.rel.rsplit(".", 1)[0]
    if language == "java":
        builder.file.props["module"] = f"{package}.{posixpath.basename(stem)}" if package else posixpath.basename(stem)
    elif language == "go":
        builder.file.props["module"] = posixpath.dirname(builder.rel) or package
    elif language == "rust":
        module = stem.removeprefix("src/")
        module = module.removesuffix("/mod").removesuffix("/lib").removesuffix("/main")
        builder.file.props["module"] = module
    else:
        builder.file.props["module"] = stem.removesuffix("/index") if stem.endswith("/index") else stem
    first = root.named_children[0] if root.named_children else None
    if first is not None and first.type in _COMMENT_TYPES:
        builder.file.props["summary"] = _leading_comment_text(_text(first))


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
