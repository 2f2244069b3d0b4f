"""The memory evaluation's goals with default arguments (the real model): recall@3 ≥ 0.9, no empty answer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec("numpy") is None,
    reason="needs the memory extra: pip install 'mcp-sections[memory]'",
)


def test_paraphrased_questions_find_their_memory_with_default_arguments(shared_cache_dir: Path) -> None:
    from benchmarks.retrieval_eval import evaluate

    scores, threshold = evaluate(shared_cache_dir)
    assert threshold == 0.3
    for score in scores:
        assert score.empty_answers == 0, score
        assert score.recall_at_3 >= 0.9, score
