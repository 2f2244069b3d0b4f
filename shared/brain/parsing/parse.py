"""One file's bytes to graph records: the parser of its language, plain chunks when it has none or fails."""

from __future__ import annotations

import posixpath

from mcp_sections.shared.brain.model import (
    ParsedFile,
    text_hash,
)
from mcp_sections.shared.brain.parsing.builder import Builder, chunk_text
from mcp_sections.shared.brain.parsing.files import PROSE_EXTENSIONS, language_of
from mcp_sections.shared.brain.parsing.grammars import TREE_SITTER_LANGUAGES, parse_tree_sitter, ts_parser
from mcp_sections.shared.brain.parsing.markdown_docs import parse_markdown, parse_rst
from mcp_sections.shared.brain.parsing.python_code import parse_python

PARSE_VERSION = 3
"""Bumped whenever parsing writes other records for the same bytes (nodes, keywords, embed texts): a file whose record
another version wrote is parsed again at the next ingest, whatever its size and time, and counts as stale until then
(unchanged embed texts keep their cached vectors). 1: the bare sha256 of the bytes; 2: identifiers split one way for
the index and the ranking (`split_identifier`); 3: the top-level code of JS/TS, Go, Rust and Java as blocks,
module-level blocks cut at CHUNK_CHARS, JS/TS routes and functions held by values as definitions, a file of code that
gives no definition nor block kept as plain chunks."""


def file_digest(data: bytes) -> str:
    """What a file's record keeps of its bytes: the parse version and their sha256."""
    return f"{PARSE_VERSION}:{text_hash(data)}"


def parsed_now(digest: str) -> bool:
    """Whether a record with this digest was written by this version of the parsers."""
    return digest.startswith(f"{PARSE_VERSION}:")


def parse_file(project_id: str, rel: str, data: bytes, mtime_ns: int = 0) -> ParsedFile:
    """Parse one file's bytes (already known to be text) into graph records."""
    text = data.decode("utf-8", errors="replace")
    language = language_of(rel)
    builder = Builder(project_id, rel, language, file_digest(data), len(data), mtime_ns)
    try:
        if language == "python":
            parse_python(builder, text)
        elif language in TREE_SITTER_LANGUAGES and ts_parser(language) is not None:
            parse_tree_sitter(builder, text, data, language)
        elif language == "markdown":
            parse_markdown(builder, text)
        elif language == "rst":
            parse_rst(builder, text)
        else:
            chunk_text(builder, text, prose=posixpath.splitext(rel)[1].lower() in PROSE_EXTENSIONS)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        builder = Builder(project_id, rel, language, file_digest(data), len(data), mtime_ns)
        builder.file.props["parse_error"] = True
        chunk_text(builder, text, prose=False)
    if len(builder.nodes) == 1 and text.strip():  # only imports or comments: searchable as text all the same
        chunk_text(builder, text, prose=False)
    return builder.done()
