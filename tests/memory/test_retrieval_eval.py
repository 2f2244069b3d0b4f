"""The memory evaluation's goals with default arguments (the real model): recall@3 ≥ 0.9 and no empty answer
in either mode, and hybrid never below the better of its two legs (vector, BM25 alone) on either question set."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs

pytestmark = pytest.mark.skipif(
    not default_model_runs(),
    reason="needs the memory extra: pip install 'mcp-sections[memory]'",
)


def test_paraphrased_questions_find_their_memory_with_default_arguments(shared_cache_dir: Path) -> None:
    from benchmarks.retrieval_eval import evaluate
    from mcp_sections.servers.memory.confidence import CALIBRATIONS, MIN_CONFIDENCE, similarity_at

    scores, threshold = evaluate(shared_cache_dir)
    assert threshold == pytest.approx(similarity_at(MIN_CONFIDENCE, CALIBRATIONS["all-MiniLM-L6-v2"]))
    by = {(score.question_set, score.mode): score for score in scores}
    for question_set in ("paraphrase", "keyword"):
        legs = [by[question_set, "vector"], by[question_set, "text"]]
        hybrid = by[question_set, "hybrid"]
        for score in (by[question_set, "vector"], hybrid):
            assert score.empty_answers == 0, score
            assert score.recall_at_3 >= 0.9, score
        assert hybrid.recall_at_1 >= max(leg.recall_at_1 for leg in legs), scores
        assert hybrid.recall_at_3 >= max(leg.recall_at_3 for leg in legs), scores
