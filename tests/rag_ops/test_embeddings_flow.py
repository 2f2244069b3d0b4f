"""Background embedding, reuse of unchanged vectors and the text fallback, with a deterministic fake model."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.rag_ops.brain import Brain
from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.rag_ops.trees import make_bulk_tree, make_tree

np = pytest.importorskip("numpy")


class FakeEmbedder:
    """Stands in for the sentence-transformers `Embedder`: bag of hashed words → 256 dims, L2-normalised."""

    model_key = "fake-bow"
    dimension = 256

    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.status = "ready" if ready else "failed"
        self.texts: list[str] = []

    def describe(self) -> str:
        return "fake model ready" if self.ready else "embedding model unavailable: not installed"

    def start_loading(self) -> None: ...

    def on_ready(self, callback) -> None:  # type: ignore[no-untyped-def]
        if self.ready:
            callback()

    def wait_ready(self, timeout: float) -> bool:
        return self.ready

    def token_counts(self, texts: list[str]) -> None:
        return None  # batches in store order, as with torch or an endpoint

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        vectors = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                vectors[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


def make_brain(path: Path, root: Path, *, ready: bool = True, background: bool = True) -> Brain:
    """The real `EmbeddingService` and `EmbeddingCache` of shared.embeddings around the fake model."""
    store = SQLiteBrainStore(path)
    service = EmbeddingService(FakeEmbedder(ready), EmbeddingCache(store.database))  # type: ignore[arg-type]
    return Brain(store, [root], embedding_service=service, background_embeddings=background)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


@pytest.fixture
def brain(tmp_path: Path, root: Path) -> Iterator[Brain]:
    instance = make_brain(tmp_path / "brain.sqlite3", root)
    yield instance
    instance.close()


def wait_embedded(brain: Brain, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while brain.store.count_pending(brain.model_key) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert brain.store.count_pending(brain.model_key) == 0


def test_background_embedding_after_ingest_and_only_changes_reembedded(brain: Brain, root: Path) -> None:
    service = brain.embeddings
    tree = make_bulk_tree(root / "bulk", 20, words="invoice")
    report = brain.ingest_directory(str(tree))
    assert report.embeddings_pending > 0  # returned before embedding: searchable by text already
    wait_embedded(brain)
    result = brain.search("compute invoice value", project_ids=None, types=["function"], semantic=True, limit=5)
    assert result["mode"] == "hybrid" and "semantic" in result["results"][0]["matched_by"]
    first = service.model_calls
    target = tree / "pkg0" / "mod_2.py"
    target.write_text(target.read_text().replace("value number 2.", "value number two."))
    brain.ingest_directory(str(tree))
    wait_embedded(brain)
    # compute_2's docstring changed; the file summary and the other scopes kept their vectors
    assert service.model_calls - first == 1 and "compute_2" in service.embedder.texts[-1]


def test_each_result_has_one_score_whose_meaning_follows_the_mode(brain: Brain, root: Path) -> None:
    """Issue #23: semantic_search gave `score` ≈ 0.016 for every hit beside `similarity`."""
    brain.ingest_directory(str(make_bulk_tree(root / "bulk", 6, words="invoice")))
    wait_embedded(brain)
    query = "compute invoice value"
    semantic = brain.search(query, project_ids=None, types=["function"], semantic=True, text=False, limit=5)
    assert semantic["mode"] == "semantic" and len(semantic["results"]) == 5
    vector = brain.embeddings.embed_query(query)
    cosines = dict(brain.store.vector_search(brain.model_key, vector, None, ["Scope"], 50))
    for result in semantic["results"]:
        assert "similarity" not in result and result["score"] == round(cosines[result["id"]], 4)
    scores = [r["score"] for r in semantic["results"]]
    assert scores == sorted(scores, reverse=True) and -1 <= scores[-1] <= scores[0] <= 1
    every = [
        r["score"]
        for r in brain.search(query, project_ids=None, types=None, semantic=True, text=False, limit=50)["results"]
    ]
    distinct = sorted(set(every), reverse=True)
    floor = (distinct[0] + distinct[1]) / 2
    kept = brain.search(query, project_ids=None, types=None, semantic=True, text=False, limit=50, min_score=floor)
    assert [r["score"] for r in kept["results"]] == [s for s in every if s >= floor]  # min_score: the same number

    for semantic_leg in (True, False):
        ranked = brain.search(query, project_ids=None, types=None, semantic=semantic_leg, limit=20)
        assert ranked["mode"] == ("hybrid" if semantic_leg else "text")
        scores = [r["score"] for r in ranked["results"]]
        assert scores == sorted(scores, reverse=True) and 0 < scores[-1] <= scores[0] <= 1
        if semantic_leg:  # the reranker's score: 1.0 first, e^-1 one unit of its score below
            assert scores[0] == 1.0
        else:  # the fused score, 1.0 = first in every leg
            assert all(r["score"] <= len(r["matched_by"]) + 1e-9 for r in ranked["results"])
    assert brain.search(query, project_ids=None, types=None, semantic=False)["results"][0]["score"] == 1.0


def test_identical_content_is_embedded_once_across_projects(brain: Brain, root: Path) -> None:
    service = brain.embeddings
    make_tree(root / "a")
    make_tree(root / "b")
    brain.ingest_directory(str(root / "a"))
    wait_embedded(brain)
    once = service.model_calls
    brain.ingest_directory(str(root / "b"))
    wait_embedded(brain)
    # the same files in another project: other node ids, same texts → vectors from the cache, no model run
    assert service.model_calls == once
    assert brain.store.schema()["vectors"] == 2 * brain.store.schema([brain.store.list_projects()[0].id])["vectors"]
    result = brain.search("verify password", project_ids=None, types=None, semantic=True, limit=10)
    assert {r["project_id"] for r in result["results"]} == {p.id for p in brain.store.list_projects()}


def test_without_a_model_search_falls_back_to_text(tmp_path: Path, root: Path) -> None:
    brain = make_brain(tmp_path / "b.sqlite3", root, ready=False)
    try:
        make_tree(root / "a")
        brain.ingest_directory(str(root / "a"))
        result = brain.search("password", project_ids=None, types=None, semantic=True, text=False, limit=5)
        assert result["mode"] == "text" and "unavailable" in result["note"] and result["results"]
        with pytest.raises(ToolFailure) as failure:
            brain.generate_embeddings(None, 5)
        assert failure.value.code is ErrorCode.DEPENDENCY_ERROR
    finally:
        brain.close()


def test_generate_embeddings_reports_progress_and_cache_hits(tmp_path: Path, root: Path) -> None:
    brain = make_brain(tmp_path / "g.sqlite3", root, background=False)
    try:
        make_bulk_tree(root / "g", 10)
        pid = brain.ingest_directory(str(root / "g")).project_id
        seen: list[tuple[int, int]] = []
        result = brain.generate_embeddings([pid], 30, lambda done, total, _: seen.append((done, total)))
        assert result["complete"] and result["embedded"] == seen[-1][0] == seen[-1][1]
        assert result["computed_by_model"] == result["embedded"]
    finally:
        brain.close()


def test_two_brains_on_one_file_see_each_others_writes(tmp_path: Path, root: Path) -> None:
    """Two processes share a brain: vectors written by one are searched by the other, forgetting is seen too."""
    writer = make_brain(tmp_path / "shared.sqlite3", root, background=False)
    reader = make_brain(tmp_path / "shared.sqlite3", root, background=False)
    try:
        make_tree(root / "a")
        pid = writer.ingest_directory(str(root / "a")).project_id
        assert reader.search("verify password", project_ids=None, types=None, semantic=True, limit=3)["results"]
        assert reader.semantic_hits("verify password", None, None, 5)[0] == []  # nothing embedded yet
        writer.generate_embeddings(None, 30)
        hits, _ = reader.semantic_hits("verify password hash", None, None, 5)
        assert hits and hits[0][1] > 0
        writer.forget_path(str(root / "a" / "auth"))
        remaining = {
            n.path for n in reader.store.get_nodes([h[0] for h in reader.semantic_hits("password", None, None, 50)[0]])
        }
        assert remaining and not any(p.startswith("auth/") for p in remaining)
        assert reader.project(pid).node_count == writer.project(pid).node_count
    finally:
        writer.close()
        reader.close()
