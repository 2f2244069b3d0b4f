"""SQL helpers and row mapping shared by the brain's SQLite store and its vector index."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mcp_sections.shared.brain.model import (
    Node,
    Project,
)
from mcp_sections.shared.text.fulltext import match_expression

if TYPE_CHECKING:  # pragma: no cover
    pass

#: Words that say how to ask rather than what to find, on top of the common stop words.
QUERY_STOPWORDS = ("find", "show", "code")
MAX_QUERY_TERMS = 24
BM25_WEIGHTS = "8.0, 4.0, 2.0, 1.0"  # name, keywords, path, content
MAX_WALK_ROWS = 20_000
BATCH = 500


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for a brain query (see `shared.text.fulltext`)."""
    return match_expression(text, max_terms=MAX_QUERY_TERMS, extra_stopwords=QUERY_STOPWORDS)


def chunks(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def placeholders(count: int) -> str:
    return ",".join("?" * count)


def under(column: str) -> str:
    """SQL condition: `column` equals ? or lies under ? + '/' (component-wise, no LIKE wildcards)."""
    return f"({column} = ? OR substr({column}, 1, length(?) + 1) = ? || '/')"


def resolve_module(target: str, modules: dict[str, str]) -> str | None:
    """Best-effort import resolution: exact module key, then shorter dotted/slashed suffixes."""
    if target in modules:
        return modules[target]
    for sep in (".", "/"):
        if sep in target:
            parts = target.split(sep)
            for start in range(1, len(parts)):
                candidate = sep.join(parts[start:])
                if candidate in modules:
                    return modules[candidate]
            # `from pkg.mod import name`: the module may be the prefix
            for end in range(len(parts) - 1, 0, -1):
                candidate = sep.join(parts[:end])
                if candidate in modules:
                    return modules[candidate]
    return None


def project_from_row(row: sqlite3.Row) -> Project:
    return Project(
        id=row["id"],
        name=row["name"],
        root=row["root"],
        type=row["type"],
        created_at=row["created_at"],
        last_accessed=row["last_accessed"],
        last_ingest=row["last_ingest"],
        auto_cleanup=bool(row["auto_cleanup"]),
        retention_days=row["retention_days"],
        node_count=row["node_count"],
        status=row["status"],
        needs_relink=bool(row["needs_relink"]),
    )


def node_from_row(row: sqlite3.Row) -> Node:
    return Node(
        id=row["id"],
        label=row["label"],
        project_id=row["project_id"],
        name=row["name"],
        path=row["path"],
        file_id=row["file_id"],
        start_line=row["start_line"],
        end_line=row["end_line"],
        content=row["content"],
        keywords=row["keywords"],
        embed_text=row["embed_text"],
        props=json.loads(row["props"] or "{}"),
    )
