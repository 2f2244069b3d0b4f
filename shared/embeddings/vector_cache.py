"""An in-process cache of one model's vectors, kept in sync with a store's SQLite tables: exact cosine search.

SQLite is the truth; the store's own SQL decides what changed and tells the cache (memory reads its change log, the
brain each project's `vectors_version`): `replace` loads everything, `put` adds or updates rows, `replace_group`
swaps a group's rows, `drop` and `drop_group` remove rows. Each row has a key (the store's id), a group (a workflow,
a project) and a kind (a memory type, a node label), by which searches filter. Vectors are L2-normalised float32, so
cosine is one matrix-vector product (`cosine_scores`: ≈12 ms for 100k × 384 on one core); a filter that keeps a
small share of the rows scores only those. Removed rows are masked, then compacted away once they are a quarter of
the matrix.

Callers hold `lock` around a sync and around the searches that must see it. numpy is imported with this module:
import it lazily.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from typing import Any, Literal

import numpy as np

from mcp_sections.shared.embeddings.vectors import cosine_scores

#: (key, group, kind, float32 little-endian blob or None: no vector of this model)
Row = tuple[Any, str, str, bytes | None]

COMPACT_FRACTION = 0.25  # removed rows compacted away past this share of the matrix...
COMPACT_MIN = 64  # ... and this many
SUBSET_FRACTION = 0.5  # a filter keeping fewer rows than this share scores those rows only


class VectorCache:
    """One model's vectors as one float32 matrix, a key, group and kind per row."""

    matrix: np.ndarray  # (rows, dimension) float32
    keys: np.ndarray  # object: the store's key per row
    groups: np.ndarray  # int32 code of each row's group (`_group_codes`)
    kinds: np.ndarray  # int32 code of each row's kind (`_kind_codes`)
    alive: np.ndarray  # bool: False once removed (until compacted)
    position: dict[Any, int]  # key → row of the rows alive

    def __init__(self, dimension: int | None = None) -> None:
        """`dimension` None: taken from the first vector."""
        self.dimension = dimension
        self.lock = threading.RLock()
        self.synced: Any = None  # the store's marker of what the cache reflects (a log position, versions)
        self.full_reloads = 0
        self._group_codes: dict[str, int] = {}
        self._kind_codes: dict[str, int] = {}
        self._set(np.zeros((0, dimension or 0), dtype=np.float32), self._objects([]), [], [])

    def __len__(self) -> int:
        return len(self.position)

    # ---- sync -------------------------------------------------------------------------------------------------
    def replace(self, rows: Iterable[Row]) -> list[Row]:
        """Hold exactly these rows; returns those without a usable vector (not held)."""
        keys: list[Any] = []
        groups: list[int] = []
        kinds: list[int] = []
        blobs: list[bytes] = []
        rejected: list[Row] = []
        for row in rows:
            key, group, kind, blob = row
            if blob is None or not self._fits(blob):
                rejected.append(row)
                continue
            keys.append(key)
            groups.append(self._code(self._group_codes, group))
            kinds.append(self._code(self._kind_codes, kind))
            blobs.append(blob)
        self._set(self._matrix(blobs), self._objects(keys), groups, kinds)
        self.full_reloads += 1
        return rejected

    def put(self, rows: Iterable[Row]) -> list[Row]:
        """Add or update these rows; returns those without a usable vector (dropped if they were held)."""
        rejected: list[Row] = []
        updated_at: list[int] = []
        updated: list[tuple[Any, str, str, bytes]] = []
        added: dict[Any, tuple[Any, str, str, bytes]] = {}
        for row in rows:
            key, group, kind, blob = row
            index = self.position.get(key)
            if blob is None or not self._fits(blob):
                rejected.append(row)
                if index is not None:
                    self._remove(key, index)
            elif index is None:
                added[key] = (key, group, kind, blob)
            else:
                updated_at.append(index)
                updated.append((key, group, kind, blob))
        if updated:
            at = np.asarray(updated_at, dtype=np.int64)
            self.matrix[at] = self._matrix([row[3] for row in updated])
            self.groups[at] = [self._code(self._group_codes, row[1]) for row in updated]
            self.kinds[at] = [self._code(self._kind_codes, row[2]) for row in updated]
        if added:
            self._append(list(added.values()))
        self._compact_if_sparse()
        return rejected

    def drop(self, keys: Iterable[Any]) -> None:
        for key in keys:
            index = self.position.get(key)
            if index is not None:
                self._remove(key, index)
        self._compact_if_sparse()

    def drop_group(self, group: str) -> None:
        self.drop(self._held(group))

    def replace_group(self, group: str, rows: list[Row]) -> list[Row]:
        """The group holds exactly these rows now (added, updated, the others dropped); returns those without a
        usable vector."""
        held = self._held(group)
        rejected = self.put(rows)
        self.drop(set(held) - {row[0] for row in rows})
        return rejected

    def count(self, group: str) -> int:
        return len(self._held(group))

    def _held(self, group: str) -> list[Any]:
        """The keys of the group's rows."""
        code = self._group_codes.get(group)
        return [] if code is None else self.keys[self.alive & (self.groups == code)].tolist()

    # ---- search -----------------------------------------------------------------------------------------------
    def search(
        self,
        query: np.ndarray,
        *,
        groups: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        threshold: float | None = None,
        limit: int,
    ) -> list[tuple[Any, float]]:
        """The `limit` rows most similar to `query` (in these groups and kinds; cosine ≥ threshold): (key, cosine),
        best first."""
        rows = len(self.keys)
        query = np.asarray(query, dtype=np.float32)
        if limit <= 0 or not self.position or query.shape != (self.dimension,):
            return []
        mask = self._mask(groups, kinds)
        if mask is False:
            return []
        subset = None
        if mask is None:
            scores = cosine_scores(self.matrix, query)
        else:
            kept = int(np.count_nonzero(mask))
            if kept == 0:
                return []
            if kept < SUBSET_FRACTION * rows:
                subset = np.flatnonzero(mask)
                scores = cosine_scores(self.matrix[subset], query)
            else:
                scores = np.where(mask, cosine_scores(self.matrix, query), -np.inf)
        if threshold is not None:
            candidates = np.flatnonzero(scores >= threshold)
        elif mask is not None and subset is None:
            candidates = np.flatnonzero(mask)
        else:
            candidates = np.arange(scores.shape[0])
        if candidates.size > limit:
            candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        positions = order if subset is None else subset[order]
        return [(self.keys[p], float(scores[i])) for p, i in zip(positions, order, strict=True)]

    def _mask(
        self, groups: Collection[str] | None, kinds: Collection[str] | None
    ) -> np.ndarray | Literal[False] | None:
        """The rows a search may return (alive, in these groups and kinds): None for every row, False for none."""
        mask = None if len(self.position) == len(self.keys) else self.alive
        for names, codes, values in ((groups, self._group_codes, self.groups), (kinds, self._kind_codes, self.kinds)):
            if names is None:
                continue
            wanted = [codes[name] for name in names if name in codes]
            if not wanted:
                return False
            held = values == wanted[0]
            for code in wanted[1:]:  # a few codes: faster than np.isin
                held |= values == code
            mask = held if mask is None else mask & held
        return mask

    def similarity(self, query: np.ndarray, key: Any) -> float | None:
        index = self.position.get(key)
        return None if index is None else float(np.dot(self.matrix[index], query))

    # ---- internals --------------------------------------------------------------------------------------------
    def _fits(self, blob: bytes) -> bool:
        if self.dimension is None and blob and len(blob) % 4 == 0:  # the first vector: no row is held yet
            self.dimension = len(blob) // 4
            self.matrix = np.zeros((0, self.dimension), dtype=np.float32)
        return self.dimension is not None and len(blob) == self.dimension * 4

    def _matrix(self, blobs: list[bytes]) -> np.ndarray:
        """The blobs as a matrix numpy owns: a copy, since numpy's large allocations get huge pages (a scan over
        the bytes' own memory measured 50% slower: 20 ms instead of 13 ms for 100k × 384)."""
        width = self.dimension or 0
        return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width).copy()

    @staticmethod
    def _code(codes: dict[str, int], name: str) -> int:
        code = codes.get(name)
        if code is None:
            code = codes[name] = len(codes)
        return code

    @staticmethod
    def _objects(items: list[Any]) -> np.ndarray:
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array

    def _set(self, matrix: np.ndarray, keys: np.ndarray, groups: Any, kinds: Any) -> None:
        self.matrix = matrix
        self.keys = keys
        self.groups = np.asarray(groups, dtype=np.int32)
        self.kinds = np.asarray(kinds, dtype=np.int32)
        self.alive = np.ones(len(keys), dtype=bool)
        self.position = dict(zip(keys.tolist(), range(len(keys)), strict=True))

    def _append(self, rows: list[tuple[Any, str, str, bytes]]) -> None:
        start = len(self.keys)
        block = self._matrix([row[3] for row in rows])
        self.matrix = np.concatenate([self.matrix, block]) if start else block
        self.keys = np.concatenate([self.keys, self._objects([row[0] for row in rows])])
        codes = [self._code(self._group_codes, row[1]) for row in rows]
        self.groups = np.concatenate([self.groups, np.asarray(codes, dtype=np.int32)])
        codes = [self._code(self._kind_codes, row[2]) for row in rows]
        self.kinds = np.concatenate([self.kinds, np.asarray(codes, dtype=np.int32)])
        self.alive = np.concatenate([self.alive, np.ones(len(rows), dtype=bool)])
        for offset, row in enumerate(rows):
            self.position[row[0]] = start + offset

    def _remove(self, key: Any, index: int) -> None:
        self.alive[index] = False
        del self.position[key]

    def _compact_if_sparse(self) -> None:
        dead = len(self.keys) - len(self.position)
        if dead > COMPACT_MIN and dead > COMPACT_FRACTION * len(self.keys):
            keep = self.alive
            self._set(self.matrix[keep], self.keys[keep], self.groups[keep], self.kinds[keep])
