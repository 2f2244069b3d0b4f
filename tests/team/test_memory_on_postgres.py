"""The memory store on PostgreSQL runs the store's own tests (`tests/memory/test_memory_store.py`, their stores opened
on a PostgreSQL database instead of a file): vectors, duplicates, scopes, the text and hybrid searches, pending
embeddings, the embeddings cache, and two stores (two replicas) seeing each other's writes through the change log
their vector caches read on every search. One implementation of each query; what differs is in `dialects.py`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="numpy is part of the memory extra: pip install 'mcp-sections[memory]'")

from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import EmbeddingService
from mcp_sections.shared.embeddings.embedder import Embedder
from tests.memory import test_memory_store as store_tests
from tests.memory.test_memory_store import (  # noqa: F401  (the store's tests, run here on PostgreSQL)
    FakeEmbedder,
    ready,
    test_embeddings_cache_never_embeds_the_same_content_twice,
    test_memories_added_while_loading_are_embedded_later,
    test_search_waits_for_a_loading_model_when_allowed,
    test_text_only_store_and_hybrid_fusion,
    test_two_stores_on_one_file_see_each_others_writes,
    test_vector_search_threshold_scope_and_duplicates,
    test_without_the_vector_cache_every_search_reads_sqlite,
)
from tests.team.engines import Postgres


@pytest.fixture(autouse=True)
def stores_on_postgres(monkeypatch: pytest.MonkeyPatch, postgres: Postgres) -> Iterator[None]:
    """The store tests' `open_store(path, ...)` opens a PostgreSQL database per path instead of a file there."""
    databases: dict[Path, str] = {}

    def open_store(path: Path, embedder: Embedder | None, **options: Any) -> MemoryStore:
        if path not in databases:
            databases[path] = postgres.create_database(f"memory_{len(databases)}_{abs(hash(path)) % 10**8}")
        store = MemoryStore(None, None, postgres_url=databases[path], **options)  # type: ignore[arg-type]
        if embedder is not None:
            store.attach_embeddings(EmbeddingService(embedder, store.embedding_cache()))
        return store

    monkeypatch.setattr(store_tests, "open_store", open_store)
    yield


def test_tags_and_types_filter_on_postgres(postgres_url: str, ready: FakeEmbedder) -> None:  # noqa: F811
    store = MemoryStore(None, None, postgres_url=postgres_url)  # type: ignore[arg-type]
    store.attach_embeddings(EmbeddingService(ready, store.embedding_cache()))
    tagged = store.add("knowledge", "the staging server restarts nightly", workflow_id=None, tags=["Ops", "infra"])
    store.add("decision", "the staging server moves to Berlin", workflow_id=None, tags=["infra"])
    page, total = store.list(workflow_id=None, tags=["ops"])
    assert total == 1 and [memory.id for memory in page] == [tagged.memory.id]
    for mode in ("vector", "hybrid"):
        found = store.search("staging server", workflow_id=None, tags=["ops"], mode=mode, threshold=0.0)  # type: ignore[arg-type]
        assert [item.memory.id for item in found.results] == [tagged.memory.id]
    words = store._by_words("restarts every night", ("",), "knowledge", None, 10)  # stemmed: restart, night
    assert [item.memory.id for item in words] == [tagged.memory.id]
    assert store.counts() == {"knowledge": 1, "decision": 1}
    store.close()
