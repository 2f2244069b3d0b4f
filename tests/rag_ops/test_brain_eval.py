"""The brain evaluation's goals (the real model, a pinned sdist from PyPI): recall@5 ≥ 0.9 with brain_search
defaults, and text search answering while the vectors are still pending. Throughput is the benchmark's
(`python -m benchmarks.bench_retrieval --brain-only`), not a timed test."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs

pytestmark = [
    pytest.mark.skipif(not default_model_runs(), reason="needs the rag extra: pip install 'mcp-sections[rag]'"),
    pytest.mark.slow,  # a code base from PyPI ingested and embedded with the real model
]


def test_plain_word_questions_find_the_file_that_answers(shared_cache_dir: Path) -> None:
    from benchmarks.brain_eval import SourceUnavailable, evaluate

    try:
        run = evaluate(shared_cache_dir, throughput=False)
    except SourceUnavailable as exc:
        pytest.skip(f"the evaluation's code base cannot be downloaded here: {exc}")
    fused = next(score for score in run.scores if score.mode == "fused")
    assert fused.questions >= 20
    assert fused.recall_at_5 >= 0.9, fused.misses
    assert run.pending_at_text_search > 0 and run.text_hits_while_pending > 0
    assert run.nodes_embedded == run.pending_at_text_search
