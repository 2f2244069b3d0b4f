"""Sentence embeddings shared by the sections that search by meaning (memory, rag_ops, web_ops).

- `EmbeddingSettings`: the settings fields a section mixes into its own `SectionSettings`
  (`class MemorySettings(SectionSettings, EmbeddingSettings)`), so every section reads the same keys
  (`embedding_model`, `embedding_device`, ...) under its own env prefix.
- `Embedder`: one sentence-transformers model, loaded lazily, once per process (`get_embedder`), in a
  background thread if asked (`start_loading`), batched, L2-normalised float32 vectors. The default model's
  files (`default_model`) are pinned by sha256 to one hub commit and checked before use wherever they come
  from: `embedding_model_dir`, the offline carrier package (the `memory-offline` extra), the Hugging Face
  cache, else the hub at that commit; a model named otherwise is downloaded only with
  `embedding_allow_download`. When the model cannot be loaded (files missing or not the pinned ones, bad
  path) the embedder reports `failed` with a reason; callers fall back to text search. Nothing here imports
  torch, sentence-transformers or numpy at module import.
- Backends (`embedding_backend`): `onnx` (default) runs the same model on ONNX Runtime, with no torch
  installed at all: the model directory's own `onnx/model.onnx` when it ships one, else a file built once
  from the BERT weights (`bert_onnx`, in this process) into `<cache dir>/models/onnx/`; each process then
  tokenises with `tokenizers` and mean-pools in numpy: ~2x faster per query than torch, 0.3 s load instead
  of 5 s, 200 MB RSS instead of 500, vectors equal to torch's to ~1e-6 (same model key, so stored vectors
  stay valid). `onnx-int8` adds
  dynamic int8 quantisation (only ~8% faster again here, and cosine to torch 0.976-0.999, so it gets a
  model key of its own).
  `torch` is sentence-transformers itself (the `embeddings-torch` extra). When onnxruntime/onnx are
  missing, the model is neither BERT nor ships an ONNX file, it is not a plain mean-pooling one, or a GPU
  is asked for, the embedder says why in the log and `fallback_reason` and uses torch.
- `EmbeddingCache`: a table in the caller's SQLite database keyed by (model, content hash), so that
  unchanged content is never embedded twice; `EmbeddingService` puts the two together.

- `EmbeddingWorker` (`worker`): the background embedding of a store's pending items and the model lock of its
  vectors; `VectorCache` (`vector_cache`): a store's vectors in memory, exact cosine search. Memory and the brain
  both use them, each with its own SQL.

Modules: `settings` (the settings fields and errors), `vectors` (blobs, cosine, top-k), `default_model` (the pinned
files, their sources and their check), `embedder` (the model, `get_embedder`), `onnx` (the ONNX Runtime backend and
its file), `bert_onnx` (a BERT model as an ONNX graph, without torch), `remote` (an OpenAI-compatible endpoint as the
model), `cache` (the embedding cache and service), `model_lock`, `worker`, `vector_cache` (imports numpy: import it
where used).
This package re-exports what callers use.
"""

from mcp_sections.shared.embeddings.cache import EMBEDDING_CACHE_SCHEMA, EmbeddingCache, EmbeddingService
from mcp_sections.shared.embeddings.embedder import Embedder, get_embedder
from mcp_sections.shared.embeddings.settings import (
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    ONNX_EXPORT_VERSION,
    Backend,
    EmbedderStatus,
    EmbeddingSettings,
    EmbeddingUnavailable,
    calibrated_threshold,
)
from mcp_sections.shared.embeddings.vectors import content_hash, cosine_scores, from_blob, to_blob, top_k

__all__ = [
    "DEFAULT_BACKEND",
    "DEFAULT_MODEL",
    "EMBEDDING_CACHE_SCHEMA",
    "ONNX_EXPORT_VERSION",
    "Backend",
    "Embedder",
    "EmbedderStatus",
    "EmbeddingCache",
    "EmbeddingService",
    "EmbeddingSettings",
    "EmbeddingUnavailable",
    "calibrated_threshold",
    "content_hash",
    "cosine_scores",
    "from_blob",
    "get_embedder",
    "to_blob",
    "top_k",
]
