"""From files to graph records: directory walking with filters, and real parsers per language.

- Python: the standard `ast` module. JavaScript, TypeScript/TSX, Go, Rust, Java: tree-sitter grammars
  from PyPI (`pip install 'mcp-sections[rag]'`), imported lazily; when a grammar is missing the file is
  indexed as plain text chunks. Markdown: split by ATX headings (fenced code ignored). Other text files:
  chunks of ~1,500 characters on line boundaries.
- The walk honours `.gitignore` files (from the project root down), skips vendored/build directories,
  binary files, lock/minified files, symbolic links and secrets (`.env*`, keys, `*.pem`, files holding a
  private key block), never following links out of the tree.
- What gets embedded is chosen here: a compact text per scope (path, kind, qualified name, signature,
  docstring, first lines), per document section (heading path + first lines) and per prose chunk.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp_sections.shared.brain.model import (
    Edge,
    FileRecord,
    Node,
    ParsedFile,
    Ref,
    node_id,
    project_node_id,
    split_identifier,
    text_hash,
)
from mcp_sections.shared.gitignore import rules_down_to
from mcp_sections.shared.guards.paths import SECRET_FILE_GLOBS
from mcp_sections.shared.walking import WalkStats as WalkerStats
from mcp_sections.shared.walking import walk

MAX_FILE_BYTES = 1_000_000
MAX_SCOPE_CHARS = 20_000
MAX_EMBED_CHARS = 240
"""Embedded texts are short (~60 tokens): MiniLM runs ~70 texts/s at this length on 2 CPU cores, ~30/s at 500
characters. Names, signatures and the first docstring paragraph carry the meaning; bodies stay text-searchable."""
TRIVIAL_LINES = 3
CHUNK_CHARS = 1_500
MAX_CHUNKS_PER_FILE = 200
MAX_SCOPES_PER_FILE = 2_000
MAX_REFS_PER_SCOPE = 100

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "bower_components",
        "dist",
        "build",
        "target",
        "out",
        ".venv",
        "venv",
        ".env",
        "env",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".eggs",
        ".idea",
        ".vscode",
        ".next",
        ".nuxt",
        ".cache",
        ".gradle",
        ".terraform",
        "coverage",
        "htmlcov",
        "site-packages",
        "vendor",
        ".ssh",
        ".gnupg",
        ".aws",
    }
)
SKIP_DIR_GLOBS = ("*.egg-info",)

SECRET_GLOBS: tuple[str, ...] = (
    *SECRET_FILE_GLOBS,
    "*.ppk",
    "*.gpg",
    "*.asc",
    "*.ovpn",
    "credentials",
    "secrets.*",
    "*.secret",
    "*.secrets",
)
"""Names never ingested: the path guard's secret files plus more that rarely hold code worth indexing."""
_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")

BINARY_EXTENSIONS = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tiff",
        ".psd",
        ".svgz",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".so",
        ".dll",
        ".dylib",
        ".exe",
        ".bin",
        ".o",
        ".a",
        ".obj",
        ".class",
        ".pyc",
        ".pyo",
        ".whl",
        ".egg",
        ".wasm",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".avi",
        ".mov",
        ".mkv",
        ".webm",
        ".sqlite",
        ".sqlite3",
        ".db",
        ".pkl",
        ".pickle",
        ".npy",
        ".npz",
        ".pt",
        ".pth",
        ".onnx",
        ".safetensors",
        ".parquet",
        ".feather",
        ".h5",
        ".hdf5",
        ".glb",
        ".gltf",
        ".blend",
        ".fbx",
        ".iso",
        ".dmg",
        ".deb",
        ".rpm",
    ]
)
SKIP_FILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "cargo.lock", "uv.lock", "composer.lock"}
)
SKIP_FILE_GLOBS = ("*.min.js", "*.min.css", "*.map", "*.lock")

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
}
PROSE_EXTENSIONS = frozenset({".txt", ".rst", ".adoc", ".org", ".tex", ".html", ".htm", ""})


def language_of(path: str) -> str:
    ext = posixpath.splitext(path)[1].lower()
    return LANGUAGES.get(ext, ext.lstrip(".") or "text")


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, glob) for glob in SECRET_GLOBS)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def holds_private_key(data: bytes) -> bool:
    return _PRIVATE_KEY.search(data) is not None


# ---- the walk --------------------------------------------------------------------------------------


@dataclass
class WalkEntry:
    path: str  # absolute
    rel: str  # relative to the project root, posix
    size: int
    mtime_ns: int


@dataclass
class WalkStats:
    skipped_secret: int = 0
    skipped_ignored: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    skipped_other: int = 0
    skipped_projects: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def walk_tree(
    root: str,
    start_rel: str = "",
    *,
    excluded: Sequence[str] = (),
    max_file_bytes: int = MAX_FILE_BYTES,
    stats: WalkStats | None = None,
    extra_secret: Callable[[str], bool] | None = None,
) -> Iterator[WalkEntry]:
    """Files under `root/start_rel` worth ingesting, sorted, with the filters of the module docstring
    (on the suite's one walker, `shared.walking`, with the .gitignore files of the whole git tree).

    `excluded`: relative directories skipped entirely (sub-directories that are projects of their own).
    """
    stats = stats if stats is not None else WalkStats()
    excluded_set = {e.strip("/") for e in excluded if e.strip("/")}

    def skip(name: str, rel: str, is_dir: bool) -> bool:
        lowered = name.lower()
        if is_dir:
            if lowered in SKIP_DIRS or any(fnmatch.fnmatchcase(lowered, g) for g in SKIP_DIR_GLOBS):
                stats.skipped_ignored += 1
                return True
            if rel in excluded_set:
                stats.skipped_projects += 1
                return True
            return False
        if is_secret_name(name) or (extra_secret is not None and extra_secret(name)):
            stats.skipped_secret += 1
            return True
        if lowered in SKIP_FILES or any(fnmatch.fnmatchcase(lowered, g) for g in SKIP_FILE_GLOBS):
            stats.skipped_ignored += 1
            return True
        return False

    walked = WalkerStats()
    for entry in walk(
        root, start_rel=start_rel, ignore_rules=rules_down_to(root, start_rel, ancestors=True), skip=skip, stats=walked
    ):
        if entry.is_dir:
            continue
        try:
            info = os.lstat(entry.path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):  # symbolic links (never followed), devices, sockets, fifos
            stats.skipped_other += 1
            continue
        if posixpath.splitext(entry.name.lower())[1] in BINARY_EXTENSIONS:
            stats.skipped_binary += 1
            continue
        if info.st_size > max_file_bytes:
            stats.skipped_large += 1
            continue
        yield WalkEntry(entry.path, entry.rel, info.st_size, info.st_mtime_ns)
    stats.skipped_ignored += walked.skipped_ignored


# ---- parsing ---------------------------------------------------------------------------------------


class Builder:
    """Collects the nodes, edges and references of one file."""

    def __init__(self, project_id: str, rel: str, language: str, data_hash: str, size: int, mtime_ns: int) -> None:
        self.project_id = project_id
        self.rel = rel
        self.language = language
        self.file_id = node_id(project_id, "File", rel)
        self.record = FileRecord(rel, data_hash, size, mtime_ns, self.file_id)
        self.file = Node(
            id=self.file_id,
            label="File",
            project_id=project_id,
            name=posixpath.basename(rel),
            path=rel,
            file_id=self.file_id,
            keywords=" ".join(split_identifier(rel)),
            props={"language": language, "hash": data_hash, "size": size},
        )
        self.nodes: list[Node] = [self.file]
        self.edges: list[Edge] = [Edge(self.file_id, "IN_PROJECT", project_node_id(project_id))]
        self.refs: list[Ref] = []
        self._seen: set[str] = set()

    def unique(self, qualname: str) -> str:
        candidate, n = qualname, 1
        while candidate in self._seen:
            n += 1
            candidate = f"{qualname}#{n}"
        self._seen.add(candidate)
        return candidate

    def scope(
        self,
        *,
        parent: str,
        kind: str,
        name: str,
        qualname: str,
        signature: str,
        docstring: str,
        start: int,
        end: int,
        content: str,
        calls: Sequence[str] = (),
    ) -> str:
        qualname = self.unique(qualname)
        sid = node_id(self.project_id, "Scope", self.rel, qualname)
        doc = docstring.strip()
        lines = content.splitlines()
        embed = None
        if doc or len(lines) > TRIVIAL_LINES:  # trivial undocumented scopes: text search only
            embed = compact_embed_text(self.rel, kind, qualname, signature, doc, lines)
        self.nodes.append(
            Node(
                id=sid,
                label="Scope",
                project_id=self.project_id,
                name=name,
                path=self.rel,
                file_id=self.file_id,
                start_line=start,
                end_line=end,
                content=content[:MAX_SCOPE_CHARS],
                keywords=" ".join([qualname, *split_identifier(qualname), *split_identifier(signature)[:30]]),
                embed_text=embed,
                props={
                    "kind": kind,
                    "qualname": qualname,
                    "signature": signature[:300],
                    "docstring": doc[:1000],
                    "language": self.language,
                    "parent": None if parent == self.file_id else parent,
                },
            )
        )
        self.edges.append(Edge(parent, "DEFINES", sid))
        for call in list(dict.fromkeys(c for c in calls if c and c != name))[:MAX_REFS_PER_SCOPE]:
            self.refs.append(Ref(sid, "call", call))
        return sid

    def imports(self, targets: Sequence[str]) -> None:
        unique = list(dict.fromkeys(t for t in targets if t))
        self.file.props["imports"] = unique[:200]
        for target in unique[:200]:
            self.refs.append(Ref(self.file_id, "import", target))

    def done(self) -> ParsedFile:
        summary = self.file.props.pop("summary", "")
        if summary:
            self.file.content = summary[:2000]
            self.file.embed_text = f"{posixpath.basename(self.rel)}: {first_paragraph(summary)}"[:MAX_EMBED_CHARS]
        return ParsedFile(self.record, self.nodes, self.edges, self.refs)


def first_paragraph(text: str, limit: int = 160) -> str:
    paragraph = text.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())[:limit]


def compact_embed_text(rel: str, kind: str, qualname: str, signature: str, doc: str, lines: Sequence[str]) -> str:
    """`passwords.py method LoginService.login(self, user, ...): Log a user in ...` (≤ MAX_EMBED_CHARS)."""
    params = signature[signature.find("(") :] if "(" in signature else ""
    header = f"{posixpath.basename(rel)} {kind} {qualname}{params[:70]}"
    if doc:
        detail = first_paragraph(doc)
    else:
        detail = " ".join(" ".join(line.split()) for line in lines[1:4] if line.strip())[:100]
    return f"{header}: {detail}"[:MAX_EMBED_CHARS]


def parse_file(project_id: str, rel: str, data: bytes, mtime_ns: int = 0) -> ParsedFile:
    """Parse one file's bytes (already known to be text) into graph records."""
    text = data.decode("utf-8", errors="replace")
    language = language_of(rel)
    builder = Builder(project_id, rel, language, text_hash(data), len(data), mtime_ns)
    try:
        if language == "python":
            _parse_python(builder, text)
        elif language in TREE_SITTER_LANGUAGES and _ts_parser(language) is not None:
            _parse_tree_sitter(builder, text, data, language)
        elif language == "markdown":
            _parse_markdown(builder, text)
        else:
            _chunk_text(builder, text, prose=posixpath.splitext(rel)[1].lower() in PROSE_EXTENSIONS)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        builder = Builder(project_id, rel, language, text_hash(data), len(data), mtime_ns)
        builder.file.props["parse_error"] = True
        _chunk_text(builder, text, prose=False)
    return builder.done()


def _chunk_text(builder: Builder, text: str, *, prose: bool) -> None:
    chunks, current = [], []
    size = 0
    start_line = 1
    line_no = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        current.append(line)
        size += len(line) + 1
        if size >= CHUNK_CHARS:
            chunks.append((start_line, line_no, "\n".join(current)))
            current, size, start_line = [], 0, line_no + 1
    if current and "".join(current).strip():
        chunks.append((start_line, line_no, "\n".join(current)))
    for index, (start, end, content) in enumerate(chunks[:MAX_CHUNKS_PER_FILE]):
        cid = node_id(builder.project_id, "Chunk", builder.rel, str(index))
        builder.nodes.append(
            Node(
                id=cid,
                label="Chunk",
                project_id=builder.project_id,
                name=f"{builder.file.name}#{index}",
                path=builder.rel,
                file_id=builder.file_id,
                start_line=start,
                end_line=end,
                content=content,
                embed_text=" ".join(content.split())[:MAX_EMBED_CHARS] if prose and content.strip() else None,
                props={"index": index},
            )
        )
        builder.edges.append(Edge(builder.file_id, "CONTAINS", cid))


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


def _parse_python(builder: Builder, text: str) -> None:
    tree = ast.parse(text)
    lines = text.splitlines()
    module = python_module_name(builder.rel)
    builder.file.props["module"] = module
    builder.file.props["summary"] = ast.get_docstring(tree) or ""
    package = module if builder.rel.endswith("__init__.py") else module.rpartition(".")[0]

    calls_of, import_nodes = _scan_python(tree)
    imports: list[str] = []
    for item in import_nodes:
        if isinstance(item, ast.Import):
            imports += [alias.name for alias in item.names]
        elif isinstance(item, ast.ImportFrom):
            base = item.module or ""
            if item.level:
                anchor = package.split(".") if package else []
                anchor = anchor[: len(anchor) - (item.level - 1)] if item.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            if item.module is None:
                imports += [f"{base}.{alias.name}" if base else alias.name for alias in item.names]
            else:
                imports.append(base)
    builder.imports(imports)

    def source(item: ast.AST) -> tuple[int, int, str]:
        start = min([item.lineno, *(d.lineno for d in getattr(item, "decorator_list", []))])
        end = item.end_lineno or item.lineno
        return start, end, "\n".join(lines[start - 1 : end])

    count = 0

    def visit(body: Sequence[ast.stmt], parent: str, prefix: str, in_class: bool) -> None:
        nonlocal count
        for item in body:
            if count >= MAX_SCOPES_PER_FILE:
                return
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                count += 1
                start, end, content = source(item)
                is_class = isinstance(item, ast.ClassDef)
                kind = "class" if is_class else ("method" if in_class else "function")
                qualname = f"{prefix}.{item.name}" if prefix else item.name
                sid = builder.scope(
                    parent=parent,
                    kind=kind,
                    name=item.name,
                    qualname=qualname,
                    signature=_python_signature(item),
                    docstring=ast.get_docstring(item) or "",
                    start=start,
                    end=end,
                    content=content,
                    calls=[] if is_class else calls_of.get(id(item), []),
                )
                visit(item.body, sid, qualname, is_class)

    visit(tree.body, builder.file_id, "", False)

    # Module-level blocks: runs of top-level statements that are neither definitions nor imports.
    run: list[ast.stmt] = []

    def flush() -> None:
        if not run:
            return
        first, last = run[0], run[-1]
        start, end = first.lineno, last.end_lineno or last.lineno
        name = _block_name(first)
        calls = [c for stmt in run for c in calls_of.get(id(stmt), [])]
        builder.scope(
            parent=builder.file_id,
            kind="block",
            name=name,
            qualname=name,
            signature=lines[start - 1].strip()[:200] if start - 1 < len(lines) else "",
            docstring="",
            start=start,
            end=end,
            content="\n".join(lines[start - 1 : end]),
            calls=calls,
        )
        run.clear()

    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the module docstring
    for item in body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            flush()
        else:
            run.append(item)
    flush()


def _block_name(stmt: ast.stmt) -> str:
    target: ast.AST | None = None
    if isinstance(stmt, ast.Assign) and stmt.targets:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        target = stmt.target
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(stmt, ast.If) and "__main__" in ast.unparse(stmt.test):
        return "__main__"
    return f"block@L{stmt.lineno}"


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


def _ts_parser(language: str) -> Any:
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


def _parse_tree_sitter(builder: Builder, text: str, data: bytes, language: str) -> None:
    spec = TREE_SITTER_LANGUAGES[language]
    parser = _ts_parser(language)
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


# ---- Markdown ----------------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _parse_markdown(builder: Builder, text: str) -> None:
    lines = text.splitlines()
    sections: list[tuple[int, str, int]] = []  # (level, title, line index)
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            match = _HEADING.match(line)
            if match:
                sections.append((len(match.group(1)), match.group(2).strip(), index))
    first = sections[0][2] if sections else len(lines)
    preamble = "\n".join(lines[:first])
    if preamble.strip():
        sub = Builder(builder.project_id, builder.rel, builder.language, "", 0, 0)
        sub.nodes = []
        sub.edges = []
        _chunk_text(sub, preamble, prose=True)
        builder.nodes += sub.nodes
        builder.edges += [Edge(builder.file_id, "CONTAINS", n.id) for n in sub.nodes]
        builder.refs += _links(builder, sub.nodes[0].id if sub.nodes else builder.file_id, preamble)
    if sections:
        builder.file.props["summary"] = sections[0][1]
    stack: list[tuple[int, str, str]] = []  # (level, node id, heading path)
    for position, (level, title, start) in enumerate(sections):
        end = sections[position + 1][2] if position + 1 < len(sections) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent_id = stack[-1][1] if stack else builder.file_id
        heading_path = f"{stack[-1][2]} > {title}" if stack else title
        qualname = builder.unique(heading_path)
        sid = node_id(builder.project_id, "DocumentSection", builder.rel, qualname)
        content = "\n".join(lines[start:end])
        body = "\n".join(lines[start + 1 : end]).strip()
        builder.nodes.append(
            Node(
                id=sid,
                label="DocumentSection",
                project_id=builder.project_id,
                name=title[:200],
                path=builder.rel,
                file_id=builder.file_id,
                start_line=start + 1,
                end_line=end,
                content=content[:MAX_SCOPE_CHARS],
                keywords=" ".join(split_identifier(heading_path)),
                embed_text=f"{heading_path[:100]}: {' '.join(body.split())}"[:MAX_EMBED_CHARS] if body else None,
                props={"level": level, "heading_path": heading_path[:500]},
            )
        )
        builder.edges.append(Edge(parent_id, "CONTAINS", sid))
        builder.refs += _links(builder, sid, body)
        stack.append((level, sid, heading_path))


def _links(builder: Builder, source: str, text: str) -> list[Ref]:
    refs = []
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://")):
            refs.append(Ref(source, "link", target.split("#", 1)[0]))
        elif not target.startswith(("#", "mailto:")) and "://" not in target:
            path = target.split("#", 1)[0].split("?", 1)[0]
            if path:
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(builder.rel), path))
                if not resolved.startswith(".."):
                    refs.append(Ref(source, "link", resolved))
    return refs[:200]
