"""The embedding cache (model, content hash) -> vector in the caller's SQLite database, and the service
that embeds through it."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from mcp_sections.shared.store.sqlite import Database


from mcp_sections.shared.embeddings.embedder import Embedder
from mcp_sections.shared.embeddings.settings import EmbeddingUnavailable
from mcp_sections.shared.embeddings.vectors import content_hash, from_blob, to_blob

logger = logging.getLogger("mcp_sections.embeddings")

EMBEDDING_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_cache (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (model, content_hash)
);
"""
"""Migration text a section includes in its own migrations to host the embeddings cache.

A rowid table on purpose: a WITHOUT ROWID row keeps only ~1 KB in its page, so every 1.5 KB vector
would spill into an overflow page of its own (measured: 4 KB per cached vector instead of ~1.7 KB)."""


class EmbeddingCache:
    """(model, content hash) → vector, in a table of the caller's database (`EMBEDDING_CACHE_SCHEMA`)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def lookup(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self.database.read() as connection:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    "SELECT content_hash, dim, vector FROM embedding_cache "
                    f"WHERE model = ? AND content_hash IN ({marks})",
                    [model, *chunk],
                ).fetchall()
                for row in rows:
                    found[row["content_hash"]] = from_blob(row["vector"], row["dim"])
        return found

    def store(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        if not vectors:
            return
        now = time.time()
        with self.database.write() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO embedding_cache(model, content_hash, dim, vector, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(model, key, int(vector.shape[0]), to_blob(vector), now) for key, vector in vectors.items()],
            )

    def count(self, model: str | None = None) -> int:
        with self.database.read() as connection:
            if model is None:
                return connection.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
            return connection.execute("SELECT count(*) FROM embedding_cache WHERE model = ?", (model,)).fetchone()[0]


class EmbeddingService:
    """An embedder plus its cache: `embed` never runs the model twice on the same content."""

    QUERY_CACHE_SIZE = 256

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None) -> None:
        self.embedder = embedder
        self.cache = cache
        self.model_calls = 0  # texts actually sent to the model (for tests and benchmarks)
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def model_key(self) -> str:
        return self.embedder.model_key

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of `texts` (cached ones from the cache, the rest from the model in batches)."""
        import numpy as np

        if not self.embedder.ready:
            raise EmbeddingUnavailable(self.embedder.describe(), loading=self.embedder.status != "failed")
        hashes = [content_hash(text) for text in texts]
        known = self.cache.lookup(self.model_key, hashes) if self.cache is not None else {}
        dim = self.embedder.dimension or 0
        known = {key: vector for key, vector in known.items() if vector.shape[0] == dim}
        missing: dict[str, str] = {}
        for key, text in zip(hashes, texts, strict=True):
            if key not in known:
                missing.setdefault(key, text)
        if missing:
            vectors = self.embedder.encode(list(missing.values()))
            self.model_calls += len(missing)
            fresh = dict(zip(missing.keys(), vectors, strict=True))
            known.update(fresh)
            if self.cache is not None:
                try:
                    self.cache.store(self.model_key, fresh)
                except Exception:  # the cache is an optimisation; a busy database must not fail the call
                    logger.warning("embedding cache write failed", exc_info=True)
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([known[key] for key in hashes]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector; recent queries are kept in memory only (queries are not written to disk)."""
        key = content_hash(text)
        with self._queries_lock:
            if key in self._queries:
                self._queries.move_to_end(key)
                return self._queries[key]
        vector = self.embedder.encode([text])[0]
        self.model_calls += 1
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector
