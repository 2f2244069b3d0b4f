"""Embeddings from an OpenAI-compatible endpoint (a scripted stand-in on 127.0.0.1), and the model lock: a store
embedded with one model refuses searches by meaning with another until `reembed`."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.memory.settings import MemorySettings
from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, get_embedder
from mcp_sections.shared.ground.errors import ToolFailure
from tests.embedding_stand_in import DIMENSION, StandIn, embedding_stand_in
from tests.stdio import cli_command, server_environment

pytest.importorskip("numpy", reason="vectors need numpy: pip install 'mcp-sections[memory]'")


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    with embedding_stand_in() as running:
        yield running


def remote_settings(stand_in: StandIn, model: str = "bow-a", **extra: object) -> MemorySettings:
    return MemorySettings.load(
        {
            "embedding_provider": "openai",
            "embedding_base_url": stand_in.base_url,
            "embedding_model": model,
            "embedding_api_key_env": "TEST_EMBEDDING_KEY",
            **extra,
        }
    )


def open_store(path: Path, settings: MemorySettings) -> MemoryStore:
    store = MemoryStore(path, None, wait_seconds=10)
    store.attach_embeddings(EmbeddingService(get_embedder(settings), EmbeddingCache(store.db)))
    return store


def test_memories_are_embedded_by_the_endpoint_with_the_key_from_the_environment(
    stand_in: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBEDDING_KEY", "sk-test-123")
    store = open_store(tmp_path / "memory.sqlite3", remote_settings(stand_in))
    try:
        store.embeddings.embedder.load()  # type: ignore[union-attr]
        assert store.embeddings.embedder.dimension == DIMENSION  # type: ignore[union-attr]
        assert store.model_key == "openai:bow-a"
        store.add("knowledge", "The lighthouse keeper lights the lamp at dusk", workflow_id=None)
        store.add("knowledge", "Invoices are paid on the first Monday", workflow_id=None)
        found = store.search("when does the keeper light the lamp", workflow_id=None, threshold=0.1)
        assert found.results[0].memory.content.startswith("The lighthouse keeper")
    finally:
        store.close()
    request = stand_in.requests[-1]
    assert request["path"] == "/v1/embeddings" and request["body"]["model"] == "bow-a"
    assert request["body"]["encoding_format"] == "float" and isinstance(request["body"]["input"], list)
    assert request["authorization"] == "Bearer sk-test-123"


def test_transient_failures_are_retried_and_a_refused_key_is_explained(stand_in: StandIn, tmp_path: Path) -> None:
    stand_in.failures = [503, 429]
    embedder = get_embedder(remote_settings(stand_in, model="bow-retry"))
    assert embedder.load() and embedder.dimension == DIMENSION
    stand_in.failures = [401]
    refused = get_embedder(remote_settings(stand_in, model="bow-refused"))
    assert not refused.load()
    assert "refused the key" in refused.describe() and "embedding_api_key_env" in refused.describe()


def test_asked_dimensions_are_sent_and_give_their_own_model_key(stand_in: StandIn) -> None:
    embedder = get_embedder(remote_settings(stand_in, model="bow-small", embedding_dimensions=16))
    assert embedder.model_key == "openai:bow-small@16d"
    assert embedder.load() and embedder.dimension == 16
    assert stand_in.requests[-1]["body"]["dimensions"] == 16


def test_another_model_is_refused_until_reembed(stand_in: StandIn, tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    first = open_store(path, remote_settings(stand_in, model="bow-a"))
    first.embeddings.embedder.load()  # type: ignore[union-attr]
    first.add("knowledge", "Compost goes on the garden beds in October", workflow_id=None)
    first.close()

    second = open_store(path, remote_settings(stand_in, model="bow-b"))
    try:
        second.embeddings.embedder.load()  # type: ignore[union-attr]
        with pytest.raises(ToolFailure) as refused:
            second.search("compost", workflow_id=None)
        assert refused.value.code == "VALIDATION_FAILED"
        assert "openai:bow-a" in refused.value.message and "mcp-sections reembed memory" in refused.value.message
        added = second.add("knowledge", "The beds are dug in spring", workflow_id=None)
        assert added.embedding_generated is False  # nothing written with the other model meanwhile
        assert second.embed_pending() == 0
        assert second.reembed() == "openai:bow-a"
        while second.embed_pending() > 0:
            pass
        found = second.search("garden compost in october", workflow_id=None, threshold=0.1)
        assert found.results[0].memory.content.startswith("Compost")
        assert second.pending_count() == 0
    finally:
        second.close()


def test_the_reembed_command(stand_in: StandIn, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    first = MemoryStore.in_data_dir(data_dir, None)
    first.attach_embeddings(
        EmbeddingService(get_embedder(remote_settings(stand_in, "bow-a")), EmbeddingCache(first.db))
    )
    first.embeddings.embedder.load()  # type: ignore[union-attr]
    first.add("knowledge", "Tide tables are printed weekly", workflow_id=None)
    first.close()
    env = server_environment(
        {
            "MCP_SECTIONS_DATA_DIR": str(data_dir),
            "MCP_SECTIONS_MEMORY_EMBEDDING_PROVIDER": "openai",
            "MCP_SECTIONS_MEMORY_EMBEDDING_BASE_URL": stand_in.base_url,
            "MCP_SECTIONS_MEMORY_EMBEDDING_MODEL": "bow-b",
        }
    )
    done = subprocess.run([*cli_command(), "reembed", "memory"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "now belongs to openai:bow-b (was openai:bow-a)" in done.stdout
