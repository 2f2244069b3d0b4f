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
    mode: str
    questions: int
    recall_at_1: float
    recall_at_3: float
    empty_answers: int
    above_threshold_at_3: float  # the right memory among the top 3 *and* clearing the threshold


def evaluate(cache_dir: Path | None = None) -> tuple[list[ModeScore], float]:
    """Scores per search mode with default arguments, and the default threshold in force."""
    from mcp_sections.servers.memory.store import MemoryStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as directory:
        store = MemoryStore.in_data_dir(Path(directory), None, wait_seconds=120)
        store.attach_embeddings(
            EmbeddingService(get_embedder(EmbeddingSettings(), cache_dir or directory), EmbeddingCache(store.db))
        )
        try:
            ids = [store.add(p["type"], p["memory"], workflow_id=None).memory.id for p in data["pairs"]]
            for text in data["distractors"]:
                store.add("context", text, workflow_id=None)
            scores = []
            for mode in ("vector", "hybrid"):
                top1 = top3 = clear3 = empty = 0
                for pair, expected in zip(data["pairs"], ids, strict=True):
                    found = store.search(pair["question"], workflow_id=None, mode=mode).results
                    ranked = [f.memory.id for f in found]
                    empty += not ranked
                    top1 += ranked[:1] == [expected]
                    top3 += expected in ranked[:3]
                    clear3 += any(f.memory.id == expected and not f.below_threshold for f in found[:3])
                n = len(data["pairs"])
                scores.append(ModeScore(mode, n, top1 / n, top3 / n, empty, clear3 / n))
            return scores, store.threshold_for(None)
        finally:
            store.close()
