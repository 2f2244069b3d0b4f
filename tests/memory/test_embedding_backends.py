"""The embedding backends: the default model runs on ONNX Runtime without torch and gives the vectors torch gives.

The ONNX file is built once per test run from the weights the `memory` extra ships (`bert_onnx`, no torch), into the
run's cache directory; its vectors are compared with torch's, stored in data/minilm_torch_reference.json (made with
sentence-transformers on torch before the builder existed), so stores embedded before keep working. The tests that
run torch itself need the `embeddings-torch` extra and are skipped without it.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import Embedder, EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder
from mcp_sections.shared.embeddings.embedder import bundled_model_dir
from mcp_sections.shared.embeddings.onnx import EmbeddingModelUnavailable, check_onnx_compatible, ensure_onnx

_MEMORY_EXTRA = ("numpy", "onnxruntime", "onnx", "tokenizers", "safetensors")
_MISSING = [name for name in _MEMORY_EXTRA if importlib.util.find_spec(name) is None]
if _MISSING or bundled_model_dir() is None:
    pytest.skip(f"needs the memory extra ({_MISSING or 'the packaged model'} missing)", allow_module_level=True)
np = pytest.importorskip("numpy")

HAS_TORCH = importlib.util.find_spec("sentence_transformers") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="sentence-transformers/torch: the embeddings-torch extra")
REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_torch_reference.json").read_text(encoding="utf-8"))
SENTENCES: list[str] = REFERENCE["sentences"]

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


def _reference() -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(REFERENCE["float16_base64"]), "<f2").astype(np.float32)
    vectors = raw.reshape(REFERENCE["shape"])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", a, b)


@pytest.fixture(scope="module")
def onnx_dir(shared_cache_dir: Path) -> Path:
    """Where the servers of this run keep their ONNX files (`<cache>/models`): built once for the run, and this
    module checks the very files they use (test_a_build_killed_midway builds its own)."""
    return shared_cache_dir / "models"


@pytest.fixture(scope="module")
def embedders(onnx_dir: Path) -> dict[str, Embedder]:
    found = {
        "onnx": Embedder(backend="onnx", threads=1, onnx_dir=onnx_dir),
        "onnx-int8": Embedder(backend="onnx-int8", threads=1, onnx_dir=onnx_dir),
    }
    for name, embedder in found.items():
        assert embedder.load(), f"{name}: {embedder.error}"
    return found


def test_the_default_model_runs_on_onnx_runtime_with_its_models_key(embedders: dict[str, Embedder]) -> None:
    onnx, int8 = embedders["onnx"], embedders["onnx-int8"]
    assert onnx.active_backend == "onnx" and onnx.fallback_reason is None
    assert int8.active_backend == "onnx-int8" and int8.fallback_reason is None
    assert onnx.dimension == 384 and onnx.device == "cpu"
    assert onnx.model_key == "all-MiniLM-L6-v2"  # torch's vectors, so the stored ones stay valid
    assert int8.model_key == "all-MiniLM-L6-v2@int8"  # different vectors: never mixed in one cache
    assert "(onnx)" in onnx.describe()


def test_onnx_vectors_equal_the_stored_torch_vectors(embedders: dict[str, Embedder]) -> None:
    reference = _reference()
    batched = embedders["onnx"].encode(SENTENCES)
    one_by_one = np.stack([embedders["onnx"].encode([text])[0] for text in SENTENCES])
    for vectors in (batched, one_by_one):
        assert vectors.dtype == np.float32 and vectors.shape == reference.shape
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        cosines = _cosines(vectors, reference)
        worst = int(np.argmin(cosines))
        assert cosines.min() >= 0.9999, f"{SENTENCES[worst]!r}: cosine {cosines[worst]:.6f}"
        assert np.abs(vectors - reference).max() < 1e-3  # the reference is stored as float16


def test_onnx_int8_stays_close_to_torch(embedders: dict[str, Embedder]) -> None:
    """int8 is not equivalent to 0.99 per sentence (hence its own model key): measured mean 0.994, worst 0.976."""
    cosines = _cosines(embedders["onnx-int8"].encode(SENTENCES), _reference())
    assert cosines.mean() >= 0.985
    assert cosines.min() >= 0.95


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_paraphrase_search_finds_the_memory_it_paraphrases(
    tmp_path: Path, embedders: dict[str, Embedder], backend: str
) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite3", None, wait_seconds=30)
    store.attach_embeddings(EmbeddingService(embedders[backend], EmbeddingCache(store.db)))
    try:
        ids = {store.add("knowledge", text, workflow_id="wf").memory.id: text for text in PARAPHRASES}
        hits = []
        for query in PARAPHRASES.values():
            outcome = store.search(query, workflow_id="wf", threshold=0.0, limit=3)
            assert outcome.search_type == "vector"
            hits.append(ids[outcome.results[0].memory.id])
    finally:
        store.close()
    assert sum(hit == memory for hit, memory in zip(hits, PARAPHRASES, strict=True)) >= 8


def test_a_batch_gathers_the_pending_texts_the_model_reads_most_tokens_of(
    tmp_path: Path, embedders: dict[str, Embedder]
) -> None:
    """Each batch is chosen among several batches' worth of pending items (shared/embeddings/worker.py), by the
    model's own token counts, so that a batch is padded to texts of about its own length."""
    onnx = embedders["onnx"]
    texts = ["ok", "word " * 120, "a middling sentence about invoices and billing", "a, b; " * 100, "short note"]
    assert onnx.token_counts(texts) == [3, 122, 12, 256, 4]  # with [CLS] and [SEP]; cut at the model's 256
    store = MemoryStore(tmp_path / "memory.sqlite3", None, wait_seconds=30)
    try:
        for text in texts:
            store.add("knowledge", text, workflow_id="wf")  # no model yet: all pending
        store.attach_embeddings(EmbeddingService(onnx, EmbeddingCache(store.db)))
        assert store.embed_pending(batch=2) == 2
        left = [text for _, text, _ in store.pending_embeddings(onnx.model_key, 10)]
    finally:
        store.close()
    assert left == [texts[0], texts[2], texts[4]]  # the two longest went first; the others wait in store order


def test_the_file_is_built_once_and_the_query_path_never_imports_torch(
    embedders: dict[str, Embedder], onnx_dir: Path
) -> None:
    files = list(onnx_dir.glob("onnx/all-MiniLM-L6-v2-*/model*.onnx"))
    assert sorted(path.name for path in files) == ["model-int8.onnx", "model.onnx"]
    stamps = {path: path.stat().st_mtime_ns for path in files}
    script = (
        "import sys, json\n"
        "from mcp_sections.shared.embeddings import Embedder\n"
        f"e = Embedder(backend='onnx', threads=1, onnx_dir={str(onnx_dir)!r})\n"
        "assert e.load(), e.error\n"
        "v = e.encode(['a query about invoices'])\n"
        "heavy = {'torch', 'sentence_transformers', 'transformers', 'onnx'} & set(sys.modules)\n"
        "print(json.dumps({'heavy': sorted(heavy),"
        " 'backend': e.active_backend, 'shape': list(v.shape)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == "onnx" and report["shape"] == [1, 384]
    assert report["heavy"] == []  # tokenizers + onnxruntime + numpy only: not even the builder's onnx package
    assert {path: path.stat().st_mtime_ns for path in files} == stamps  # the cached file is used as it is


def _building(exports: Path) -> subprocess.Popen[bytes]:
    """A process building the ONNX file into `exports`, once its temporary file exists (or once it has ended)."""
    script = (
        "from mcp_sections.shared.embeddings import Embedder\n"
        f"e = Embedder(backend='onnx', threads=1, onnx_dir={str(exports)!r})\n"
        "assert e.load(), e.error\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if list(exports.glob("onnx/*/.building-*")):
            return process
        time.sleep(0.002)
    process.wait(timeout=30)
    return process


def test_a_build_killed_midway_leaves_no_process_and_no_half_file(tmp_path: Path) -> None:
    """SIGKILL while the ONNX file is being written: the build ran in the killed process itself (no child left
    behind), the final name never holds a partial file, and the next start builds it and removes the leftover."""
    for attempt in range(5):  # on a busy machine the write can end between two looks: build again, fresh
        exports = tmp_path / f"exports-{attempt}"
        process = _building(exports)
        if process.poll() is None:
            break
    assert process.poll() is None, "the build ended before it could be interrupted, 5 times"
    children = [
        child
        for task in Path(f"/proc/{process.pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert children == []  # nothing that could outlive the server
    assert not list(exports.glob("onnx/*/model.onnx"))  # the final name never holds a partial file
    embedder = Embedder(backend="onnx", threads=1, onnx_dir=exports)
    assert embedder.load(), embedder.error
    assert [path.name for path in exports.glob("onnx/*/*.onnx")] == ["model.onnx"]  # the leftover is gone
    assert not list(exports.glob("onnx/*/.building-*"))
    assert _cosines(embedder.encode(SENTENCES[:3]), _reference()[:3]).min() >= 0.9999


def _model_copy(target: Path) -> Path:
    """The packaged model's files linked into a directory of the test's own."""
    source = bundled_model_dir()
    assert source is not None
    for path in source.rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).symlink_to(path)
    return target


def test_an_onnx_file_the_model_ships_is_used_as_it_is(tmp_path: Path, embedders: dict[str, Embedder]) -> None:
    model = _model_copy(tmp_path / "model")
    built = next((embedders["onnx"].onnx_dir or tmp_path).glob("onnx/*/model.onnx"))
    (model / "onnx").mkdir()
    (model / "onnx" / "model.onnx").symlink_to(built)
    (model / "model.safetensors").unlink()  # no weights to build from: the shipped file must be what runs
    embedder = Embedder(str(model), backend="onnx", threads=1, onnx_dir=tmp_path / "exports")
    assert embedder.load(), embedder.error
    assert embedder.active_backend == "onnx"
    assert not (tmp_path / "exports").exists()  # nothing built
    assert _cosines(embedder.encode(SENTENCES[:5]), _reference()[:5]).min() >= 0.9999


def test_a_model_the_builder_cannot_reproduce_names_the_torch_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model_copy(tmp_path / "model")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").unlink()
    (model / "config.json").write_text(json.dumps({**config, "model_type": "mpnet"}))
    with pytest.raises(EmbeddingModelUnavailable, match="model_type is 'mpnet'"):
        ensure_onnx(model, tmp_path / "exports")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as without the embeddings-torch extra
    embedder = Embedder(str(model), backend="onnx", threads=1, onnx_dir=tmp_path / "exports")
    assert not embedder.load()
    assert "model_type is 'mpnet'" in (embedder.fallback_reason or "")
    error = embedder.error or ""
    assert "[embeddings-torch]'" in error and "--index-url https://download.pytorch.org/whl/cpu" in error


def test_models_the_onnx_path_cannot_reproduce_are_refused(tmp_path: Path) -> None:
    source = bundled_model_dir()
    assert source is not None
    check_onnx_compatible(source)  # the packaged model is supported
    model = tmp_path / "cls-model"
    (model / "1_Pooling").mkdir(parents=True)
    for name in ("modules.json", "tokenizer.json"):
        (model / name).write_bytes((source / name).read_bytes())
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(EmbeddingModelUnavailable, match="mean pooling only"):
        check_onnx_compatible(model)
    (model / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"}]))
    with pytest.raises(EmbeddingModelUnavailable, match="Transformer"):
        check_onnx_compatible(model)


def test_settings_choose_the_backend(tmp_path: Path) -> None:
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


# ---- torch (the embeddings-torch extra) ----------------------------------------------------------------


@needs_torch
@pytest.mark.slow  # torch and sentence-transformers imported, the model loaded on torch
def test_torch_still_gives_the_reference_vectors() -> None:
    embedder = Embedder(backend="torch", threads=1)
    assert embedder.load(), embedder.error
    assert embedder.active_backend == "torch" and embedder.model_key == "all-MiniLM-L6-v2"
    assert _cosines(embedder.encode(SENTENCES), _reference()).min() >= 0.9999


@needs_torch
@pytest.mark.slow
def test_missing_onnxruntime_falls_back_to_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    embedder = Embedder(backend="onnx", threads=1, onnx_dir=tmp_path / "exports")
    assert embedder.load(), embedder.error
    assert embedder.active_backend == "torch"
    assert "onnxruntime is not installed" in (embedder.fallback_reason or "")
    assert embedder.model_key == "all-MiniLM-L6-v2"
    assert _cosines(embedder.encode(SENTENCES[:5]), _reference()[:5]).min() >= 0.9999
    assert not (tmp_path / "exports").exists()  # nothing built
