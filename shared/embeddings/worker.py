"""The background embedding of one store's pending items (memory's memories, the brain's nodes), and the model lock
of its vectors.

A store writes its items at once, without a vector; `EmbeddingWorker` embeds the pending ones in batches through
the store's `EmbeddingService` (whose (model, content hash) cache means identical text is never embedded twice) and
hands the vectors back to the store. A daemon thread does it after each `wake()` (and every `POLL_SECONDS`: another
process may have left items pending); when the model is not loaded yet it starts the load if there is work, and
resumes once the model is ready. Searches wait for the model up to `wait_seconds` (`wait_for_model`), else answer
by text. The store's own SQL stays the store's: it implements `PendingItems`.

The vectors of a store belong to one model (`ModelLock`): with another model configured, nothing is embedded and
searches by meaning are refused (`refuse_other_model`, naming the section whose `mcp-sections reembed` hands the
store over: `owner`) until `reembed`.

Stopping (`close`, and for every worker still open when the interpreter exits): no new batch starts, and `close`
returns once the batch in flight (background or on demand) and a model still loading have finished. A process must
never exit while a thread is inside the model: ONNX Runtime's threads torn down under a running session abort the
process ("terminate called without an active exception"). What was not embedded stays pending in the store, and the
next worker on it (the next start) embeds it.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from mcp_sections.shared.embeddings.model_lock import ModelLock, mismatch_failure
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

logger = logging.getLogger("mcp_sections.embeddings")

POLL_SECONDS = 10.0
RETRY_PAUSE_SECONDS = 2.0
STOP_SECONDS = 120.0
"""The longest `close` waits for a batch in flight or a model loading (one batch of 32 short texts takes well under a
second on a quiet CPU, seconds on a busy one; an endpoint's retries take longer)."""
LOOKAHEAD_BATCHES = 16
"""A batch is chosen among this many batches' worth of pending items: the ones the model reads the most tokens of
go together, so a batch is padded to texts of about its own length. On the brain evaluation's code, 34% fewer
tokens go through the model than in batches taken in store order (`python -m benchmarks.bench_retrieval`)."""


class PendingItems(Protocol):
    """What a store offers the worker: its items without a vector of `model`, and a way to store vectors."""

    def pending_embeddings(self, model: str, limit: int, scope: Sequence[str] | None = None) -> list[Any]:
        """Up to `limit` (key, text, text hash) of items without a current vector of `model`, in `scope` if given."""
        ...

    def count_pending(self, model: str, scope: Sequence[str] | None = None) -> int: ...

    def put_vectors(self, model: str, items: Sequence[tuple[Any, str, np.ndarray]]) -> int:
        """Store (key, text hash, vector); an item whose text changed meanwhile is skipped. Returns how many."""
        ...


class EmbeddingWorker:
    """Embeds one store's pending items in batches, in a background thread and on demand (`embed_pending`)."""

    def __init__(
        self,
        service: Any,
        items: PendingItems,
        lock: ModelLock | None,
        *,
        owner: str,
        store: str,
        wait_seconds: float,
        background: bool = True,
        batch: int = 32,
    ) -> None:
        """`service`: an `EmbeddingService`; `owner`: the section id `mcp-sections reembed` takes for this store;
        `store`: how messages name it ("memory store", "brain")."""
        self.service = service
        self.items = items
        self.lock = lock
        self.owner = owner
        self.store = store
        self.wait_seconds = wait_seconds
        self.batch = batch
        self.computed = 0  # texts this worker had the model embed (cache hits not counted)
        self._token_counts: dict[str, int] = {}  # of the last window of pending items (`_longest`)
        self._embed_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._listening = False
        self._thread: threading.Thread | None = None
        _OPEN.add(self)
        if background:
            self._thread = threading.Thread(target=self._run, name=f"embeddings-{owner}", daemon=True)
            self._thread.start()

    @property
    def model_key(self) -> str:
        return str(self.service.model_key)

    # ---- the model lock ---------------------------------------------------------------------------------------
    def other_model(self) -> str | None:
        """The model the store's vectors belong to, when it is not the configured one (see `reembed`)."""
        return self.lock.mismatch(self.model_key) if self.lock is not None else None

    def refuse_other_model(self) -> None:
        """Searches by meaning with another model than the vectors' are refused (they cannot be compared)."""
        stored = self.other_model()
        if stored is not None:
            raise mismatch_failure(stored, self.model_key, self.store, self.owner)

    def reembed(self) -> str | None:
        """Give the store to the configured model: its items are embedded again in the background. Returns the model
        the vectors belonged to before."""
        if self.lock is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "embeddings are disabled: there is no model to re-embed with")
        previous = self.lock.stored()
        self.lock.switch(self.model_key)
        self.wake()
        return previous

    # ---- embedding --------------------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of `texts` now (the model must be ready); the store becomes the model's if it is nobody's yet."""
        before = self.service.model_calls
        vectors = self.service.embed(texts)
        self.computed += self.service.model_calls - before
        if self.lock is not None:
            self.lock.claim(self.model_key)
        return vectors

    def embed_pending(
        self, scope: Sequence[str] | None = None, *, max_batches: int | None = None, batch: int | None = None
    ) -> int:
        """Embed up to `max_batches` batches of pending items (all: None); returns how many vectors were stored.
        Nothing while the model is not ready or the store belongs to another model."""
        if not self.service.embedder.ready or self.other_model() is not None:
            return 0
        model = self.model_key
        size = batch or self.batch
        written = batches = 0
        while max_batches is None or batches < max_batches:
            with self._embed_lock:
                if self._stop.is_set():  # closing: the batch in flight was the last
                    break
                pending = self._longest(self.items.pending_embeddings(model, size * LOOKAHEAD_BATCHES, scope), size)
                if not pending:
                    break
                vectors = self.embed([text for _, text, _ in pending])
                written += self.items.put_vectors(
                    model, [(key, digest, vectors[i]) for i, (key, _, digest) in enumerate(pending)]
                )
            batches += 1
        return written

    def _longest(self, pending: list[Any], size: int) -> list[Any]:
        """The `size` items of `pending` the model reads the most tokens of (the first `size` when the backend does
        not count tokens: torch, an endpoint)."""
        if len(pending) <= size:
            return pending
        known = self._token_counts  # by text hash: the next batch's window is mostly this one's
        new = {digest: text for _, text, digest in pending if digest not in known}
        if new:
            counts = self.service.embedder.token_counts(list(new.values()))
            if counts is None:
                return pending[:size]
            known.update(zip(new, counts, strict=True))
        self._token_counts = {digest: known[digest] for _, _, digest in pending}  # no more than one window
        chosen = sorted(range(len(pending)), key=lambda i: -self._token_counts[pending[i][2]])[:size]
        return [pending[i] for i in sorted(chosen)]

    def wait_for_model(self, timeout: float | None = None) -> bool:
        """True once the model is ready, waiting up to `timeout` (default `wait_seconds`) while it loads."""
        embedder = self.service.embedder
        if embedder.ready:
            return True
        if str(embedder.status) == "failed":
            return False
        return bool(embedder.wait_ready(self.wait_seconds if timeout is None else timeout))

    # ---- the background thread --------------------------------------------------------------------------------
    def wake(self) -> None:
        """New pending items: the background thread embeds them soon."""
        self._wake.set()

    @property
    def closed(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        """Stop: no batch starts any more; returns once the batch in flight and a model still loading are done."""
        self._stop.set()
        self._wake.set()
        _OPEN.discard(self)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_SECONDS)
            if thread.is_alive():
                logger.warning("the background embedding of the %s did not stop in %.0f s", self.store, STOP_SECONDS)
        if self._embed_lock.acquire(timeout=STOP_SECONDS):  # a batch embedded on demand, in a tool's thread
            self._embed_lock.release()
        embedder = self.service.embedder
        if str(embedder.status) == "loading":
            embedder.wait_ready(STOP_SECONDS)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=POLL_SECONDS)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self.other_model() is not None:
                continue  # the vectors belong to another model until `reembed`
            embedder = self.service.embedder
            if not embedder.ready:
                if str(embedder.status) == "not_loaded" and self.items.count_pending(self.model_key) > 0:
                    embedder.start_loading()
                if not self._listening:
                    self._listening = True
                    embedder.on_ready(self.wake)  # resume once loaded
                continue
            try:
                while not self._stop.is_set() and self.embed_pending(max_batches=4) > 0:
                    pass
            except Exception:  # the next wake-up retries; searches fall back to text meanwhile
                logger.warning("background embedding of the %s failed", self.store, exc_info=True)
                self._stop.wait(RETRY_PAUSE_SECONDS)


_OPEN: weakref.WeakSet[EmbeddingWorker] = weakref.WeakSet()


@atexit.register
def _close_open_workers() -> None:
    """At interpreter exit, before threads are torn down: every worker still open stops between two batches."""
    for worker in list(_OPEN):
        worker.close()
