"""The brain evaluation: plain-word questions about a pinned third-party code base → the file that answers.

The code base is a released sdist from PyPI (`benchmarks/data/brain_eval.json` names it), downloaded with pip
and unpacked at run time, never vendored. The real rag_ops brain ingests its sources, embeds them with the real
model, and answers every question with `brain_search` defaults (semantic + text fusion) and with text alone;
recall@1/@5 counts the distinct files in rank order. The same run measures the embedding throughput of the
ingest against the raw model on the same texts, and how text search answers while the vectors are pending.

Shared by `python -m benchmarks.bench_retrieval` (prints the tables) and `tests/rag_ops/test_brain_eval.py`
(asserts the goals).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "brain_eval.json"


class SourceUnavailable(RuntimeError):
    """The sdist could not be downloaded (no access to PyPI)."""


@dataclass
class BrainScore:
    mode: str
    questions: int
    recall_at_1: float
    recall_at_5: float
    misses: list[str]


@dataclass
class BrainRun:
    scores: list[BrainScore]
    files: int
    nodes_embedded: int
    raw_texts_per_second: float
    ingest_texts_per_second: float
    text_search_ms_while_pending: float
    text_hits_while_pending: int
    pending_at_text_search: int


def fetch_source(directory: Path) -> Path:
    """Download and unpack the pinned sdist; the directory of its package sources."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    spec = f"{data['package']}=={data['version']}"
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", spec]
    if importlib.util.find_spec("setuptools") is not None:
        # pip reads an sdist's metadata by building it; without isolation it uses this setuptools instead of
        # installing one into a throw-away build environment first (~10 s of CPU and a download, for one file)
        command.append("--no-build-isolation")
    done = subprocess.run(
        [*command, "-d", str(directory)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    archives = list(directory.glob("*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise SourceUnavailable(f"pip download {spec} failed: {done.stderr.strip()[-300:]}")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(directory, filter="data")
    return directory / f"{data['package']}-{data['version']}" / data["source_dir"]


def evaluate(cache_dir: Path | None = None, *, throughput: bool = True) -> BrainRun:
    """One run of the evaluation; without `throughput` the raw model's rate is not measured (0: it would embed every
    text a second time) and the ingest's includes the model's warm-up: what the test asserts is recall."""
    from mcp_sections.servers.rag_ops.brain import Brain
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        source = fetch_source(base / "sdist")
        store = SQLiteBrainStore(base / "brain.sqlite3")
        embedder = get_embedder(EmbeddingSettings(), cache_dir or base)
        service = EmbeddingService(embedder, EmbeddingCache(store.database))
        brain = Brain(store, [source], embedding_service=service, background_embeddings=False)
        try:
            report = brain.ingest_directory(str(source), "eval")
            pending = store.count_pending(service.model_key, ["eval"])
            started = time.perf_counter()
            text_hits = brain.search("progress bar", project_ids=["eval"], types=None, semantic=False, limit=5)
            text_ms = (time.perf_counter() - started) * 1000
            assert embedder.load(), embedder.describe()
            raw_rate = 0.0
            if throughput:
                texts = [text for _, text, _ in store.pending_embeddings(service.model_key, 100_000, ["eval"])]
                embedder.encode(texts[:32])  # warm-up, so that neither measurement pays it
                # the model alone, 32 texts at a time in store order (the ingest chooses its batches: worker.py)
                started = time.perf_counter()
                for start in range(0, len(texts), 32):
                    embedder.encode(texts[start : start + 32])
                raw_rate = len(texts) / (time.perf_counter() - started)
            started = time.perf_counter()
            embedded = brain.generate_embeddings(["eval"], 1200)
            ingest_rate = embedded["embedded"] / (time.perf_counter() - started)
            scores = [_score(brain, data["questions"], mode) for mode in ("fused", "text")]
            return BrainRun(
                scores=scores,
                files=report.files_scanned,
                nodes_embedded=embedded["embedded"],
                raw_texts_per_second=raw_rate,
                ingest_texts_per_second=ingest_rate,
                text_search_ms_while_pending=text_ms,
                text_hits_while_pending=len(text_hits["results"]),
                pending_at_text_search=pending,
            )
        finally:
            brain.close()


def _score(brain: Any, questions: list[dict[str, Any]], mode: str) -> BrainScore:
    top1 = top5 = 0
    misses = []
    for item in questions:
        found = brain.search(item["question"], project_ids=["eval"], types=None, semantic=mode == "fused", limit=20)
        files: list[str] = []
        for result in found["results"]:
            name = Path(result["relative_path"]).name
            if name not in files:
                files.append(name)
        expected = set(item["files"])
        top1 += bool(files[:1]) and files[0] in expected
        top5 += bool(expected & set(files[:5]))
        if not expected & set(files[:5]):
            misses.append(f"{item['question']} → {files[:5]}")
    n = len(questions)
    return BrainScore(mode, n, top1 / n, top5 / n, misses)
