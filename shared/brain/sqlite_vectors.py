"""The brain's vectors in SQLite: pending embeddings, stored float32 vectors, and exact search over them in the
shared in-process `VectorCache` (a project's rows reloaded when its `vectors_version` moves)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_sections.shared.brain.sqlite_rows import placeholders
from mcp_sections.shared.store.sqlite import Database

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from mcp_sections.shared.embeddings.vector_cache import Row, VectorCache


class SQLiteVectors:
    """The vector half of `SQLiteBrainStore` (a mixin: it uses the store's `database`)."""

    database: Database
    _vector_caches: dict[str, VectorCache]  # per model; `synced`: the projects' vectors_version loaded
    _vector_caches_lock: threading.Lock

    def pending_embeddings(
        self, model: str, limit: int, project_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str, str]]:
        """(node id, embed text, embed hash) of nodes without a current vector: scopes first, newest projects first."""
        where, params = self._pending_where(model, project_ids)
        sql = (
            f"SELECT n.id, n.embed_text, n.embed_hash FROM nodes n LEFT JOIN vectors v ON v.node_id = n.id "
            f"JOIN projects p ON p.id = n.project_id WHERE {where} "
            "ORDER BY p.last_ingest DESC, CASE n.label WHEN 'Scope' THEN 0 WHEN 'DocumentSection' THEN 1 ELSE 2 END, "
            "n.rowid LIMIT ?"
        )
        with self.database.read() as db:
            rows = db.execute(sql, [*params, limit]).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]

    def count_pending(self, model: str, project_ids: Sequence[str] | None = None) -> int:
        where, params = self._pending_where(model, project_ids)
        with self.database.read() as db:
            return db.execute(
                f"SELECT count(*) FROM nodes n LEFT JOIN vectors v ON v.node_id = n.id WHERE {where}", params
            ).fetchone()[0]

    @staticmethod
    def _pending_where(model: str, project_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
        where = "n.embed_hash IS NOT NULL AND (v.node_id IS NULL OR v.model != ? OR v.embed_hash != n.embed_hash)"
        params: list[Any] = [model]
        if project_ids is not None:
            where += f" AND n.project_id IN ({placeholders(len(project_ids))})" if project_ids else " AND 0"
            params += list(project_ids)
        return where, params

    def put_vectors(self, model: str, items: Sequence[tuple[str, str, np.ndarray]]) -> int:
        """Store vectors for (node id, embed hash, vector); skipped when the node's text changed meanwhile."""
        import numpy as np

        written = 0
        with self.database.write() as db:
            projects: set[str] = set()
            for node, embed_hash, vector in items:
                blob = np.asarray(vector, dtype="<f4").tobytes()
                row = db.execute(
                    "INSERT INTO vectors(node_id, project_id, label, model, embed_hash, vector) "
                    "SELECT id, project_id, label, ?, embed_hash, ? FROM nodes WHERE id = ? AND embed_hash = ? "
                    "ON CONFLICT(node_id) DO UPDATE SET model=excluded.model, embed_hash=excluded.embed_hash, "
                    "vector=excluded.vector, project_id=excluded.project_id, label=excluded.label "
                    "RETURNING project_id",
                    (model, blob, node, embed_hash),
                ).fetchone()
                if row is not None:
                    projects.add(row[0])
                    written += 1
            for project in projects:
                db.execute("UPDATE projects SET vectors_version = vectors_version + 1 WHERE id = ?", (project,))
        return written

    def vector_search(
        self,
        model: str,
        query: np.ndarray,
        project_ids: Sequence[str] | None,
        labels: Sequence[str] | None,
        limit: int,
    ) -> list[tuple[str, float]]:
        """Exact cosine top-k: one matrix-vector product over the in-memory vectors of the projects searched."""
        cache = self._vectors(model)
        with cache.lock:
            return cache.search(query, groups=project_ids, kinds=labels or None, limit=limit)

    def _vectors(self, model: str) -> VectorCache:
        """The model's vectors of every project in the shared `VectorCache` (rows grouped by project, kinded by
        label), brought up to date: a project is reloaded when its `vectors_version` moved since it was loaded (by
        this process or another), dropped when it is gone."""
        from mcp_sections.shared.embeddings.vector_cache import VectorCache

        with self.database.read() as db:
            versions = {r[0]: r[1] for r in db.execute("SELECT id, vectors_version FROM projects")}
        with self._vector_caches_lock:
            cache = self._vector_caches.get(model)
            if cache is None:
                cache = self._vector_caches[model] = VectorCache()
        with cache.lock:
            loaded: dict[str, int] | None = cache.synced
            if loaded == versions:
                return cache
            if loaded is None:
                cache.replace(row for project in sorted(versions) for row in self._vector_rows(model, project))
            else:
                for project in loaded.keys() - versions.keys():
                    cache.drop_group(project)
                for project in sorted(versions):
                    if loaded.get(project) != versions[project]:
                        cache.replace_group(project, self._vector_rows(model, project))
            cache.synced = dict(versions)
        return cache

    def _vector_rows(self, model: str, project: str) -> list[Row]:
        with self.database.read() as db:
            rows = db.execute(
                "SELECT node_id, label, vector FROM vectors WHERE project_id = ? AND model = ? ORDER BY node_id",
                (project, model),
            ).fetchall()
        return [(row[0], project, row[1], row[2]) for row in rows]

    def preload(self, model: str, project_id: str) -> int:
        """Load the vectors into memory now (load_project); returns how many the project has."""
        cache = self._vectors(model)
        with cache.lock:
            return cache.count(project_id)

    def unload(self, project_id: str) -> None:
        """Nothing to free per project: vectors live in one shared matrix, brought up to date on use."""

    def _drop_matrices(self, project_id: str) -> None:
        """A deleted project: the next search drops its rows (its version is gone)."""

    # ---- maintenance --------------------------------------------------------------------------------
