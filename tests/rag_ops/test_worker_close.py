"""Closing the brain while its background worker embeds a batch: close returns only once that batch has ended, so no
thread is still inside the model when a process exits (with ONNX Runtime that aborted the process, issue #41).

The batch runs on an OpenAI-compatible endpoint stand-in on 127.0.0.1 that takes 7 s to answer: before, close gave
the worker 5 s and returned while the batch was still running."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.servers.rag_ops.settings import RagOpsSettings
from mcp_sections.shared.brain.opening import open_embedding_service
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from tests.embedding_stand_in import bag_of_words
from tests.http_stand_in import ScriptedHandler, serving

pytest.importorskip("numpy", reason="vectors need numpy: pip install 'mcp-sections[rag]'")

BATCH_SECONDS = 7.0
SNIPPET = "".join(
    f'def task_{index}(value: int) -> int:\n    """Water the garden bed number {index}."""\n    return value\n\n\n'
    for index in range(6)
)


def test_close_returns_once_the_batch_in_flight_has_ended(tmp_path: Path) -> None:
    requests: list[int] = []
    batch_started = threading.Event()

    class SlowEndpoint(ScriptedHandler):
        def do_POST(self) -> None:
            body = self.read_json()
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            requests.append(len(inputs))
            if len(requests) > 1:  # the first request is the dimension probe at load: answered at once
                batch_started.set()
                time.sleep(BATCH_SECONDS)
            data = [{"index": i, "embedding": bag_of_words(text, body["model"])} for i, text in enumerate(inputs)]
            self.answer_json(200, {"object": "list", "data": data, "model": body["model"]})

    with serving(SlowEndpoint) as port:
        settings = RagOpsSettings(
            embedding_provider="openai", embedding_base_url=f"http://127.0.0.1:{port}/v1", embedding_model="slow"
        )
        store = SQLiteBrainStore(tmp_path / "data" / "brain.sqlite3")
        service = open_embedding_service(settings, store, tmp_path / "data", tmp_path / "cache")
        brain = Brain(store, [tmp_path], embedding_service=service)  # the background worker runs
        worker = brain.embedding_worker
        assert worker is not None
        brain.ingest_code(SNIPPET, "garden.py")  # wakes the worker: it loads the model, then embeds a batch
        assert batch_started.wait(30), f"no batch was sent ({requests})"
        started = time.monotonic()
        brain.close()
        waited = time.monotonic() - started
        assert worker._thread is not None and not worker._thread.is_alive(), "close returned under a running batch"
        assert waited >= 1.0, waited  # it did wait for the batch (which had ~7 s to go)
        assert worker.closed and worker.embed_pending() == 0  # and no batch starts once closed
