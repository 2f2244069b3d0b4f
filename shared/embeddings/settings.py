"""The embedding settings every searching section mixes into its own, the model's status, and its errors."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from mcp_sections.shared.ground.errors import SuiteError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
Backend = Literal["torch", "onnx", "onnx-int8"]

#: The similarity a match must reach, per model: it belongs to the model, not to the tool. all-MiniLM-L6-v2
#: scores true paraphrases 0.2-0.6 (median 0.45 on benchmarks/data/memory_eval.json) and the hardest unrelated
#: memory 0.3 in the median, so 0.30 keeps four in five paraphrases above it; the seed's 0.7 was set for a
#: 1024-dimension model and keeps almost none. A model not listed here gets `UNCALIBRATED_THRESHOLD`.
CALIBRATED_THRESHOLDS: dict[str, float] = {"all-MiniLM-L6-v2": 0.30}
UNCALIBRATED_THRESHOLD = 0.5


def calibrated_threshold(model_key: str | None) -> float:
    """The default similarity threshold of a model (its calibrated value, else a middle value)."""
    if model_key is None:
        return UNCALIBRATED_THRESHOLD
    base = model_key.split("@", 1)[0]
    return CALIBRATED_THRESHOLDS.get(base, UNCALIBRATED_THRESHOLD)


DEFAULT_BACKEND: Backend = "onnx"
ONNX_EXPORT_VERSION = 3  # bump to invalidate every cached ONNX file (a change in how it is made); 3: named by digests
BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
"""The names of the default model, whose files are pinned and checked wherever they come from (`default_model`)."""


class EmbeddingSettings(BaseModel):
    """Embedding fields mixed into a section's settings (env `MCP_SECTIONS_<ID>_EMBEDDING_*`)."""

    embedding_provider: Literal["local", "openai"] = Field(
        default="local",
        description="local: the model runs in this process (offline); openai: any OpenAI-compatible /v1/embeddings "
        "endpoint (Ollama, vLLM, Text Embeddings Inference, OpenAI) at embedding_base_url.",
    )
    embedding_model: str = Field(
        default=DEFAULT_MODEL,
        description=(
            "local: a sentence-transformers model name or a path to a model directory; the default model's files "
            "are checked against pinned digests wherever they come from (embedding_model_dir, the offline carrier "
            "package, the Hugging Face cache, the hub at a pinned revision); a model you name is used as it is. "
            "openai: the endpoint's model name (e.g. nomic-embed-text, text-embedding-3-small)."
        ),
    )
    embedding_base_url: str | None = Field(
        default=None, description="openai provider: the endpoint's base URL (default https://api.openai.com/v1)."
    )
    embedding_api_key_env: str | None = Field(
        default="OPENAI_API_KEY", description="openai provider: NAME of the environment variable holding the key."
    )
    embedding_dimensions: int | None = Field(
        default=None, ge=8, le=8192, description="openai provider: ask for vectors of this size (if it supports it)."
    )
    embedding_device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        default="auto", description="Where the model runs; `auto` uses a GPU when torch sees one, else the CPU."
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024, description="Sentences per forward pass.")
    embedding_threads: int = Field(
        default=0,
        ge=0,
        le=256,
        description="CPU threads for the model (ONNX Runtime's session; torch's, process-wide); 0 = auto: half the "
        "cores, 1 to 4, so that a background ingest leaves room for queries (on 2 cores, an ingest on both doubled "
        "another process's query p95; torch with 2 threads on 2 busy cores was 20-50x slower per call).",
    )
    embedding_parallel_passes: int = Field(
        default=1,
        ge=1,
        le=16,
        description="Forward passes run at once (ONNX backend), sharing the session's `embedding_threads`: a batch's "
        "chunks, or the texts of one query. The gateway's find_tools runs a long need's texts as 2 passes at once, "
        "which on 2 cores answered ~10% sooner than one pass after the other.",
    )
    embedding_allow_download: bool | None = Field(
        default=None,
        description="Downloading a model that is not on this machine: unset, only the default model, from the Hugging "
        "Face hub at its pinned revision (its files checked against pinned digests; HF_HUB_OFFLINE=1 forbids it); "
        "true, any model (as sentence-transformers would, unchecked); false, none (offline only).",
    )
    embedding_model_dir: str | None = Field(
        default=None,
        description="A directory holding the default model's files (an offline copy of sentence-transformers/"
        "all-MiniLM-L6-v2 at the pinned revision): then the only place they are read from, checked like every source.",
    )
    embedding_backend: Backend = Field(
        default=DEFAULT_BACKEND,
        description="How the model runs: `onnx` (ONNX Runtime on the CPU, from a file built once from the local "
        "weights without torch; same vectors as torch, ~2x faster per query), `onnx-int8` (quantised: "
        "faster still, slightly different vectors: a store made with another backend needs `mcp-sections "
        "reembed`) or `torch` (sentence-transformers, the embeddings-torch extra). "
        "The ONNX backends fall back to torch, with the reason in the log, when they cannot be used.",
    )
    embedding_onnx_dir: str | None = Field(
        default=None,
        description="Where the built ONNX files are kept; default `<cache dir>/models` (MCP_SECTIONS_CACHE_DIR, else "
        "the user cache directory). Made locally from the model's weights, never downloaded.",
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


class EmbeddingUnavailable(SuiteError, RuntimeError):
    """The model is not loaded (still loading, or failed); `reason` says which and why."""

    def __init__(self, reason: str, *, loading: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.loading = loading
