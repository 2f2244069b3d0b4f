"""The embedding service and the memory store in-process, with a tiny deterministic stand-in model.

These tests need numpy but no torch: the stand-in replaces only `Embedder._open_model`, so loading,
batching, the embeddings cache, pending embeddings and the vector cache run their real code.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="numpy is part of the memory extra: pip install 'mcp-sections[memory]'")

from mcp_sections.servers.memory import store as store_module  # noqa: E402
from mcp_sections.servers.memory.store import MemoryStore, wait_until  # noqa: E402
from mcp_sections.shared.embeddings import (  # noqa: E402
    Embedder,
    EmbedderStatus,
    EmbeddingCache,
    EmbeddingService,
    EmbeddingSettings,
    EmbeddingUnavailable,
    content_hash,
    get_embedder,
)
from mcp_sections.shared.ground.errors import ToolFailure  # noqa: E402

DIM = 64


class BagOfWords:
    """Stand-in model: hashed bag of lower-cased words, L2-normalised (same words ⇒ same vector)."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str], **_: Any) -> Any:
        self.encoded.extend(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, sum(map(ord, word)) % DIM] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
        return out


class FakeEmbedder(Embedder):
    def __init__(self, delay: float = 0.0) -> None:
        super().__init__("fake-model", "cpu")
        self.delay = delay
        self.fake = BagOfWords()

    def _open_model(self) -> tuple[Any, str, int]:
        time.sleep(self.delay)
        return self.fake, "cpu", DIM


def open_store(path: Path, embedder: Embedder | None, **options: Any) -> MemoryStore:
    store = MemoryStore(path / "memory.sqlite3", None, **options)
    if embedder is not None:
        store.attach_embeddings(EmbeddingService(embedder, EmbeddingCache(store.db)))
    return store


@pytest.fixture
def ready() -> FakeEmbedder:
    embedder = FakeEmbedder()
    assert embedder.load()
    return embedder


def test_bad_model_path_fails_fast_with_a_reason(tmp_path: Path) -> None:
    embedder = Embedder(str(tmp_path / "missing-model"))
    assert not embedder.load()
    assert embedder.status is EmbedderStatus.FAILED
    assert "is not a directory" in (embedder.error or "")
    with pytest.raises(EmbeddingUnavailable):
        embedder.encode(["x"])


def test_missing_sentence_transformers_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if not installed
    embedder = Embedder("some-model-name")
    assert not embedder.wait_ready(10)
    assert embedder.status is EmbedderStatus.FAILED
    assert "sentence-transformers is not installed" in (embedder.error or "")
    assert "[embeddings-torch]'" in (embedder.error or "") and "whl/cpu" in (embedder.error or "")


def test_get_embedder_shares_one_model_per_process() -> None:
    settings = EmbeddingSettings(embedding_model="/nonexistent/a")
    assert get_embedder(settings) is get_embedder(EmbeddingSettings(embedding_model="/nonexistent/a"))
    assert get_embedder(settings) is not get_embedder(EmbeddingSettings(embedding_model="/nonexistent/b"))
    # a caller asking for other threads or another batch size gets them, not the first caller's
    more_threads = get_embedder(EmbeddingSettings(embedding_model="/nonexistent/a", embedding_threads=3))
    assert more_threads is not get_embedder(settings) and more_threads.threads == 3
    bigger_batches = get_embedder(EmbeddingSettings(embedding_model="/nonexistent/a", embedding_batch_size=64))
    assert bigger_batches is not get_embedder(settings) and bigger_batches.batch_size == 64
    assert Embedder("sentence-transformers/all-MiniLM-L6-v2").model_key == "all-MiniLM-L6-v2"


def test_embeddings_cache_never_embeds_the_same_content_twice(tmp_path: Path, ready: FakeEmbedder) -> None:
    store = open_store(tmp_path, None)
    service = EmbeddingService(ready, EmbeddingCache(store.db))
    first = service.embed(["alpha beta", "gamma", "alpha beta"])
    assert service.model_calls == 2 and ready.fake.encoded == ["alpha beta", "gamma"]
    again = EmbeddingService(ready, EmbeddingCache(store.db)).embed(["gamma", "alpha beta"])  # "another process"
    assert ready.fake.encoded == ["alpha beta", "gamma"]
    assert np.allclose(again[0], first[1]) and np.allclose(again[1], first[0])
    assert EmbeddingCache(store.db).count("fake-model") == 2
    store.close()


def test_vector_search_threshold_scope_and_duplicates(tmp_path: Path, ready: FakeEmbedder) -> None:
    store = open_store(tmp_path, ready)
    a = store.add("knowledge", "red apples grow on trees", workflow_id="w1")
    store.add("knowledge", "blue whales swim in oceans", workflow_id="w2")
    store.add("decision", "red cars are fast", workflow_id=None)
    assert a.embedding_generated and a.stored

    found = store.search("red apples trees", workflow_id="w1", threshold=0.5)
    assert [f.memory.id for f in found.results if not f.below_threshold] == [a.memory.id]
    assert found.search_type == "vector" and all(f.below_threshold for f in found.results[1:])
    assert found.results[0].similarity is not None and found.results[0].similarity > 0.5
    wide = store.search("red apples trees", workflow_id="w1", threshold=0.0)
    assert {f.memory.workflow_id for f in wide.results} == {"w1", None}  # never w2
    assert [f.memory.id for f in store.search("red", workflow_id=None, scope="general", threshold=0.0).results]

    twin = store.add("context", "Red apples grow on trees", workflow_id="w1")  # same words ⇒ cosine 1.0
    assert not twin.stored and twin.duplicate_of == a.memory.id and twin.duplicate_similarity == 1.0
    elsewhere = store.add("context", "red apples grow on trees", workflow_id="w2")
    assert elsewhere.stored, "duplicates are detected within one scope only"
    forced = store.add("context", "red apples grow on trees", workflow_id="w1", force=True)
    assert forced.stored and forced.memory.id != a.memory.id

    with pytest.raises(ToolFailure) as failure:
        store.get(a.memory.id, workflow_id="w2")
    assert failure.value.code == "NOT_FOUND"
    store.close()


def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path, ready: FakeEmbedder) -> None:
    one, two = open_store(tmp_path, ready), open_store(tmp_path, ready)
    first = one.add("knowledge", "sqlite write ahead logging", workflow_id=None)
    assert [f.memory.id for f in two.search("write ahead logging", workflow_id=None, threshold=0.3).results] == [
        first.memory.id
    ]
    one.update(first.memory.id, workflow_id=None, content="penguins live in antarctica")
    assert all(f.below_threshold for f in two.search("write ahead logging", workflow_id=None, threshold=0.6).results)
    assert two.search("penguins antarctica", workflow_id=None, threshold=0.6).results
    one.delete(first.memory.id, workflow_id=None)
    assert not two.search("penguins antarctica", workflow_id=None, threshold=0.0).results
    index = two._index
    assert index is not None and index.full_reloads == 1, "later changes are applied incrementally"

    for n in range(30):
        two.add("context", f"note number {n} about topic {n * 7}", workflow_id="w", force=True)
    with one.db.write() as connection:  # simulate a pruned change log: the cache must reload everything
        connection.execute("DELETE FROM memory_changes")
        connection.execute("INSERT INTO memory_changes(memory_rowid) VALUES (-1)")
    cached = one._index
    assert cached is not None
    before = cached.full_reloads
    assert len(one.search("note number topic", workflow_id="w", threshold=0.0, limit=100).results) == 30
    assert cached.full_reloads == before + 1
    one.close()
    two.close()


def test_memories_added_while_loading_are_embedded_later(tmp_path: Path) -> None:
    slow = FakeEmbedder(delay=0.5)
    store = open_store(tmp_path, slow, wait_seconds=0)
    early = store.add("user_pref", "likes green tea in the morning", workflow_id=None)
    assert not early.embedding_generated and "loading" in (early.note or "")
    now = store.search("green tea", workflow_id=None, threshold=0.0)
    assert now.search_type == "text" and "loading" in now.notes[0]
    assert [f.memory.id for f in now.results] == [early.memory.id]
    assert wait_until(lambda: store.pending_count() == 0, timeout=10)
    assert store.get(early.memory.id, workflow_id=None).embedded
    later = store.search("green tea", workflow_id=None, threshold=0.3)
    assert later.search_type == "vector" and [f.memory.id for f in later.results] == [early.memory.id]
    store.close()


def test_search_waits_for_a_loading_model_when_allowed(tmp_path: Path) -> None:
    slow = FakeEmbedder(delay=0.5)
    store = open_store(tmp_path, slow, wait_seconds=10)
    store.add("knowledge", "the moon orbits the earth", workflow_id=None)
    found = store.search("moon orbit earth", workflow_id=None, threshold=0.2)
    assert found.search_type == "vector" and len(found.results) == 1
    store.close()


def test_text_only_store_and_hybrid_fusion(tmp_path: Path, ready: FakeEmbedder) -> None:
    text_only = open_store(tmp_path / "t", None)
    memory = text_only.add("knowledge", "Deployments happen on Fridays", workflow_id=None)
    assert not memory.embedding_generated
    assert text_only.add("knowledge", "Deployments happen on Fridays", workflow_id=None).duplicate_of
    found = text_only.search("deploy friday", workflow_id=None)  # porter stemming
    assert found.search_type == "text" and found.results[0].memory.id == memory.memory.id
    assert found.results[0].similarity is None and found.results[0].score is not None
    text_only.close()

    store = open_store(tmp_path / "h", ready)
    store.add("knowledge", "ZX-4471 was a race in the cache layer", workflow_id=None, tags=["Bugs"])
    store.add("knowledge", "caching layers need invalidation", workflow_id=None)
    hybrid = store.search("ZX-4471", workflow_id=None, threshold=0.99, mode="hybrid")
    assert hybrid.search_type == "hybrid"
    assert hybrid.results[0].memory.content.startswith("ZX-4471") and "text" in hybrid.results[0].matched_by
    assert store.list(workflow_id=None, tags=["BUGS"])[1] == 1
    assert store.list(workflow_id=None, tags=["bugs", "other"])[1] == 0
    store.close()


def test_concurrent_threads_and_integrity(tmp_path: Path, ready: FakeEmbedder) -> None:
    store = open_store(tmp_path, ready)
    errors: list[BaseException] = []

    def writer(label: str) -> None:
        try:
            for n in range(40):
                store.add(
                    "context", f"{label} item {n} {content_hash(label + str(n))[:8]}", workflow_id=label, force=True
                )
                store.search(f"{label} item", workflow_id=label, threshold=0.0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(store.counts().values()) == 160
    with sqlite3.connect(tmp_path / "memory.sqlite3") as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        connection.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    assert store_module.visible_workflows("w0", "both") == ("", "w0")
    store.close()


def test_settings_reuse_the_embedding_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sections.servers.memory.section import open_memory
    from mcp_sections.servers.memory.settings import MemorySettings
    from mcp_sections.shared.framework.sections import SectionRuntime
    from mcp_sections.shared.settings.config import Settings

    monkeypatch.setenv("MCP_SECTIONS_MEMORY_EMBEDDING_MODEL", "/nonexistent/model")
    monkeypatch.setenv("MCP_SECTIONS_MEMORY_EMBEDDING_THREADS", "1")
    settings = MemorySettings.load({"duplicate_threshold": 0.9, "embedding_wait_seconds": 0})
    assert settings.embedding_model == "/nonexistent/model" and settings.embedding_threads == 1
    assert settings.duplicate_threshold == 0.9 and settings.embedding_wait_seconds == 0

    state = open_memory(SectionRuntime(Settings.load(data_dir=tmp_path), settings))
    try:
        assert state.store.db.path == tmp_path.resolve() / "memory.sqlite3"
        added = state.store.add("context", "no model here", workflow_id=None)
        assert not added.embedding_generated
        assert state.store.search("model", workflow_id=None).search_type == "text"
    finally:
        state.close()

    disabled = open_memory(SectionRuntime(Settings.load(data_dir=tmp_path), MemorySettings(embeddings_enabled=False)))
    try:
        assert disabled.store.embeddings is None
        found = disabled.store.search("model", workflow_id=None)
        assert found.search_type == "text" and "disabled" in found.notes[0] and found.results
    finally:
        disabled.close()


def test_without_the_vector_cache_every_search_reads_sqlite(tmp_path: Path, ready: FakeEmbedder) -> None:
    store = open_store(tmp_path, ready, vector_cache=False)
    store.add("knowledge", "owls hunt at night", workflow_id=None)
    for _ in range(3):
        assert len(store.search("owls night", workflow_id=None, threshold=0.5).results) == 1
    assert store._index is not None and store._index.full_reloads >= 3
    store.close()


def test_top_k_helper_for_other_sections() -> None:
    from mcp_sections.shared.embeddings import top_k

    matrix = np.eye(4, dtype=np.float32)
    query = np.asarray([0.8, 0.6, 0.0, 0.0], dtype=np.float32)
    assert [row for row, _ in top_k(matrix, query, 3)][:2] == [0, 1] and len(top_k(matrix, query, 3)) == 3
    assert top_k(matrix, query, 3, threshold=0.7) == [(0, pytest.approx(0.8))]
    assert top_k(matrix[:0], query, 3) == [] and top_k(matrix, query, 0) == []
