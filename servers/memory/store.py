"""The memory store: SQLite (WAL) is the truth; FTS5 for words, float32 BLOBs for meaning.

One file, `<data_dir>/memory.sqlite3`, shared safely by any number of processes (WAL, `BEGIN
IMMEDIATE` writers, busy timeout, `synchronous=FULL`: a committed memory survives `kill -9`). For a team's
gateway replicas, the same store on a PostgreSQL server (`store = "postgres"`): the same queries, and what the two
engines spell differently (words, tags, the schema) in `dialects.py`. Each replica's vector cache reads the change
log on every search, so what one replica writes, the others find at once.

- Scope: each memory belongs to one workflow or to no workflow ("general", stored as '').
  A call sees the general memories and those of its own workflow, never another workflow's.
- Vectors: embedded with the section's sentence-transformers model when it is loaded; a memory
  added while the model is loading (or by a process without the model) is stored at once and
  embedded later by the shared background `EmbeddingWorker` (`shared.embeddings.worker`).
- Search: `vector` (cosine over the in-process `VectorIndex`), `hybrid` (similarity plus a bounded BM25
  bonus) or `text` (BM25 only: the fallback when the model is unavailable). The default threshold is the
  model's calibrated one; the nearest memories below it complete an answer with fewer than three, marked.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp_sections.shared.embeddings import (
    EmbeddingCache,
    EmbeddingService,
    EmbeddingUnavailable,
    calibrated_threshold,
    content_hash,
    to_blob,
)
from mcp_sections.shared.embeddings.model_lock import ModelLock
from mcp_sections.shared.embeddings.worker import EmbeddingWorker
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, not_found
from mcp_sections.shared.store.postgres import PostgresDatabase, StoreBackendSettings
from mcp_sections.shared.store.sqlite import Database

from . import tombstones
from .confidence import MIN_CONFIDENCE, Evidence, calibration, similarity_at
from .dialects import POSTGRES, SQLITE
from .evidence import Judge, coverage, held_terms

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from mcp_sections.servers.memory.vectors import VectorIndex

logger = logging.getLogger("mcp_sections.memory")

DATABASE_FILE = "memory.sqlite3"
MAX_CONTENT_LENGTH = 50_000
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MIN_OFFERED = 3  # a search offers at least this many memories (the nearest, marked when below the threshold)
DEFAULT_DUPLICATE_THRESHOLD = 0.97
VALID_TYPES = ("user_pref", "context", "knowledge", "decision")
MEMORY_ID_PATTERN = r"^mem_[0-9a-f]{32}$"
MAX_TAGS = 20
MAX_TAG_LENGTH = 64
MAX_METADATA_CHARS = 16_000
TEXT_WEIGHT = 0.2  # hybrid mode: a memory holding every searched word gains 0.2 of similarity (see `search`)
COVERAGE_POWER = 3  # ... and one holding 2 of 3 words gains 0.2 × (2/3)³ ≈ 0.06
PENDING_BATCH = 64
PENDING_INLINE_MAX = 256
CHANGE_LOG_KEEP = 200_000

MemoryType = Literal["user_pref", "context", "knowledge", "decision"]
ScopeName = Literal["both", "workflow", "general"]
#: For stores embedded before the model lock: the model most of their vectors come from.
EXISTING_MODEL_SQL = (
    "SELECT embedding_model FROM memories WHERE embedding_model IS NOT NULL "
    "GROUP BY embedding_model ORDER BY count(*) DESC LIMIT 1"
)
SearchMode = Literal["vector", "hybrid"]

MIGRATIONS = SQLITE.migrations

_COLUMNS = "pk, id, type, content, content_hash, metadata, tags, workflow_id, created_at, updated_at, embedding_model"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Memory:
    pk: int
    id: str
    type: str
    content: str
    metadata: dict[str, Any]
    tags: list[str]
    workflow_id: str | None
    created_at: str
    updated_at: str
    embedded: bool

    @classmethod
    def of(cls, row: Any, model_key: str | None) -> Memory:
        return cls(
            pk=row["pk"],
            id=row["id"],
            type=row["type"],
            content=row["content"],
            metadata=json.loads(row["metadata"]),
            tags=json.loads(row["tags"]),
            workflow_id=row["workflow_id"] or None,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            embedded=model_key is not None and row["embedding_model"] == model_key,
        )


@dataclass(frozen=True)
class AddOutcome:
    memory: Memory
    stored: bool
    duplicate_of: str | None = None
    duplicate_similarity: float | None = None
    embedding_generated: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Found:
    memory: Memory
    similarity: float | None
    score: float | None
    matched_by: tuple[str, ...]
    below_threshold: bool = False
    confidence: float | None = None  # see `confidence.py`: None without a vector or a calibrated model
    evidence: Evidence | None = None  # what the confidence read


@dataclass
class SearchOutcome:
    results: list[Found]
    search_type: Literal["vector", "hybrid", "text"]
    pending_embeddings: int = 0
    notes: list[str] = field(default_factory=list)


def normalize_tags(tags: Sequence[str] | None) -> list[str]:
    """Tags are compared case-insensitively: stored stripped, lower-cased, without duplicates."""
    return list(dict.fromkeys(tag.strip().lower() for tag in tags or () if tag.strip()))


def visible_workflows(workflow_id: str | None, scope: ScopeName) -> tuple[str, ...]:
    """The stored workflow keys ('' = general) a call with this workflow and scope may see."""
    if scope == "general":
        return ("",)
    if scope == "workflow":
        if workflow_id is None:
            raise invalid_input(
                "scope='workflow' needs a workflow: pass workflow_id, or call memory_activate_workflow first "
                "(or use scope='general' / 'both')."
            )
        return (workflow_id,)
    return ("",) if workflow_id is None else ("", workflow_id)


class MemoryStore:
    """All memory operations; `embeddings=None` means text-only (no model configured or available)."""

    def __init__(
        self,
        path: Path,
        embeddings: EmbeddingService | None,
        *,
        wait_seconds: float = 30.0,
        duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
        vector_cache: bool = True,
        postgres_url: str | None = None,
        postgres_password: str | None = None,
    ) -> None:
        self.db: Database | PostgresDatabase
        if postgres_url is not None:  # a team's replicas share it (`dialects.py`)
            database = PostgresDatabase(postgres_url, POSTGRES.migrations, name="memory", password=postgres_password)
            self.dialect, self.db = POSTGRES, database
        else:
            self.dialect, self.db = SQLITE, Database(path, MIGRATIONS)
        self.embeddings: EmbeddingService | None = None
        self.jobs: EmbeddingWorker | None = None  # the background embedding and the model lock (with a model)
        self.wait_seconds = wait_seconds
        self.duplicate_threshold = duplicate_threshold
        self.vector_cache = vector_cache
        self.tombstones_kept = tombstones.KEEP_PER_SCOPE  # deleted ids remembered per scope
        self._index: VectorIndex | None = None
        self._index_lock = threading.Lock()
        if embeddings is not None:
            self.attach_embeddings(embeddings)

    def attach_embeddings(self, embeddings: EmbeddingService) -> None:
        """Use this service for vectors (its cache may live in `self.db`: see `EMBEDDING_CACHE_SCHEMA`)."""
        if self.jobs is not None:
            self.jobs.close()
        self.embeddings = embeddings
        self.jobs = EmbeddingWorker(
            embeddings,
            self,
            ModelLock(self.db, EXISTING_MODEL_SQL),
            owner="memory",
            store="memory store",
            wait_seconds=self.wait_seconds,
            batch=PENDING_BATCH,
        )

    def embedding_cache(self) -> EmbeddingCache:
        """The embeddings cache in this store's database (SQLite's or PostgreSQL's: the same queries)."""
        return EmbeddingCache(self.db)  # type: ignore[arg-type]

    @classmethod
    def in_data_dir(
        cls,
        data_dir: Path,
        embeddings: EmbeddingService | None,
        backend: StoreBackendSettings | None = None,
        **options: Any,
    ) -> MemoryStore:
        """The store of this data directory, or of the PostgreSQL server `backend` names."""
        if backend is not None:
            options.update(backend.postgres_server())
        return cls(Path(data_dir) / DATABASE_FILE, embeddings, **options)

    # ---- embeddings -----------------------------------------------------------------------
    @property
    def model_key(self) -> str | None:
        return self.embeddings.model_key if self.embeddings is not None else None

    def embeddings_status(self) -> str:
        if self.embeddings is None:
            return "disabled"
        return self.embeddings.embedder.status.value

    def _unavailable_reason(self) -> str:
        if self.embeddings is None:
            return "embeddings are disabled"
        return self.embeddings.embedder.describe()

    def other_model(self) -> str | None:
        """The model this store's vectors belong to, when it is not the configured one (see `reembed`)."""
        return self.jobs.other_model() if self.jobs is not None else None

    def reembed(self) -> str | None:
        """Give the store to the configured model: its memories are embedded again in the background.
        Returns the model the store belonged to before."""
        if self.jobs is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled: there is no model to re-embed with")
        return self.jobs.reembed()

    def _try_embed(self, text: str) -> np.ndarray | None:
        """The content's vector now if the model is ready; None (and start loading) otherwise."""
        if self.embeddings is None or self.jobs is None or self.other_model() is not None:
            return None
        embedder = self.embeddings.embedder
        if not embedder.ready:
            embedder.start_loading()
            return None
        try:
            return self.jobs.embed([text])[0]
        except EmbeddingUnavailable:
            return None
        except Exception:  # never lose the memory because of the model: store it, embed it later
            logger.warning("embedding failed; the memory is stored without a vector for now", exc_info=True)
            return None

    def vector_index(self, connection: Any) -> VectorIndex | None:
        """The in-process vector cache brought up to date in `connection`'s transaction (None: no model)."""
        if self.embeddings is None or not self.embeddings.embedder.ready:
            return None
        from mcp_sections.servers.memory.vectors import VectorIndex

        with self._index_lock:
            if self._index is None:
                dimension = self.embeddings.embedder.dimension or 0
                self._index = VectorIndex(self.model_key or "", dimension, persistent=self.vector_cache)
            index = self._index
        with index.lock:
            newly_pending = index.refresh(connection)
        if newly_pending:
            self.kick_pending()
        return index

    # ---- pending embeddings (the shared EmbeddingWorker's `PendingItems`) --------------------------
    def kick_pending(self) -> None:
        """Wake the background pass that embeds memories stored without a vector."""
        if self.jobs is not None:
            self.jobs.wake()

    def embed_pending(self, batch: int = PENDING_BATCH) -> int:
        """Embed up to `batch` memories lacking a vector of the current model; returns how many."""
        return self.jobs.embed_pending(max_batches=1, batch=batch) if self.jobs is not None else 0

    def pending_embeddings(
        self, model: str, limit: int, scope: Sequence[str] | None = None
    ) -> builtins.list[tuple[int, str, str]]:
        """(pk, content, content hash) of memories without a vector of `model`, oldest first (every workflow)."""
        with self.db.read() as connection:
            rows = connection.execute(
                "SELECT pk, content, content_hash FROM memories "
                "WHERE embedding_model IS NULL OR embedding_model != ? ORDER BY pk LIMIT ?",
                (model, limit),
            ).fetchall()
        return [(row["pk"], row["content"], row["content_hash"]) for row in rows]

    def count_pending(self, model: str | None, scope: Sequence[str] | None = None) -> int:
        with self.db.read() as connection:
            return connection.execute(
                "SELECT count(*) FROM memories WHERE embedding_model IS NULL OR embedding_model IS DISTINCT FROM ?",
                (model,),
            ).fetchone()[0]

    def put_vectors(self, model: str, items: Sequence[tuple[int, str, np.ndarray]]) -> int:
        """Store the vectors of memories whose content is still the one embedded; returns how many."""
        with self.db.write() as connection:
            cursor = connection.executemany(
                "UPDATE memories SET embedding = ?, embedding_model = ? WHERE pk = ? AND content_hash = ?",
                [(to_blob(vector), model, pk, digest) for pk, digest, vector in items],
            )
            return cursor.rowcount

    def pending_count(self) -> int:
        return self.count_pending(self.model_key)

    # ---- add ------------------------------------------------------------------------------
    def add(
        self,
        memory_type: str,
        content: str,
        *,
        workflow_id: str | None,
        metadata: dict[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        force: bool = False,
    ) -> AddOutcome:
        vector = self._try_embed(content)
        key = content_hash(content)
        workflow = workflow_id or ""
        now = _now()
        with self.db.write() as connection:
            if not force:
                duplicate = self._find_duplicate(connection, workflow, key, vector)
                if duplicate is not None:
                    row, similarity = duplicate
                    memory = Memory.of(row, self.model_key)
                    return AddOutcome(
                        memory=memory,
                        stored=False,
                        duplicate_of=memory.id,
                        duplicate_similarity=similarity,
                        embedding_generated=memory.embedded,
                    )
            memory_id = f"mem_{uuid.uuid4().hex}"
            inserted = connection.execute(
                "INSERT INTO memories(id, type, content, content_hash, metadata, tags, workflow_id, created_at, "
                "updated_at, embedding, embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk",
                (
                    memory_id,
                    memory_type,
                    content,
                    key,
                    json.dumps(metadata or {}, ensure_ascii=False),
                    json.dumps(normalize_tags(tags), ensure_ascii=False),
                    workflow,
                    now,
                    now,
                    to_blob(vector) if vector is not None else None,
                    self.model_key if vector is not None else None,
                ),
            )
            pk = inserted.fetchone()[0]
            if pk % 1000 == 0:
                connection.execute(
                    "DELETE FROM memory_changes WHERE seq < (SELECT max(seq) FROM memory_changes) - ?",
                    (CHANGE_LOG_KEEP,),
                )
            row = connection.execute(f"SELECT {_COLUMNS} FROM memories WHERE pk = ?", (pk,)).fetchone()
        note = None
        if vector is None:
            note = f"stored without a vector ({self._unavailable_reason()}); it is searchable by text"
            if self.embeddings is not None and self.embeddings.embedder.status.value != "failed":
                note += " and will be embedded in the background once the model is loaded"
                self.kick_pending()
        return AddOutcome(
            memory=Memory.of(row, self.model_key), stored=True, embedding_generated=vector is not None, note=note
        )

    def _find_duplicate(
        self, connection: Any, workflow: str, key: str, vector: np.ndarray | None
    ) -> tuple[Any, float] | None:
        row = connection.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE workflow_id = ? AND content_hash = ? ORDER BY pk LIMIT 1",
            (workflow, key),
        ).fetchone()
        if row is not None:
            return row, 1.0
        if vector is None:
            return None
        index = self.vector_index(connection)
        if index is None:
            return None
        with index.lock:
            hits = index.search(vector, (workflow,), None, self.duplicate_threshold, 1)
        if not hits:
            return None
        row = connection.execute(f"SELECT {_COLUMNS} FROM memories WHERE pk = ?", (hits[0].pk,)).fetchone()
        return (row, round(hits[0].similarity, 4)) if row is not None else None

    # ---- read -----------------------------------------------------------------------------
    def _visible_row(self, connection: Any, memory_id: str, workflow_id: str | None, *, deleting: bool = False) -> Any:
        """The memory, if this call may see it; NOT_FOUND otherwise, saying when it was deleted if it was
        (`tombstones.py`; `deleting`: and that a repeated delete has nothing left to do)."""
        row = connection.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        visible = visible_workflows(workflow_id, "both")
        if row is None and (gone := tombstones.already_deleted(connection, memory_id, visible, deleting=deleting)):
            raise gone
        if row is None or row["workflow_id"] not in visible:
            where = f"workflow {workflow_id!r}" if workflow_id else "general mode"
            raise not_found(
                f"no memory {memory_id!r} visible in {where}; memories of another workflow are only visible with "
                "that workflow_id. Use memory_list or memory_search to find ids."
            )
        return row

    def get(self, memory_id: str, *, workflow_id: str | None) -> Memory:
        with self.db.read() as connection:
            return Memory.of(self._visible_row(connection, memory_id, workflow_id), self.model_key)

    def list(
        self,
        *,
        workflow_id: str | None,
        scope: ScopeName = "both",
        type_filter: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> tuple[list[Memory], int]:
        """Newest first; returns the page and the total number of matching memories."""
        where, args = self._filters(visible_workflows(workflow_id, scope), type_filter, tags)
        with self.db.read() as connection:
            total = connection.execute(f"SELECT count(*) FROM memories m WHERE {where}", args).fetchone()[0]
            rows = connection.execute(
                f"SELECT {_COLUMNS} FROM memories m WHERE {where} ORDER BY created_at DESC, pk DESC LIMIT ?",
                [*args, limit],
            ).fetchall()
        return [Memory.of(row, self.model_key) for row in rows], total

    def _filters(
        self, workflows: tuple[str, ...], type_filter: str | None, tags: Sequence[str] | None
    ) -> tuple[str, builtins.list[Any]]:
        clauses = [f"m.workflow_id IN ({','.join('?' * len(workflows))})"]
        args: builtins.list[Any] = list(workflows)
        if type_filter is not None:
            clauses.append("m.type = ?")
            args.append(type_filter)
        for tag in normalize_tags(tags):
            clauses.append(self.dialect.tag)
            args.append(tag)
        return " AND ".join(clauses), args

    # ---- search ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        workflow_id: str | None,
        scope: ScopeName = "both",
        type_filter: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        threshold: float | None = None,
        mode: SearchMode = "vector",
    ) -> SearchOutcome:
        """Memories by meaning (or also by words in hybrid mode), best first.

        `threshold` None: by the calibrated confidence (`confidence.py`), else the embedding model's calibrated
        similarity. Matches that clear it come first; when fewer than `MIN_OFFERED` do, the nearest others complete
        the answer, marked `below_threshold`, so a question in other words never gets an empty answer while a
        relevant memory exists.
        """
        workflows = visible_workflows(workflow_id, scope)
        if self.jobs is not None:
            self.jobs.refuse_other_model()
        notes: builtins.list[str] = []
        query_vector, reason = self._query_vector(query)
        if query_vector is None:
            notes.append(f"text search (BM25) instead of {mode}: {reason}")
            return SearchOutcome(self._by_words(query, workflows, type_filter, tags, limit), "text", notes=notes)

        wanted_tags = set(normalize_tags(tags))
        with self.db.read() as connection:
            index = self.vector_index(connection)
            waiting = 0
            if index is not None:
                with index.lock:
                    waiting = index.pending_in(workflows)
        if waiting:  # e.g. added while the model was loading: embed them now rather than miss them
            budget = PENDING_INLINE_MAX
            while budget > 0 and (done := self.embed_pending(min(PENDING_BATCH, budget))) > 0:
                budget -= done
        with self.db.read() as connection:
            index = self.vector_index(connection)
            assert index is not None
            with index.lock:
                # unthresholded candidates (the threshold sorts them into above/below); over-fetch when tags
                # filter after the vector step, and for the fusion of hybrid mode
                fetch = max(limit, MIN_OFFERED) if not wanted_tags else min(len(index) or 1, max(limit * 20, 200))
                if mode == "hybrid":
                    fetch = max(fetch, limit * 4, 50)
                vector_hits = index.search(query_vector, workflows, type_filter, -1.0, fetch)
                pending = index.pending_in(workflows)
                text_hits = (
                    self._text_hits(connection, query, workflows, type_filter, tags, max(limit * 4, 50))
                    if mode == "hybrid"
                    else []
                )
                extra_similarity = {pk: index.similarity(query_vector, pk) for pk, _ in text_hits}
            candidates = [h.pk for h in vector_hits] + [pk for pk, _ in text_hits]
            rows = self._rows(connection, candidates)
            calibrated = calibration(self.model_key)
            held = held_terms(connection, self.dialect, query, candidates) if calibrated or text_hits else {}
        embed = self.embeddings.embed_query if self.embeddings is not None else None
        judge = Judge(query, query_vector, calibrated, held, self._similarity, embed) if calibrated and embed else None
        if wanted_tags:
            vector_hits = [
                h for h in vector_hits if h.pk in rows and wanted_tags <= set(json.loads(rows[h.pk]["tags"]))
            ]
        if pending:
            notes.append(
                f"{pending} memories in scope are not embedded yet (being embedded in the background); "
                "mode='hybrid' also finds them by words"
            )
        if mode == "vector":
            found = [
                Found(Memory.of(rows[h.pk], self.model_key), round(h.similarity, 4), None, ("vector",))
                for h in vector_hits
                if h.pk in rows
            ]
            return SearchOutcome(self._offer(found, threshold, limit, notes, judge), "vector", pending, notes)
        found = self._fused(vector_hits, text_hits, extra_similarity, coverage(query, held), rows)
        return SearchOutcome(self._offer(found, threshold, limit, notes, judge), "hybrid", pending, notes)

    def _similarity(self, vector: np.ndarray, pk: int) -> float | None:
        """The cosine of a query vector with the memory `pk`'s (None: it has none now)."""
        index = self._index
        if index is None:
            return None
        with index.lock:
            return index.similarity(vector, pk)

    def _fused(
        self,
        vector_hits: Sequence[Any],
        text_hits: Sequence[tuple[int, float]],
        extra_similarity: dict[int, float | None],
        coverage: dict[int, float],
        rows: dict[int, Any],
    ) -> builtins.list[Found]:
        """Hybrid mode's ranking: similarity plus a keyword bonus, TEXT_WEIGHT × coverage³.

        Fusion by score, not by rank: coverage is the share of the searched words a memory holds. On
        benchmarks/data/memory_eval.json, reciprocal-rank fusion let any memory sharing one incidental word ("phone",
        "night") outrank the right paraphrase (hybrid recall@1 0.50 against 0.83 for vector on the first 30
        questions), and a bonus proportional to BM25 still lost 2 of 62 at @1. The cube barely moves a memory holding
        one word of three, yet lifts the one that names the ticket, host or error code asked about over its
        near-identical twin: hybrid equals vector on the paraphrase questions and equals BM25 on the keyword ones
        (flat for weights 0.15–0.25, powers 3–4)."""
        fused: dict[int, float] = {}
        matched: dict[int, list[str]] = {}
        similarity: dict[int, float | None] = {}
        for hit in vector_hits:
            fused[hit.pk] = hit.similarity
            matched.setdefault(hit.pk, []).append("vector")
            similarity[hit.pk] = hit.similarity
        for pk, _ in text_hits:
            similarity.setdefault(pk, extra_similarity.get(pk))
            base = fused.get(pk, similarity[pk] if similarity[pk] is not None else 0.0)
            fused[pk] = float(base or 0.0) + TEXT_WEIGHT * coverage.get(pk, 0.0) ** COVERAGE_POWER
            matched.setdefault(pk, []).append("text")
        ranked = sorted(fused, key=lambda pk: fused[pk], reverse=True)
        return [
            Found(
                Memory.of(rows[pk], self.model_key),
                None if similarity[pk] is None else round(float(similarity[pk] or 0.0), 4),
                round(fused[pk], 6),
                tuple(matched[pk]),
            )
            for pk in ranked
            if pk in rows
        ]

    def _query_vector(self, query: str) -> tuple[np.ndarray | None, str]:
        """The query's vector, or None and why (the model is unavailable, still loading, or failed on it)."""
        # a bounded wait for a loading model (none with wait_seconds 0): semantic results are worth a few seconds
        if self.embeddings is not None and self.jobs is not None and self.jobs.wait_for_model():
            try:
                return self.embeddings.embed_query(query), ""
            except EmbeddingUnavailable:
                pass
            except Exception:
                logger.warning("embedding the query failed; answering by text search", exc_info=True)
                return None, "embedding the query failed (see the server log)"
        reason = self._unavailable_reason()
        status = self.embeddings.embedder.status.value if self.embeddings is not None else "failed"
        if status in ("loading", "not_loaded") and self.wait_seconds > 0:
            reason += f" (still loading after waiting {self.wait_seconds:g} s; retry shortly)"
        return None, reason

    def _by_words(
        self, query: str, workflows: tuple[str, ...], type_filter: str | None, tags: Sequence[str] | None, limit: int
    ) -> builtins.list[Found]:
        """The text search (BM25) that answers without the model."""
        with self.db.read() as connection:
            hits = self._text_hits(connection, query, workflows, type_filter, tags, limit)
            rows = self._rows(connection, [pk for pk, _ in hits])
        return [
            Found(Memory.of(rows[pk], self.model_key), None, round(score, 4), ("text",))
            for pk, score in hits
            if pk in rows
        ]

    def threshold_for(self, requested: float | None) -> float:
        """The similarity threshold in force: the caller's; by default, for a calibrated model, the similarity a
        result with no margin over the others needs to reach `MIN_CONFIDENCE`, else the model's calibrated one."""
        if requested is not None:
            return requested
        coefficients = calibration(self.model_key)
        return similarity_at(MIN_CONFIDENCE, coefficients) if coefficients else calibrated_threshold(self.model_key)

    def _offer(
        self,
        found: builtins.list[Found],
        threshold: float | None,
        limit: int,
        notes: builtins.list[str],
        judge: Judge | None,
    ) -> builtins.list[Found]:
        """Each result with its confidence (`judge`: a calibrated model); those that clear the threshold first, in rank
        order (by default a confidence of `MIN_CONFIDENCE`; the caller's `threshold` on the score); when fewer than
        `MIN_OFFERED` do, the nearest others complete the answer, marked below the threshold. Results are judged in
        rank order until `limit` clear: those after are never offered, and judging costs an embedding at times."""

        def judged(item: Found) -> Found:
            if judge is None or item.confidence is not None:
                return item
            score, evidence = judge.judge(item.memory.pk, item.similarity)
            return dataclasses.replace(item, confidence=score, evidence=evidence)

        if threshold is None and judge is not None:
            clears: builtins.list[Found] = []
            for index, item in enumerate(found):
                found[index] = item = judged(item)
                if (item.confidence or 0.0) >= MIN_CONFIDENCE:
                    clears.append(item)
                    if len(clears) == limit:
                        break
            what = f"the confidence threshold {MIN_CONFIDENCE:g}"
        else:
            cutoff = self.threshold_for(threshold)
            # hybrid results carry their fused score (similarity plus the keyword bonus); vector ones their similarity
            clears = [f for f in found if (f.score if f.score is not None else f.similarity or 0.0) >= cutoff]
            what = f"the similarity threshold {cutoff:g}"
        offered = clears[:limit]
        if len(offered) < min(limit, MIN_OFFERED):
            cleared = {id(f) for f in clears}
            nearest = [f for f in found if id(f) not in cleared][: min(limit, MIN_OFFERED) - len(offered)]
            extra = [dataclasses.replace(item, below_threshold=True) for item in nearest]
            if not offered and extra:
                notes.append(
                    f"no memory reached {what}; the nearest ones are shown, marked below_threshold (see their "
                    "verdict): judge them, or ask in other words"
                )
            offered += extra
        return [judged(item) for item in offered]

    def _text_hits(
        self,
        connection: Any,
        query: str,
        workflows: tuple[str, ...],
        type_filter: str | None,
        tags: Sequence[str] | None,
        limit: int,
    ) -> builtins.list[tuple[int, float]]:
        """BM25 over content and tags: any query word matches (stemmed); best first, score > 0."""
        match = self.dialect.match(query)
        if match is None:
            return []
        where, args = self._filters(workflows, type_filter, tags)
        rows = connection.execute(self.dialect.text_hits.format(where=where), [match, *args, limit]).fetchall()
        return [(row["pk"], -float(row["rank"])) for row in rows]

    @staticmethod
    def _rows(connection: Any, pks: Sequence[int]) -> dict[int, Any]:
        found: dict[int, Any] = {}
        unique = list(dict.fromkeys(pks))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in connection.execute(f"SELECT {_COLUMNS} FROM memories WHERE pk IN ({marks})", chunk):
                found[row["pk"]] = row
        return found

    # ---- update / delete ------------------------------------------------------------------
    def update(
        self,
        memory_id: str,
        *,
        workflow_id: str | None,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: Sequence[str] | None = None,
    ) -> tuple[Memory, builtins.list[str], bool | None]:
        """Returns (memory, changed fields, embedding_generated or None if content did not change)."""
        with self.db.read() as connection:
            current = self._visible_row(connection, memory_id, workflow_id)
        vector = None
        content_changed = content is not None and content != current["content"]
        if content_changed:
            vector = self._try_embed(content or "")
        with self.db.write() as connection:
            row = self._visible_row(connection, memory_id, workflow_id)
            sets: builtins.list[str] = ["updated_at = ?"]
            args: builtins.list[Any] = [_now()]
            changed: builtins.list[str] = []
            if content is not None and content != row["content"]:
                sets += ["content = ?", "content_hash = ?", "embedding = ?", "embedding_model = ?"]
                args += [
                    content,
                    content_hash(content),
                    to_blob(vector) if vector is not None else None,
                    self.model_key if vector is not None else None,
                ]
                changed.append("content")
            if metadata is not None:
                sets.append("metadata = ?")
                args.append(json.dumps(metadata, ensure_ascii=False))
                changed.append("metadata")
            if tags is not None:
                sets.append("tags = ?")
                args.append(json.dumps(normalize_tags(tags), ensure_ascii=False))
                changed.append("tags")
            connection.execute(f"UPDATE memories SET {', '.join(sets)} WHERE pk = ?", [*args, row["pk"]])
            updated = connection.execute(f"SELECT {_COLUMNS} FROM memories WHERE pk = ?", (row["pk"],)).fetchone()
        embedded: bool | None = None
        if "content" in changed:
            embedded = vector is not None
            if vector is None:
                self.kick_pending()
        return Memory.of(updated, self.model_key), changed, embedded

    def delete(self, memory_id: str, *, workflow_id: str | None) -> Memory:
        """Delete the memory, leaving its tombstone (`tombstones.py`)."""
        with self.db.write() as connection:
            row = self._visible_row(connection, memory_id, workflow_id, deleting=True)
            connection.execute("DELETE FROM memories WHERE pk = ?", (row["pk"],))
            tombstones.record(connection, row["id"], row["workflow_id"], _now(), self.tombstones_kept)
        return Memory.of(row, self.model_key)

    def clear_by_type(self, memory_type: str, *, workflow_id: str | None) -> int:
        """Delete every memory of this type in the active scope only (the workflow, or general), leaving tombstones."""
        with self.db.write() as connection:
            tombstones.record_cleared(connection, workflow_id or "", memory_type, _now(), self.tombstones_kept)
            cursor = connection.execute(
                "DELETE FROM memories WHERE workflow_id = ? AND type = ?", (workflow_id or "", memory_type)
            )
            return cursor.rowcount

    def counts(self) -> dict[str, int]:
        with self.db.read() as connection:
            return {
                row["type"]: row["n"]
                for row in connection.execute("SELECT type, count(*) AS n FROM memories GROUP BY type")
            }

    def close(self) -> None:
        if self.jobs is not None:
            self.jobs.close()
        self.db.close()


def wait_until(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate()` until true or `timeout` seconds elapse (used by tests and the benchmark)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
