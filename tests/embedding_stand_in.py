"""A scripted OpenAI-compatible `/v1/embeddings` endpoint on 127.0.0.1 (the stand-in for Ollama, vLLM, TEI,
OpenAI): deterministic bag-of-words vectors, so texts sharing words are near; each model name gets its own
hashing, so two models' vectors are not comparable. It records requests and can be told to fail."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.http_stand_in import ScriptedHandler, serving

DIMENSION = 64


def bag_of_words(text: str, model: str, dimension: int = DIMENSION) -> list[float]:
    vector = [0.0] * dimension
    for word in re.findall(r"[a-z]+", text.lower()):
        digest = hashlib.sha256(f"{model}:{word.rstrip('s')}".encode()).digest()
        vector[digest[0] % dimension] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@dataclass
class StandIn:
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # statuses answered (in order) before succeeding

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@contextmanager
def embedding_stand_in() -> Iterator[StandIn]:
    stand_in = StandIn()

    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            stand_in.requests.append({"path": self.path, "body": body, "authorization": self.headers["Authorization"]})
            if stand_in.failures:
                self.answer_json(stand_in.failures.pop(0), {"error": {"message": "scripted failure"}})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            size = body.get("dimensions") or DIMENSION
            data = [
                {"object": "embedding", "index": i, "embedding": bag_of_words(text, body["model"], size)}
                for i, text in reversed(list(enumerate(inputs)))  # out of order on purpose: `index` decides
            ]
            self.answer_json(200, {"object": "list", "data": data, "model": body["model"]})

    with serving(Handler) as stand_in.port:
        yield stand_in
