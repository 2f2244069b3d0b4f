"""An OpenAI-compatible `/v1/embeddings` endpoint as the embedding model (Ollama, vLLM, Text Embeddings Inference,
LM Studio, OpenAI…): the scale path beside the local ONNX model, behind the same `Embedder`.

The endpoint is the user's own configuration (`embedding_base_url`), so it is not subject to the web URL guard.
Requests are batched (`embedding_batch_size` texts per request), retried on 429/5xx with backoff, and the vectors
L2-normalised so that cosine stays a dot product. The key comes from the environment variable named by
`embedding_api_key_env`, never from the config file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.errors import SuiteError

RETRIES = 3
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class RemoteEmbeddingError(SuiteError, RuntimeError):
    """The endpoint refused or failed; the message says what to fix."""


class RemoteEmbeddingModel:
    """Mimics the `encode` of a sentence-transformers model over HTTP."""

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
        import httpx2

        self.model = model
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/embeddings"
        self.dimensions = dimensions
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(api_key_env or "", "").strip() if api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx2.Client(headers=headers, timeout=timeout_seconds, transport=transport, trust_env=False)

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
        import httpx2

        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        for attempt in range(RETRIES + 1):
            try:
                response = self._client.post(self.url, json=body)
            except httpx2.HTTPError as exc:
                if attempt < RETRIES:
                    time.sleep(0.5 * 2**attempt)
                    continue
                raise RemoteEmbeddingError(f"{self.url} cannot be reached ({exc}); check embedding_base_url") from None
            if response.status_code in RETRY_STATUSES and attempt < RETRIES:
                time.sleep(float(response.headers.get("retry-after", 0) or 0.5 * 2**attempt))
                continue
            if response.status_code in (401, 403):
                raise RemoteEmbeddingError(
                    f"{self.url} refused the key (HTTP {response.status_code}); check embedding_api_key_env"
                )
            if response.status_code >= 400:
                raise RemoteEmbeddingError(
                    f"{self.url} answered HTTP {response.status_code}: {response.text[:200]}; check embedding_model"
                )
            return _vectors(response.json(), len(batch), self.url)
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
