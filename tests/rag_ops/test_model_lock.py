"""The brain on an OpenAI-compatible embedding endpoint (a stand-in on 127.0.0.1), and its model lock: vectors
made with one model are never searched with another; `reembed` hands the brain to the new model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.embedding_stand_in import StandIn, embedding_stand_in
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio
pytest.importorskip("numpy", reason="vectors need numpy: pip install 'mcp-sections[rag]'")

SNIPPET = '''def water_tomatoes(litres: float) -> None:
    """Give the tomato plants their evening water."""


def pay_invoice(invoice_id: str) -> None:
    """Pay a supplier invoice from the bank account."""
'''


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    with embedding_stand_in() as running:
        yield running


def _brain(data_dir: Path, stand_in: StandIn, model: str) -> Client:
    section = load_section("rag_ops")
    table = {
        "embedding_provider": "openai",
        "embedding_base_url": stand_in.base_url,
        "embedding_model": model,
        "embedding_wait_seconds": 10,
    }
    settings = Settings.load({"data_dir": str(data_dir), "warm_up": False, "sections": {"rag_ops": table}})
    server, _ = build_server(section, section.runtime(settings))
    return Client(server)


async def test_a_brain_embedded_with_one_model_refuses_another_until_reembedded(
    stand_in: StandIn, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    async with _brain(data_dir, stand_in, "bow-a") as brain:
        await call(brain, "ingest_code", content=SNIPPET, file_path="garden.py")
        done = await call(brain, "generate_embeddings", max_seconds=30)
        assert done["complete"] and done["model"] == "openai:bow-a"
        found = await call(brain, "semantic_search", query="water the tomato plants")
        assert found["results"][0]["name"] == "water_tomatoes"

    async with _brain(data_dir, stand_in, "bow-b") as brain:
        message = await fail(brain, "semantic_search", "VALIDATION_FAILED", query="water the tomato plants")
        assert "openai:bow-a" in message and "mcp-sections reembed rag_ops" in message
        await fail(brain, "generate_embeddings", "VALIDATION_FAILED")
        text = await call(brain, "brain_search", query="water_tomatoes", semantic=False)
        assert text["results"][0]["name"] == "water_tomatoes"  # text search keeps working

    section = load_section("rag_ops")
    table = {"embedding_provider": "openai", "embedding_base_url": stand_in.base_url, "embedding_model": "bow-b"}
    runtime = section.runtime(Settings.load({"data_dir": str(data_dir), "sections": {"rag_ops": table}}))
    assert section.open_state is not None
    state = section.open_state(runtime)
    try:
        assert state.reembed() == "openai:bow-a"
    finally:
        state.close()

    async with _brain(data_dir, stand_in, "bow-b") as brain:
        done = await call(brain, "generate_embeddings", max_seconds=30)
        assert done["complete"] and done["model"] == "openai:bow-b"
        found = await call(brain, "semantic_search", query="pay the supplier invoice")
        assert found["results"][0]["name"] == "pay_invoice"
