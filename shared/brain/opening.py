"""Opening the brain's store and its embedding service from settings: one way for every section that writes it.

rag_ops and web_ops read and write the same brain: `<data_dir>/brain.sqlite3` by default, or the Neo4j server
named by `NEO4J_URI` / `NEO4J_USERNAME` / `NEO4J_PASSWORD` (or `NEO4J_PASSWORD_FILE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

BrainBackend = Literal["sqlite", "neo4j"]
SQLITE_FILE = "brain.sqlite3"  # the embedded brain, in the data directory


def open_brain_store(backend: BrainBackend, data_dir: Path) -> Any:
    """The brain store of this backend (a `BrainStore`)."""
    if backend == "neo4j":
        from mcp_sections.shared.brain.neo4j_backend import Neo4jBrainStore

        return Neo4jBrainStore.from_env()
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore

    return SQLiteBrainStore(data_dir / SQLITE_FILE)


def open_embedding_service(settings: Any, store: Any, data_dir: Path, cache_dir: Path) -> Any:
    """The embedding service for a store (`settings` mixes in `EmbeddingSettings`); vectors are cached by (model,
    content hash) in the store's own database, or beside it for a store without one (Neo4j)."""
    from mcp_sections.shared.embeddings import (
        EMBEDDING_CACHE_SCHEMA,
        EmbeddingCache,
        EmbeddingService,
        get_embedder,
    )
    from mcp_sections.shared.store.sqlite import Database

    cache_db = store.database if hasattr(store, "database") else None
    if cache_db is None:
        cache_db = Database(data_dir / "brain-embeddings.sqlite3", [EMBEDDING_CACHE_SCHEMA])
    return EmbeddingService(get_embedder(settings, cache_dir), EmbeddingCache(cache_db))
