"""The embedder: one model loaded lazily, once per process (`get_embedder`), on ONNX Runtime or torch."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


from mcp_sections.shared.embeddings import default_model
from mcp_sections.shared.embeddings.onnx import (
    EmbeddingModelUnavailable,
    OnnxModel,
    check_onnx_compatible,
    content_digests,
    default_onnx_dir,
    ensure_onnx,
    export_name,
    failure_reason,
    gpu_visible,
    local_model_dir,
)
from mcp_sections.shared.embeddings.requirements import ONNX_MODULES
from mcp_sections.shared.embeddings.settings import (
    BUNDLED_NAMES,
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    EmbedderStatus,
    EmbeddingSettings,
    EmbeddingUnavailable,
)
from mcp_sections.shared.framework.requirements import installed
from mcp_sections.shared.ground.install_hints import TORCH_EXTRA, install_hint

logger = logging.getLogger("mcp_sections.embeddings")


def bundled_model_dir() -> Path | None:
    """The default model's directory on this machine without any network (the offline carrier package, else the
    Hugging Face cache at the pinned revision), not checked yet: `default_model.resolve` checks it at load."""
    return default_model.local_copy(None)


def default_model_runs() -> bool:
    """Whether the default model can run here on its default backend with no network (its files and the ONNX
    libraries are installed), looked up without importing them."""
    return all(installed(name) for name in ONNX_MODULES) and bundled_model_dir() is not None


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
        allow_download: bool | None = None,
        threads: int = 0,
        backend: str = DEFAULT_BACKEND,
        onnx_dir: str | Path | None = None,
        *,
        parallel_passes: int = 1,
        model_dir: str | None = None,
        provider: str = "local",
        base_url: str | None = None,
        api_key_env: str | None = None,
        dimensions: int | None = None,
    ) -> None:
        self.model_name = model.strip() or DEFAULT_MODEL
        if provider not in ("local", "openai"):
            raise ValueError(f"unknown embedding provider {provider!r}: use local or openai")
        self.provider = provider
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.dimensions = dimensions
        if backend not in ("torch", "onnx", "onnx-int8"):
            raise ValueError(f"unknown embedding backend {backend!r}: use torch, onnx or onnx-int8")
        self.backend = backend
        self.active_backend: str | None = None  # the backend actually running once loaded
        self.fallback_reason: str | None = None  # why an ONNX backend was not used
        self.onnx_dir = Path(onnx_dir).expanduser() if onnx_dir else None
        self.threads = threads or max(1, min(4, (os.cpu_count() or 2) // 2))
        self.parallel_passes = parallel_passes  # forward passes at once (ONNX), sharing the session's `threads`
        self.requested_device = device
        self.batch_size = batch_size
        self.allow_download = allow_download  # None: the default model only, at its pinned revision
        self.model_dir = model_dir  # the default model's files, in a directory of the user's
        self.verified: default_model.VerifiedModel | None = None  # the default model's files, once checked
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
        """Cache key of the model: the canonical name, or the resolved path of a local model; `openai:<name>` for
        an endpoint's model (with `@<n>d` when a vector size is asked for)."""
        name = self.model_name
        if self.provider == "openai":
            return f"openai:{name}" + (f"@{self.dimensions}d" if self.dimensions else "")
        if name.lower() in BUNDLED_NAMES:
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
            self.error = failure_reason(exc)
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
        if self.provider == "openai":
            from mcp_sections.shared.embeddings.remote import RemoteEmbeddingModel

            remote = RemoteEmbeddingModel(self.model_name, self.base_url, self.api_key_env, dimensions=self.dimensions)
            self.active_backend = "http"
            return remote, "remote", remote.probe_dimension()
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        source = self._resolve_source()
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
                    reason, level = failure_reason(exc), logging.WARNING
            self.fallback_reason = reason
            logger.log(level, "embedding backend %s not used (%s); running the model on torch", self.backend, reason)
        self.active_backend = "torch"
        return self._open_torch(source)

    def _onnx_excluded(self) -> str | None:
        """Why the ONNX backend does not apply here (it runs on the CPU only), or None."""
        if self.requested_device in ("cuda", "mps"):
            return f"embedding_device={self.requested_device}: the ONNX backend runs on the CPU"
        if self.requested_device == "auto" and gpu_visible():
            return "a GPU is visible and embedding_device=auto: torch uses it"
        return None

    def _open_onnx(self, source: str) -> OnnxModel:
        directory = local_model_dir(source, bool(self.allow_download))
        check_onnx_compatible(directory)
        try:
            import numpy  # noqa: F401
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as exc:
            raise EmbeddingModelUnavailable(f"{exc.name or exc} is not installed; {install_hint('memory')}") from exc
        base = self.onnx_dir or default_onnx_dir()
        int8 = self.backend == "onnx-int8"
        digests = self.verified.digests if self.verified else content_digests(directory)
        target = base / "onnx" / export_name(self.model_key.removesuffix("@int8"), digests)
        path = ensure_onnx(directory, target, int8=int8)
        return OnnxModel(
            path, directory, threads=self.threads, batch_size=self.batch_size, passes_at_once=self.parallel_passes
        )

    def _open_torch(self, source: str) -> tuple[Any, str, int]:
        try:
            import numpy  # noqa: F401
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelUnavailable(
                f"sentence-transformers is not installed ({exc.name or exc}); it runs models that have no ONNX file "
                f"and cannot get one without torch: {install_hint(TORCH_EXTRA)}"
            ) from exc
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
        reported = getter()
        if reported is None:
            raise RuntimeError(f"the model {source!r} does not report its embedding dimension")
        dimension = int(reported)
        return model, device, dimension

    def _resolve_source(self) -> str:
        name = self.model_name
        if name.lower() in BUNDLED_NAMES:
            self.verified = default_model.resolve(self.model_dir, self.allow_download)
            return str(self.verified.directory)
        if _looks_like_path(name):
            path = Path(name).expanduser()
            if not path.is_dir():
                raise EmbeddingModelUnavailable(
                    f"model path {name!r} is not a directory; set embedding_model to a model dir"
                )
            if not any((path / marker).is_file() for marker in ("config.json", "modules.json")):
                raise EmbeddingModelUnavailable(
                    f"model path {name!r} holds no model (no config.json or modules.json); set embedding_model to a "
                    "sentence-transformers model directory"
                )
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
        from mcp_sections.shared.embeddings.remote import RemoteEmbeddingError

        with self._encode_lock:  # one forward pass at a time: the CPU is shared anyway
            try:
                vectors = self._model.encode(
                    list(texts),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except RemoteEmbeddingError as exc:  # the endpoint is down or refuses: callers fall back to text
                raise EmbeddingUnavailable(f"embedding endpoint failed: {exc}") from None
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def encode_passes(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each group's vectors (as `encode`), each group in one forward pass: `parallel_passes` at once on the ONNX
        backend, one after the other elsewhere. For a query's few texts, grouped by their token counts."""
        if not hasattr(self._model, "encode_passes") or not self.ready:
            return [self.encode(group) for group in groups]
        with self._encode_lock:
            return self._model.encode_passes(groups)

    def token_counts(self, texts: Sequence[str]) -> list[int] | None:
        """How many tokens the model reads of each text, where the backend says (ONNX; None for torch and
        endpoints, or while not loaded): what groups texts of similar lengths into one batch."""
        counter = getattr(self._model, "token_counts", None) if self.ready else None
        return list(counter(texts)) if counter is not None else None


_EMBEDDERS: dict[tuple[Any, ...], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: EmbeddingSettings, cache_dir: str | Path | None = None) -> Embedder:
    """The process-wide embedder of these settings: one model instance per model, device, backend, thread count, passes
    at once, batch size and export directory, so that two callers in one process (find_tools, a section's background
    work on half the cores) each get what they asked for. Each section is a process of its own: it loads one.

    `cache_dir` (the global settings' cache directory) places the ONNX exports in `<cache_dir>/models` when
    `embedding_onnx_dir` is not set; without it, `MCP_SECTIONS_CACHE_DIR` or the user cache directory is used.
    """
    remote: dict[str, Any] = {
        "provider": settings.embedding_provider,
        "base_url": settings.embedding_base_url,
        "api_key_env": settings.embedding_api_key_env,
        "dimensions": settings.embedding_dimensions,
    }
    probe = Embedder(settings.embedding_model, settings.embedding_device, backend=settings.embedding_backend, **remote)
    onnx_dir = settings.embedding_onnx_dir or (Path(cache_dir) / "models" if cache_dir else None)
    key = (
        probe.model_key,
        settings.embedding_device,
        settings.embedding_allow_download,
        settings.embedding_backend,
        str(settings.embedding_base_url),
        settings.embedding_model_dir,
        settings.embedding_threads,
        settings.embedding_parallel_passes,
        settings.embedding_batch_size,
        str(onnx_dir),
    )
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
                onnx_dir=onnx_dir,
                parallel_passes=settings.embedding_parallel_passes,
                model_dir=settings.embedding_model_dir,
                **remote,
            )
            _EMBEDDERS[key] = embedder
        return embedder
