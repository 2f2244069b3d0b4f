"""In-process vector cache: the memories' vectors as one numpy matrix, brute-force cosine search.

SQLite is the source of truth. The cache follows it through `memory_changes`, a log appended by
triggers on every insert, update and delete of a memory (any process): on each use it reads the
log past the last sequence number it has seen and reloads only those rows; if the log was pruned
past that point, or too much changed, it reloads everything. Vectors are L2-normalised, so cosine
similarity is one matrix-vector product (≈12 ms for 100k × 384 on one core).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass

import numpy as np

from mcp_sections.shared.embeddings import cosine_scores, from_blob

FULL_RELOAD_FRACTION = 0.2
COMPACT_FRACTION = 0.25


@dataclass(frozen=True)
class Hit:
    pk: int
    similarity: float


class VectorIndex:
    """Vectors of the memories embedded with `model_key`; rows without one are tracked as pending."""

    def __init__(self, model_key: str, dimension: int, *, persistent: bool = True) -> None:
        self.model_key = model_key
        self.dimension = dimension
        self.persistent = persistent  # False: rebuild from SQLite on every use (no cache)
        self.lock = threading.RLock()
        self.seq: int | None = None
        self.full_reloads = 0
        self._workflows: dict[str, int] = {"": 0}
        self._reset(np.zeros((0, dimension), dtype=np.float32), [], [], [])
        self.pending: dict[int, int] = {}  # pk → workflow code of memories without a vector

    # ---- state ----------------------------------------------------------------------------
    def _reset(self, matrix: np.ndarray, pks: list[int], workflows: list[int], types: list[int]) -> None:
        self.matrix = matrix
        self.pks = np.asarray(pks, dtype=np.int64)
        self.workflow_codes = np.asarray(workflows, dtype=np.int32)
        self.type_codes = np.asarray(types, dtype=np.int16)
        self.alive = np.ones(len(pks), dtype=bool)
        self.position = {int(pk): index for index, pk in enumerate(pks)}

    def workflow_code(self, workflow_id: str) -> int:
        code = self._workflows.get(workflow_id)
        if code is None:
            code = self._workflows[workflow_id] = len(self._workflows)
        return code

    def __len__(self) -> int:
        return len(self.position)

    def pending_in(self, workflow_ids: tuple[str, ...]) -> int:
        codes = {self._workflows.get(w) for w in workflow_ids}
        return sum(1 for code in self.pending.values() if code in codes)

    # ---- refresh --------------------------------------------------------------------------
    def refresh(self, connection: sqlite3.Connection, type_code: dict[str, int]) -> list[int]:
        """Bring the cache up to date inside the caller's transaction; returns newly pending pks."""
        row = connection.execute(  # two subqueries: SQLite answers a lone max()/min() from the index end
            "SELECT coalesce((SELECT max(seq) FROM memory_changes), 0), "
            "coalesce((SELECT min(seq) FROM memory_changes), 0)"
        ).fetchone()
        latest, oldest = int(row[0]), int(row[1])
        if self.persistent and self.seq is not None and latest == self.seq:
            return []
        if self.persistent and self.seq is not None and latest < self.seq:
            return []  # another thread already refreshed from a newer snapshot
        if not self.persistent or self.seq is None or oldest > self.seq + 1:
            return self._full_reload(connection, type_code, latest)
        changed = [
            int(r[0])
            for r in connection.execute(
                "SELECT DISTINCT memory_rowid FROM memory_changes WHERE seq > ?", (self.seq,)
            ).fetchall()
        ]
        if len(changed) > max(1000, FULL_RELOAD_FRACTION * len(self.position)):
            return self._full_reload(connection, type_code, latest)
        newly_pending = self._apply(connection, changed, type_code)
        self.seq = latest
        return newly_pending

    def _full_reload(self, connection: sqlite3.Connection, type_code: dict[str, int], latest: int) -> list[int]:
        rows = connection.execute(
            "SELECT pk, workflow_id, type, CASE WHEN embedding_model = ? THEN embedding END AS embedding "
            "FROM memories ORDER BY pk",
            (self.model_key,),
        ).fetchall()
        pks, workflows, types, blobs = [], [], [], []
        previous_pending = set(self.pending)
        self.pending = {}
        width = self.dimension * 4
        for pk, workflow_id, kind, blob in rows:
            code = self.workflow_code(workflow_id)
            if blob is None or len(blob) != width:
                self.pending[pk] = code
                continue
            pks.append(pk)
            workflows.append(code)
            types.append(type_code.get(kind, -1))
            blobs.append(blob)
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), self.dimension).copy()
        self._reset(matrix, pks, workflows, types)
        self.seq = latest
        self.full_reloads += 1
        return [pk for pk in self.pending if pk not in previous_pending]

    def _apply(self, connection: sqlite3.Connection, changed: list[int], type_code: dict[str, int]) -> list[int]:
        found: dict[int, tuple[str, str, bytes | None]] = {}
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for pk, workflow_id, kind, blob in connection.execute(
                "SELECT pk, workflow_id, type, CASE WHEN embedding_model = ? THEN embedding END "
                f"FROM memories WHERE pk IN ({marks})",
                [self.model_key, *chunk],
            ):
                found[pk] = (workflow_id, kind, blob)
        appended: list[tuple[int, int, int, np.ndarray]] = []
        newly_pending: list[int] = []
        width = self.dimension * 4
        for pk in changed:
            index = self.position.get(pk)
            entry = found.get(pk)
            if entry is None or entry[2] is None or len(entry[2]) != width:
                if index is not None:  # deleted, or its vector was dropped (content changed)
                    self.alive[index] = False
                    del self.position[pk]
                if entry is None:
                    self.pending.pop(pk, None)
                elif pk not in self.pending:
                    self.pending[pk] = self.workflow_code(entry[0])
                    newly_pending.append(pk)
                continue
            workflow_id, kind, blob = entry
            assert blob is not None  # checked above: entries without a vector of this width are pending
            self.pending.pop(pk, None)
            vector = from_blob(blob, self.dimension)
            code, kind_code = self.workflow_code(workflow_id), type_code.get(kind, -1)
            if index is None:
                appended.append((pk, code, kind_code, vector))
            else:
                self.matrix[index] = vector
                self.workflow_codes[index] = code
                self.type_codes[index] = kind_code
        if appended:
            start = len(self.pks)
            self.matrix = np.vstack([self.matrix, np.stack([a[3] for a in appended])])
            self.pks = np.concatenate([self.pks, np.asarray([a[0] for a in appended], dtype=np.int64)])
            self.workflow_codes = np.concatenate(
                [self.workflow_codes, np.asarray([a[1] for a in appended], dtype=np.int32)]
            )
            self.type_codes = np.concatenate([self.type_codes, np.asarray([a[2] for a in appended], dtype=np.int16)])
            self.alive = np.concatenate([self.alive, np.ones(len(appended), dtype=bool)])
            for offset, item in enumerate(appended):
                self.position[item[0]] = start + offset
        dead = len(self.pks) - len(self.position)
        if dead > COMPACT_FRACTION * max(len(self.pks), 1) and dead > 64:
            self._compact()
        return newly_pending

    def _compact(self) -> None:
        keep = self.alive
        self.matrix = np.ascontiguousarray(self.matrix[keep])
        self.pks = self.pks[keep]
        self.workflow_codes = self.workflow_codes[keep]
        self.type_codes = self.type_codes[keep]
        self.alive = np.ones(len(self.pks), dtype=bool)
        self.position = {int(pk): index for index, pk in enumerate(self.pks)}

    # ---- search ---------------------------------------------------------------------------
    def search(
        self,
        query: np.ndarray,
        workflow_ids: tuple[str, ...],
        type_filter: int | None,
        threshold: float,
        limit: int,
    ) -> list[Hit]:
        """Top `limit` memories of these workflows (and type) with cosine ≥ threshold, best first."""
        if len(self.pks) == 0 or limit <= 0:
            return []
        codes = [self._workflows[w] for w in workflow_ids if w in self._workflows]
        if not codes:
            return []
        in_scope = self.workflow_codes == codes[0]
        for code in codes[1:]:
            in_scope |= self.workflow_codes == code
        mask = self.alive & in_scope
        if type_filter is not None:
            mask &= self.type_codes == type_filter
        scores = cosine_scores(self.matrix, query)
        scores = np.where(mask, scores, -np.inf)
        candidates = np.flatnonzero(scores >= threshold)
        if candidates.size > limit:
            top = np.argpartition(-scores[candidates], limit - 1)[:limit]
            candidates = candidates[top]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [Hit(int(self.pks[i]), float(scores[i])) for i in order]

    def similarity(self, query: np.ndarray, pk: int) -> float | None:
        index = self.position.get(pk)
        return None if index is None else float(np.dot(self.matrix[index], query))
