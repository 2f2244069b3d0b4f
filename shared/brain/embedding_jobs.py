"""Embedding the brain's nodes in the background: what rag_ops' ingest and web_ops' page ingest both leave behind.

Nodes are written with an `embed_text` and no vector; the shared `EmbeddingWorker` (shared.embeddings.worker) wakes
after each write (`wake()`), embeds pending nodes in small batches through the `EmbeddingService` and stores the
vectors through the brain store (which implements its `PendingItems`). Text search answers meanwhile; a search by
meaning can wait for the model (`wait_for_model`) or fall back to text and say why. The section that opens the
brain names itself (`owner`): messages tell the operator to run `mcp-sections reembed <owner>`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp_sections.shared.embeddings.worker import EmbeddingWorker
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

Progress = Callable[[int, int, str], None]
#: For brains embedded before the model lock: the model most of their vectors come from.
EXISTING_MODEL_SQL = "SELECT model FROM vectors GROUP BY model ORDER BY count(*) DESC LIMIT 1"
EMBED_BATCH = 32


class EmbeddingJobs:
    """The background embedding of one store's pending nodes (a mixin: it uses `store` and `embeddings`)."""

    store: Any
    embeddings: Any
    embedding_worker: EmbeddingWorker | None

    def start_embedding_jobs(self, *, owner: str, background: bool, wait_seconds: float) -> None:
        """`owner`: the id of the section whose `mcp-sections reembed` re-embeds this brain."""
        from mcp_sections.shared.embeddings.model_lock import ModelLock

        self.embedding_worker = None
        if self.embeddings is None:
            return
        cache = getattr(self.embeddings, "cache", None)
        lock = ModelLock(cache.database, EXISTING_MODEL_SQL) if cache is not None else None
        self.embedding_worker = EmbeddingWorker(
            self.embeddings,
            self.store,
            lock,
            owner=owner,
            store="brain",
            wait_seconds=wait_seconds,
            background=background,
            batch=EMBED_BATCH,
        )

    def stop_embedding_jobs(self) -> None:
        if self.embedding_worker is not None:
            self.embedding_worker.close()

    def wake(self) -> None:
        """New pending nodes: the background worker embeds them soon."""
        if self.embedding_worker is not None:
            self.embedding_worker.wake()

    def other_model(self) -> str | None:
        """The model the brain's vectors belong to, when it is not the configured one (see `reembed`)."""
        return self.embedding_worker.other_model() if self.embedding_worker is not None else None

    def refuse_other_model(self) -> None:
        """Searches by meaning with another model than the vectors' are refused (they cannot be compared)."""
        if self.embedding_worker is not None:
            self.embedding_worker.refuse_other_model()

    def reembed(self) -> str | None:
        """Give the brain to the configured model: every node is embedded again in the background. Returns the
        model the vectors belonged to before."""
        if self.embedding_worker is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled: there is no model to re-embed with")
        return self.embedding_worker.reembed()

    @property
    def model_key(self) -> str | None:
        return self.embeddings.model_key if self.embeddings is not None else None

    def embedding_status(self) -> str:
        if self.embeddings is None:
            return "disabled"
        return str(self.embeddings.embedder.describe())

    def embed_pending(
        self, project_ids: Sequence[str] | None = None, max_batches: int | None = None, batch: int = EMBED_BATCH
    ) -> int:
        """Embed up to `max_batches` batches of pending nodes; returns how many vectors were written."""
        if self.embedding_worker is None:
            return 0
        return self.embedding_worker.embed_pending(project_ids, max_batches=max_batches, batch=batch)

    def wait_for_model(self, timeout: float | None = None) -> bool:
        if self.embedding_worker is None:
            return False
        return self.embedding_worker.wait_for_model(timeout)

    def generate_embeddings(
        self, project_ids: Sequence[str] | None, max_seconds: float, progress: Progress | None = None
    ) -> dict[str, Any]:
        if self.embedding_worker is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled in this configuration.")
        self.refuse_other_model()
        if not self.wait_for_model():
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"{self.embedding_status()}; text search keeps working. Retry later if it is loading; else "
                f"{install_hint('memory')}.",
            )
        model = self.model_key
        total = self.store.count_pending(model, project_ids)
        deadline = time.monotonic() + max_seconds
        before_model = self.embedding_worker.computed
        done = 0
        while time.monotonic() < deadline and not self.embedding_worker.closed:
            count = self.embed_pending(project_ids, max_batches=1)
            if count == 0 and self.store.count_pending(model, project_ids) == 0:
                break
            done += count
            if progress is not None:
                progress(done, total, f"{done}/{total} embeddings")
        remaining = self.store.count_pending(model, project_ids)
        return {
            "embedded": done,
            "computed_by_model": self.embedding_worker.computed - before_model,
            "pending": remaining,
            "complete": remaining == 0,
            "model": model,
        }
