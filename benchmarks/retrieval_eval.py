"""The memory evaluation: every question of `benchmarks/data/memory_eval.json` asked with default arguments.

Shared by `python -m benchmarks.bench_retrieval` (prints the table) and `tests/memory/test_retrieval_eval.py`
(asserts the goals). Runs the real section's store with the real embedding model, in a temporary data dir.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "memory_eval.json"


@dataclass
class ModeScore:
    mode: str  # "vector" and "hybrid": the section's modes; "text": the BM25 leg alone (the store without a model)
    question_set: str
    questions: int
    recall_at_1: float
    recall_at_3: float
    empty_answers: int
    above_threshold_at_3: float  # the right memory among the top 3 *and* clearing the threshold


def evaluate(cache_dir: Path | None = None) -> tuple[list[ModeScore], float]:
    """Scores per search mode and question set with default arguments, and the default threshold in force.

    Each question set gets its own store (its memories plus the distractors), searched through the section's
    store with the model (modes vector and hybrid) and through one without a model (the BM25 leg alone).
    """
    from mcp_sections.servers.memory.store import MemoryStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    # paraphrase: asked in other words; keyword: naming an id, host, person or code that has a near-identical twin
    sets = {"paraphrase": data["pairs"], "keyword": data["keyword_pairs"]}
    scores: list[ModeScore] = []
    threshold = 0.0
    with tempfile.TemporaryDirectory() as directory:
        embedder = get_embedder(EmbeddingSettings(), cache_dir or directory)
        for name, pairs in sets.items():
            store = MemoryStore.in_data_dir(Path(directory) / name / "model", None, wait_seconds=120)
            store.attach_embeddings(EmbeddingService(embedder, EmbeddingCache(store.db)))
            words_only = MemoryStore.in_data_dir(Path(directory) / name / "words", None)  # BM25 alone
            try:
                ids: dict[str, list[str]] = {}
                for label, target in (("model", store), ("words", words_only)):
                    ids[label] = [target.add(p["type"], p["memory"], workflow_id=None).memory.id for p in pairs]
                    for text in data["distractors"]:
                        target.add("context", text, workflow_id=None)
                for mode, label, target in (
                    ("vector", "model", store),
                    ("text", "words", words_only),
                    ("hybrid", "model", store),
                ):
                    top1 = top3 = clear3 = empty = 0
                    for pair, expected in zip(pairs, ids[label], strict=True):
                        search_mode = "hybrid" if mode == "hybrid" else "vector"
                        found = target.search(pair["question"], workflow_id=None, mode=search_mode).results
                        ranked = [f.memory.id for f in found]
                        empty += not ranked
                        top1 += ranked[:1] == [expected]
                        top3 += expected in ranked[:3]
                        clear3 += any(f.memory.id == expected and not f.below_threshold for f in found[:3])
                    n = len(pairs)
                    scores.append(ModeScore(mode, name, n, top1 / n, top3 / n, empty, clear3 / n))
                threshold = store.threshold_for(None)
            finally:
                store.close()
                words_only.close()
    return scores, threshold
