"""The memories' vectors in the shared in-process `VectorCache`, kept in sync with SQLite through `memory_changes`.

SQLite is the source of truth. `memory_changes` is a log appended by triggers on every insert, update and delete of
a memory (any process): on each use the index reads the log past the last sequence number it has seen and reloads
only those rows; if the log was pruned past that point, or too much changed, it reloads everything. Rows are keyed
by the memory's pk, grouped by workflow ('' = general) and kinded by memory type; memories without a vector of the
model are tracked as pending.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp_sections.shared.embeddings.vector_cache import VectorCache

FULL_RELOAD_FRACTION = 0.2


@dataclass(frozen=True)
class Hit:
    pk: int
    similarity: float


class VectorIndex:
    """Vectors of the memories embedded with `model_key`; rows without one are tracked as pending."""

    def __init__(self, model_key: str, dimension: int, *, persistent: bool = True) -> None:
        self.model_key = model_key
        self.persistent = persistent  # False: rebuild from SQLite on every use (no cache)
        self.cache = VectorCache(dimension)
        self.lock = self.cache.lock
        self.pending: dict[int, str] = {}  # pk → workflow of memories without a vector

    @property
    def seq(self) -> int | None:
        """The last `memory_changes` sequence number applied."""
        synced: int | None = self.cache.synced
        return synced

    @property
    def full_reloads(self) -> int:
        return self.cache.full_reloads

    def __len__(self) -> int:
        return len(self.cache)

    def pending_in(self, workflow_ids: tuple[str, ...]) -> int:
        return sum(1 for workflow in self.pending.values() if workflow in workflow_ids)

    # ---- refresh --------------------------------------------------------------------------
    def refresh(self, connection: sqlite3.Connection) -> list[int]:
        """Bring the cache up to date inside the caller's transaction; returns newly pending pks."""
        row = connection.execute(  # two subqueries: SQLite answers a lone max()/min() from the index end
            "SELECT coalesce((SELECT max(seq) FROM memory_changes), 0), "
            "coalesce((SELECT min(seq) FROM memory_changes), 0)"
        ).fetchone()
        latest, oldest = int(row[0]), int(row[1])
        seq = self.seq
        if self.persistent and seq is not None and latest <= seq:
            return []  # up to date, or another thread already refreshed from a newer snapshot
        if not self.persistent or seq is None or oldest > seq + 1:
            return self._full_reload(connection, latest)
        changed = [
            int(r[0])
            for r in connection.execute(
                "SELECT DISTINCT memory_rowid FROM memory_changes WHERE seq > ?", (seq,)
            ).fetchall()
        ]
        if len(changed) > max(1000, FULL_RELOAD_FRACTION * len(self.cache)):
            return self._full_reload(connection, latest)
        newly_pending = self._apply(connection, changed)
        self.cache.synced = latest
        return newly_pending

    def _full_reload(self, connection: sqlite3.Connection, latest: int) -> list[int]:
        rows = connection.execute(
            "SELECT pk, workflow_id, type, CASE WHEN embedding_model = ? THEN embedding END AS embedding "
            "FROM memories ORDER BY pk",
            (self.model_key,),
        ).fetchall()
        previous_pending = set(self.pending)
        without = self.cache.replace(tuple(row) for row in rows)
        self.pending = {pk: workflow for pk, workflow, _, _ in without}
        self.cache.synced = latest
        return [pk for pk in self.pending if pk not in previous_pending]

    def _apply(self, connection: sqlite3.Connection, changed: list[int]) -> list[int]:
        found: list[Any] = []  # sqlite3.Row: (pk, workflow, type, vector blob or None)
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += connection.execute(
                "SELECT pk, workflow_id, type, CASE WHEN embedding_model = ? THEN embedding END "
                f"FROM memories WHERE pk IN ({marks})",
                [self.model_key, *chunk],
            ).fetchall()
        deleted = set(changed) - {row[0] for row in found}
        self.cache.drop(deleted)
        for pk in deleted:
            self.pending.pop(pk, None)
        without = self.cache.put(tuple(row) for row in found)  # deleted, or its vector was dropped: pending
        newly_pending = [pk for pk, _, _, _ in without if pk not in self.pending]
        for row in found:
            self.pending.pop(row[0], None)
        self.pending.update({pk: workflow for pk, workflow, _, _ in without})
        return newly_pending

    # ---- search ---------------------------------------------------------------------------
    def search(
        self,
        query: np.ndarray,
        workflow_ids: tuple[str, ...],
        type_filter: str | None,
        threshold: float,
        limit: int,
    ) -> list[Hit]:
        """Top `limit` memories of these workflows (and type) with cosine ≥ threshold, best first."""
        kinds = None if type_filter is None else (type_filter,)
        hits = self.cache.search(query, groups=workflow_ids, kinds=kinds, threshold=threshold, limit=limit)
        return [Hit(pk, similarity) for pk, similarity in hits]

    def similarity(self, query: np.ndarray, pk: int) -> float | None:
        return self.cache.similarity(query, pk)
