"""The brain's vectors in SQLite: pending embeddings, stored float32 vectors, and brute-force search over
per-project matrices cached in memory (reloaded when the project's `vectors_version` moves)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp_sections.shared.store.sqlite import Database

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
from mcp_sections.shared.brain.sqlite_rows import placeholders


class SQLiteVectors:
    """The vector half of `SQLiteBrainStore` (a mixin: it uses the store's `database`)."""

    database: Database
    _matrices: dict[tuple[str, str], tuple[Any, ...]]  # (project or "*", model) -> (version(s), ids, labels, matrix...)
    _matrix_lock: threading.Lock

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
        """Exact cosine top-k: one matrix-vector product over the in-memory vectors of every project."""
        import numpy as np

        with self.database.read() as db:
            versions = {r[0]: r[1] for r in db.execute("SELECT id, vectors_version FROM projects")}
        ids, label_array, matrix, spans = self._combined(model, versions)
        query = np.asarray(query, dtype=np.float32)
        if matrix.shape[0] == 0 or matrix.shape[1] != query.shape[0]:
            return []
        if project_ids is None:
            scores = matrix @ query
        else:
            wanted = [spans[p] for p in project_ids if p in spans and spans[p][1] > spans[p][0]]
            if not wanted:
                return []
            # rows of one project are contiguous: score only the requested ranges
            parts = [(start, matrix[start:end] @ query) for start, end in sorted(wanted)]
            scores = np.concatenate([part for _, part in parts])
            index = np.concatenate([np.arange(start, start + len(part)) for start, part in parts])
            ids, label_array = ids[index], label_array[index]
        if labels:
            scores = np.where(np.isin(label_array, list(labels)), scores, -np.inf)
        k = min(limit, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
        top = top[np.isfinite(scores[top])]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(str(ids[i]), float(scores[i])) for i in top]

    def _combined(self, model: str, versions: dict[str, int]) -> tuple[Any, Any, Any, dict[str, tuple[int, int]]]:
        """All projects' vectors as one contiguous matrix (rows grouped by project), rebuilt only for the
        projects whose `vectors_version` moved since they were loaded (by this or another process)."""
        import numpy as np

        with self._matrix_lock:
            cached = self._matrices.get(("*", model))
            if cached is not None and cached[0] == versions:
                return cached[1], cached[2], cached[3], cached[4]
            previous: dict[str, tuple[Any, Any, Any]] = cached[5] if cached is not None else {}
            parts: dict[str, tuple[Any, Any, Any]] = {}
            for project, version in versions.items():
                old = previous.get(project)
                if old is not None and cached is not None and cached[0].get(project) == version:
                    parts[project] = old
                else:
                    parts[project] = self._load_vectors(model, project)
            order = sorted(parts)
            spans: dict[str, tuple[int, int]] = {}
            position = 0
            for project in order:
                spans[project] = (position, position + parts[project][2].shape[0])
                position = spans[project][1]
            non_empty = [parts[p][2] for p in order if parts[p][2].shape[0]]
            dims = {m.shape[1] for m in non_empty}
            if non_empty and len(dims) == 1:
                matrix = np.concatenate(non_empty)
            else:
                matrix = np.zeros((0, 0), dtype=np.float32)
                spans = {p: (0, 0) for p in order}
            ids = np.concatenate([parts[p][0] for p in order]) if order else np.array([], dtype=object)
            label_array = np.concatenate([parts[p][1] for p in order]) if order else np.array([], dtype=object)
            # keep per-project pieces as views into the combined matrix (no second copy in memory)
            pieces = {p: (parts[p][0], parts[p][1], matrix[spans[p][0] : spans[p][1]]) for p in order}
            self._matrices[("*", model)] = (dict(versions), ids, label_array, matrix, spans, pieces)
            return ids, label_array, matrix, spans

    def _load_vectors(self, model: str, project: str) -> tuple[Any, Any, Any]:
        import numpy as np

        with self.database.read() as db:
            rows = db.execute(
                "SELECT node_id, label, vector FROM vectors WHERE project_id = ? AND model = ? ORDER BY node_id",
                (project, model),
            ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=object)
        labels = np.array([r[1] for r in rows], dtype=object)
        if rows:
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        return ids, labels, matrix

    def preload(self, model: str, project_id: str) -> int:
        """Load the vectors into memory now (load_project); returns how many the project has."""
        with self.database.read() as db:
            versions = {r[0]: r[1] for r in db.execute("SELECT id, vectors_version FROM projects")}
        spans = self._combined(model, versions)[3]
        start, end = spans.get(project_id, (0, 0))
        return end - start

    def unload(self, project_id: str) -> None:
        """Nothing to free per project: vectors live in one shared matrix, rebuilt on change."""

    def _drop_matrices(self, project_id: str) -> None:
        """A deleted project: the next search rebuilds the combined matrix without it."""

    # ---- maintenance --------------------------------------------------------------------------------
