"""An OpenAI-compatible `/v1/embeddings` endpoint as the embedding model (Ollama, vLLM, Text Embeddings Inference,
LM Studio, OpenAI…): the scale path beside the local ONNX model, behind the same `Embedder`.

The endpoint is the user's own configuration (`embedding_base_url`), so it is not subject to the web URL guard; the
HTTP part (base URL, key header from the variable named by `embedding_api_key_env`, coded failures naming the
setting to fix) is `shared.net.model_api`'s. Requests are batched (`embedding_batch_size` texts per request), retried
on 408/429/5xx and lost connections with backoff, and the vectors L2-normalised so that cosine stays a dot
product.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.ground.errors import SuiteError
from mcp_sections.shared.net.model_api import EMBEDDINGS, ModelApiFailure, ModelEndpoint, SyncClient

RETRIES = 3


class RemoteEmbeddingError(SuiteError, RuntimeError):
    """The endpoint refused or failed; the message says what to fix."""


class RemoteEmbeddingModel:
    """Mimics the `encode` of a sentence-transformers model over HTTP (`shared.net.model_api`)."""

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key_env: str | None,
        *,
        dimensions: int | None = None,
        timeout_seconds: float = 60.0,
        transport: Any = None,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        endpoint = ModelEndpoint(
            "openai",
            base_url,
            api_key_env,
            settings="embedding_",
            what="the embedding endpoint",
            timeout_seconds=timeout_seconds,
            key_required=False,  # the default variable (OPENAI_API_KEY) is rightly unset for a local endpoint
        )
        self.url = endpoint.url(EMBEDDINGS)
        self._client = SyncClient(endpoint, transport)

    def probe_dimension(self) -> int:
        """One request, to learn the vector size (and fail early with a clear reason)."""
        return int(self.encode(["dimension probe"], batch_size=1).shape[1])

    def encode(self, texts: Sequence[str], batch_size: int = 32, **_: Any) -> Any:
        import numpy as np

        rows: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            rows.extend(self._request(list(texts[start : start + batch_size])))
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)

    def _request(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        for attempt in range(RETRIES + 1):
            try:
                payload = self._client.post_json(EMBEDDINGS, body)
            except ModelApiFailure as failure:
                if failure.retryable and attempt < RETRIES:
                    time.sleep(failure.retry_after or 0.5 * 2**attempt)
                    continue
                raise RemoteEmbeddingError(failure.message) from None
            return _vectors(payload, len(batch), self.url)
        raise RemoteEmbeddingError(f"{self.url} kept failing after {RETRIES} retries")


def _vectors(payload: Any, expected: int, url: str) -> list[list[float]]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        raise RemoteEmbeddingError(f"{url} did not answer {expected} embeddings in `data`")
    ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors = [item.get("embedding") if isinstance(item, dict) else None for item in ordered]
    if not all(isinstance(v, list) and v for v in vectors):
        raise RemoteEmbeddingError(f"{url} answered entries without an `embedding` list")
    widths = {len(v) for v in vectors if v}
    if len(widths) != 1:
        raise RemoteEmbeddingError(f"{url} answered vectors of different sizes {sorted(widths)}")
    return vectors  # type: ignore[return-value]
