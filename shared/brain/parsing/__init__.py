"""From files to graph records: directory walking with filters, and real parsers per language.

- Python: the standard `ast` module. JavaScript, TypeScript/TSX, Go, Rust, Java: tree-sitter grammars
  from PyPI (`pip install 'mcp-sections[rag]'`), imported lazily; when a grammar is missing the file is
  indexed as plain text chunks. In every language the top-level code outside definitions and imports becomes
  `block` scopes (runs of statements up to ~1,500 characters, named from their first statement); in JS/TS,
  express-style route registrations (`app.get("/api/items", ...)`) and functions held by values (`exports.f =
  async () => ...`, object properties, class fields) are definitions too (`js_code`). A file of code that gives
  no node (imports alone) is kept as plain chunks. Markdown: split by ATX headings (fenced code ignored);
  reStructuredText by its underlined titles (`markdown_docs`). Other text files: chunks of ~1,500 characters
  on line boundaries.
- The walk honours `.gitignore` files (from the project root down), skips vendored/build directories,
  binary files, lock/minified files, symbolic links and secrets (`.env*`, keys, `*.pem`, files holding a
  private key block), never following links out of the tree.
- What gets embedded is chosen here: a compact text per scope (path, kind, qualified name, signature,
  docstring, first lines), per document section (heading path + first lines) and per prose chunk.

Modules: `files` (what is read, the filtered walk), `builder` (records in the making, embed texts, module-level
blocks, chunks), `parse` (the dispatch by language, the parse version), `python_code`, `grammars` (tree-sitter
languages), `tree_nodes` (reading their nodes), `js_code` (what JS/TS define through values), `markdown_docs`.
"""

from mcp_sections.shared.brain.parsing.builder import Builder, chunk_markdown, chunk_text
from mcp_sections.shared.brain.parsing.files import (
    LANGUAGES,
    WalkEntry,
    WalkStats,
    holds_private_key,
    is_secret_name,
    looks_binary,
    walk_tree,
)
from mcp_sections.shared.brain.parsing.grammars import tree_sitter_available
from mcp_sections.shared.brain.parsing.parse import PARSE_VERSION, file_digest, parse_file, parsed_now

__all__ = [
    "LANGUAGES",
    "PARSE_VERSION",
    "Builder",
    "WalkEntry",
    "WalkStats",
    "chunk_markdown",
    "chunk_text",
    "file_digest",
    "holds_private_key",
    "is_secret_name",
    "looks_binary",
    "parse_file",
    "parsed_now",
    "tree_sitter_available",
    "walk_tree",
]
