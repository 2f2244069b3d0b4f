"""The reranker over the fusion's signals (`servers/rag_ops/rerank.py`): one weight per signal, the first
`RERANK_DEPTH` candidates reordered by it and the rest kept below them in fused order, hybrid searches only (with the
real embedding model), and what the score then means."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.rag_ops import rerank
from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.servers.rag_ops.ranking import Question
from mcp_sections.servers.rag_ops.search import RERANK_DEPTH, fused_candidates, rerank_fused
from mcp_sections.shared.brain.model import Node
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.settings.config import Settings
from tests.rag_ops.test_ranking import TREE


def test_one_weight_per_signal_and_one_signal_row_per_candidate() -> None:
    assert len(rerank.WEIGHTS) == len(rerank.SIGNALS) == len(set(rerank.SIGNALS))
    node = Node(id="n", label="Scope", project_id="p", name="f", props={"kind": "function"})
    question = Question("code", frozenset({"f"}), None)
    rows = rerank.signals([rerank.Candidate(node, 0.5, {"semantic": 0}, 0.6, ["semantic"])], question)
    assert len(rows) == 1 and len(rows[0]) == len(rerank.SIGNALS)


def _fusion(count: int) -> tuple[dict[str, dict[str, Any]], dict[str, Node]]:
    """`count` candidates, best fused first, of every shape the signals tell apart."""
    fused: dict[str, dict[str, Any]] = {}
    nodes: dict[str, Node] = {}
    for index in range(count):
        nid = f"n{index}"
        kind = ("function", "method", "class")[index % 3]
        nodes[nid] = Node(
            id=nid,
            label="Scope" if index % 4 else "DocumentSection",
            project_id="p",
            name=f"test_apply_{index}" if index % 5 == 0 else f"apply_{index}",
            path="tests/test_apply.py" if index % 5 == 0 else "src/apply.py",
            start_line=1,
            end_line=1 + index % 7 * 10,
            props={"kind": kind, "docstring": "Apply." if index % 2 else ""},
        )
        ranks = {"semantic": index, "text": count - index} if index % 3 else {"text": index}
        entry = {"rrf": 1.0 / (index + 1), "matched_by": list(ranks), "ranks": ranks, "similarity": None}
        if "semantic" in ranks:
            entry["similarity"] = 0.9 - index / 100
        fused[nid] = entry
    return fused, nodes


def test_the_first_candidates_are_reordered_and_the_rest_follow_in_fused_order() -> None:
    fused, nodes = _fusion(RERANK_DEPTH + 5)
    question = Question("code", frozenset({"apply"}), None)
    learned = rerank.scores(fused_candidates(fused, nodes)[:RERANK_DEPTH], question)
    rerank_fused(fused, nodes, question)
    head = [f"n{i}" for i in range(RERANK_DEPTH)]
    tail = [f"n{i}" for i in range(RERANK_DEPTH, RERANK_DEPTH + 5)]
    scores = {nid: entry["score"] for nid, entry in fused.items()}
    assert max(scores.values()) == 1.0 and all(0 < s <= 1 for s in scores.values())
    assert sorted(head, key=lambda n: -scores[n]) == [
        head[i] for i in sorted(range(len(head)), key=lambda i: -learned[i])
    ]
    assert sorted(head, key=lambda n: -scores[n]) != head, "the reranker changed nothing"
    assert min(scores[n] for n in head) >= max(scores[n] for n in tail)
    assert [scores[n] for n in tail] == sorted((scores[n] for n in tail), reverse=True)


@pytest.fixture
def embedded_brain(tmp_path: Path) -> Iterator[Brain]:
    """The ranking tests' shop, embedded with the real default model."""
    pytest.importorskip("numpy", reason="vectors need numpy: pip install 'mcp-sections[rag]'")
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    embedder = get_embedder(EmbeddingSettings(), Settings().cache_dir)
    if not embedder.load():
        pytest.skip(f"the embedding model is not available here: {embedder.describe()}")
    root = tmp_path / "shop"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    store = SQLiteBrainStore(tmp_path / "brain.sqlite3")
    service = EmbeddingService(embedder, EmbeddingCache(store.database))
    brain = Brain(store, [root], embedding_service=service, background_embeddings=False)
    brain.ingest_directory(str(root), "shop")
    assert brain.generate_embeddings(["shop"], 300)["complete"]
    yield brain
    brain.close()


def _asked(brain: Brain, query: str) -> dict[str, Any]:
    return brain.search(query, project_ids=["shop"], types=None, semantic=True, limit=5)


def test_a_hybrid_search_answers_in_the_rerankers_order(embedded_brain: Brain) -> None:
    where = _asked(embedded_brain, "where is the percentage discount applied to a price implemented")
    assert where["mode"] == "hybrid"
    first = where["results"][0]
    assert (first["relative_path"], first["name"]) == ("src/shop/pricing.py", "apply_discount")
    scores = [r["score"] for r in where["results"]]
    assert scores[0] == 1.0 and scores == sorted(scores, reverse=True) and scores[-1] > 0
    how = _asked(embedded_brain, "how do I apply a percentage discount to a price")
    assert (how["results"][0]["relative_path"], how["results"][0]["name"]) == (
        "docs/discounts.rst",
        "How to apply a discount",
    )
    text = embedded_brain.search(
        "where is the percentage discount applied", project_ids=["shop"], types=None, semantic=False
    )
    assert text["mode"] == "text" and text["results"][0]["score"] == 1.0  # the fused score, scaled, as before
