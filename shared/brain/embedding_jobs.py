"""Embedding the brain's nodes in the background: what rag_ops' ingest and web_ops' page ingest both leave behind.

Nodes are written with an `embed_text` and no vector; a daemon thread wakes after each write (`wake()`), embeds
pending nodes in small batches through the shared `EmbeddingService` (whose (model, content-hash) cache means
identical text is never embedded twice) and stores the vectors. Text search answers meanwhile; a search by
meaning can wait for the model (`wait_for_model`) or fall back to text and say why.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.install_hints import install_hint

logger = logging.getLogger("mcp_sections.brain")

Progress = Callable[[int, int, str], None]
#: For brains embedded before the model lock: the model most of their vectors come from.
EXISTING_MODEL_SQL = "SELECT model FROM vectors GROUP BY model ORDER BY count(*) DESC LIMIT 1"
EMBED_BATCH = 32


class EmbeddingJobs:
    """The background embedding of one store's pending nodes (a mixin: it uses `store` and `embeddings`)."""

    store: Any
    embeddings: Any

    def start_embedding_jobs(self, *, background: bool, wait_seconds: float) -> None:
        from mcp_sections.shared.embeddings.model_lock import ModelLock

        cache = getattr(self.embeddings, "cache", None) if self.embeddings is not None else None
        self.model_lock = ModelLock(cache.database, EXISTING_MODEL_SQL) if cache is not None else None
        self.embedding_wait_seconds = wait_seconds
        self.embedded_by_model = 0
        self._embed_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        if background and self.embeddings is not None:
            self._worker = threading.Thread(target=self._embed_loop, name="brain-embeddings", daemon=True)
            self._worker.start()

    def stop_embedding_jobs(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=5)

    def wake(self) -> None:
        """New pending nodes: the background worker embeds them soon."""
        self._wake.set()

    def other_model(self) -> str | None:
        """The model the brain's vectors belong to, when it is not the configured one (see `reembed`)."""
        if self.model_lock is None or self.model_key is None:
            return None
        return self.model_lock.mismatch(self.model_key)

    def refuse_other_model(self) -> None:
        """Searches by meaning with another model than the vectors' are refused (they cannot be compared)."""
        stored = self.other_model()
        if stored is not None:
            from mcp_sections.shared.embeddings.model_lock import mismatch_failure

            raise mismatch_failure(stored, self.model_key or "", "brain", "rag_ops")

    def reembed(self) -> str | None:
        """Give the brain to the configured model: every node is embedded again in the background. Returns the
        model the vectors belonged to before."""
        if self.model_lock is None or self.model_key is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled: there is no model to re-embed with")
        previous = self.model_lock.stored()
        self.model_lock.switch(self.model_key)
        self.wake()
        return previous

    @property
    def model_key(self) -> str | None:
        return self.embeddings.model_key if self.embeddings is not None else None

    def embedding_status(self) -> str:
        if self.embeddings is None:
            return "disabled"
        return self.embeddings.embedder.describe()

    def _embed_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=10)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self.other_model() is not None:
                continue  # the vectors belong to another model until `reembed`
            embedder = self.embeddings.embedder
            if not embedder.ready:
                if str(embedder.status) == "not_loaded" and self.store.count_pending(self.model_key) > 0:
                    embedder.start_loading()
                    embedder.on_ready(self._wake.set)
                continue
            try:
                while not self._stop.is_set() and self.embed_pending(max_batches=4) > 0:
                    pass
            except Exception:  # the next wake-up retries; searches fall back to text meanwhile
                logger.warning("background embedding failed", exc_info=True)
                time.sleep(2)

    def embed_pending(
        self, project_ids: Sequence[str] | None = None, max_batches: int | None = None, batch: int = EMBED_BATCH
    ) -> int:
        """Embed up to `max_batches` batches of pending nodes; returns how many vectors were written."""
        written = 0
        batches = 0
        model = self.model_key
        if self.other_model() is not None:
            return 0
        while max_batches is None or batches < max_batches:
            with self._embed_lock:
                pending = self.store.pending_embeddings(model, batch, project_ids)
                if not pending:
                    break
                before = self.embeddings.model_calls
                vectors = self.embeddings.embed([text for _, text, _ in pending])
                if self.model_lock is not None and model is not None:
                    self.model_lock.claim(model)
                self.embedded_by_model += self.embeddings.model_calls - before
                written += self.store.put_vectors(
                    model, [(nid, digest, vectors[i]) for i, (nid, _, digest) in enumerate(pending)]
                )
            batches += 1
        return written

    def wait_for_model(self, timeout: float | None = None) -> bool:
        if self.embeddings is None:
            return False
        embedder = self.embeddings.embedder
        if embedder.ready:
            return True
        if str(embedder.status) == "failed":
            return False
        return embedder.wait_ready(self.embedding_wait_seconds if timeout is None else timeout)

    def generate_embeddings(
        self, project_ids: Sequence[str] | None, max_seconds: float, progress: Progress | None = None
    ) -> dict[str, Any]:
        if self.embeddings is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled in this configuration.")
        self.refuse_other_model()
        if not self.wait_for_model():
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"{self.embedding_status()}; text search keeps working. Retry later if it is loading; else "
                f"{install_hint('rag')}.",
            )
        model = self.model_key
        total = self.store.count_pending(model, project_ids)
        deadline = time.monotonic() + max_seconds
        before_model = self.embedded_by_model
        done = 0
        while time.monotonic() < deadline:
            count = self.embed_pending(project_ids, max_batches=1)
            if count == 0 and self.store.count_pending(model, project_ids) == 0:
                break
            done += count
            if progress is not None:
                progress(done, total, f"{done}/{total} embeddings")
        remaining = self.store.count_pending(model, project_ids)
        return {
            "embedded": done,
            "computed_by_model": self.embedded_by_model - before_model,
            "pending": remaining,
            "complete": remaining == 0,
            "model": model,
        }
