"""Python, read with the standard `ast` module: modules, classes, functions, imports, calls."""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Sequence

from mcp_sections.shared.brain.parsing.builder import Builder, Statement, module_blocks
from mcp_sections.shared.brain.parsing.files import MAX_SCOPES_PER_FILE
from mcp_sections.shared.text.python_syntax import parse_module

# ---- Python (ast) ------------------------------------------------------------------------------------


def python_module_name(rel: str) -> str:
    stem = rel[: -len(posixpath.splitext(rel)[1])] if "." in posixpath.basename(rel) else rel
    parts = stem.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts)


def _scan_python(tree: ast.Module) -> tuple[dict[int, list[str]], list[ast.Import | ast.ImportFrom]]:
    """One pass: the names called inside each definition / top-level statement (keyed by `id(node)`,
    not descending into nested definitions) and every import statement."""
    calls: dict[int, list[str]] = {}
    imports: list[ast.Import | ast.ImportFrom] = []
    stack: list[tuple[ast.AST, int]] = [(stmt, id(stmt)) for stmt in tree.body]
    while stack:
        node, owner = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(node)
            continue
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name:
                calls.setdefault(owner, []).append(name)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                stack.append((child, id(child)))
            else:
                stack.append((child, owner))
    return calls, imports


def _python_signature(item: ast.AST) -> str:
    if isinstance(item, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in item.bases)
        return f"class {item.name}({bases})" if bases else f"class {item.name}"
    assert isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    prefix = "async def" if isinstance(item, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(item.returns)}" if item.returns else ""
    return f"{prefix} {item.name}({ast.unparse(item.args)}){returns}"


def parse_python(builder: Builder, text: str) -> None:
    tree = parse_module(text)
    lines = text.splitlines()
    module = python_module_name(builder.rel)
    builder.file.props["module"] = module
    builder.file.props["summary"] = ast.get_docstring(tree) or ""
    package = module if builder.rel.endswith("__init__.py") else module.rpartition(".")[0]
    calls_of, import_nodes = _scan_python(tree)
    builder.imports(_imported_modules(import_nodes, package))
    _PythonScopes(builder, lines, calls_of).visit(tree.body, builder.file_id, "", False)
    _module_blocks(builder, tree, lines, calls_of)


def _imported_modules(import_nodes: Sequence[ast.Import | ast.ImportFrom], package: str) -> list[str]:
    """The modules the import statements name, relative imports resolved against `package`."""
    imports: list[str] = []
    for node in import_nodes:
        if isinstance(node, ast.Import):
            imports += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".") if package else []
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            if node.module is None:
                imports += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
            else:
                imports.append(base)
    return imports


class _PythonScopes:
    """The classes and functions of one module, nested, as scopes (at most `MAX_SCOPES_PER_FILE`)."""

    def __init__(self, builder: Builder, lines: list[str], calls_of: dict[int, list[str]]) -> None:
        self.builder = builder
        self.lines = lines
        self.calls_of = calls_of
        self.count = 0

    def source(self, item: ast.stmt) -> tuple[int, int, str]:
        start = min([item.lineno, *(d.lineno for d in getattr(item, "decorator_list", []))])
        end = item.end_lineno or item.lineno
        return start, end, "\n".join(self.lines[start - 1 : end])

    def visit(self, body: Sequence[ast.stmt], parent: str, prefix: str, in_class: bool) -> None:
        for item in body:
            if self.count >= MAX_SCOPES_PER_FILE:
                return
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.count += 1
                start, end, content = self.source(item)
                is_class = isinstance(item, ast.ClassDef)
                kind = "class" if is_class else ("method" if in_class else "function")
                qualname = f"{prefix}.{item.name}" if prefix else item.name
                sid = self.builder.scope(
                    parent=parent,
                    kind=kind,
                    name=item.name,
                    qualname=qualname,
                    signature=_python_signature(item),
                    docstring=ast.get_docstring(item) or "",
                    start=start,
                    end=end,
                    content=content,
                    calls=[] if is_class else self.calls_of.get(id(item), []),
                )
                self.visit(item.body, sid, qualname, is_class)


def _module_blocks(builder: Builder, tree: ast.Module, lines: list[str], calls_of: dict[int, list[str]]) -> None:
    """Module-level blocks: runs of top-level statements that are neither definitions nor imports."""
    body: list[ast.stmt] = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the module docstring
    definitions = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
    statements = [
        Statement(item.lineno, item.end_lineno or item.lineno, "boundary")
        if isinstance(item, definitions)
        else Statement(
            item.lineno, item.end_lineno or item.lineno, name=_block_name(item), calls=tuple(calls_of.get(id(item), []))
        )
        for item in body
    ]
    module_blocks(builder, lines, statements)


def _block_name(stmt: ast.stmt) -> str | None:
    target: ast.AST | None = None
    if isinstance(stmt, ast.Assign) and stmt.targets:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        target = stmt.target
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
        return "__main__"
    return None
