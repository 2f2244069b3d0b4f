"""memory_search's confidence (issue #41): a calibrated probability that a result answers the query, from its
similarity and its margin over the others, with a verdict; the default threshold is a confidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs


def test_the_confidence_reads_the_similarity_and_the_margin() -> None:
    from mcp_sections.servers.memory.confidence import MIN_CONFIDENCE, calibration, confidence, similarity_at, verdict

    coefficients = calibration("all-MiniLM-L6-v2@onnx")
    assert coefficients is not None and calibration("some-other-model") is None and calibration(None) is None
    # the case: the same similarity is a match when the memory stands out, not when all memories are alike
    assert confidence(0.45, 0.15, coefficients) > 0.7 > confidence(0.45, 0.0, coefficients)
    assert confidence(0.22, 0.0, coefficients) < 0.3
    at = similarity_at(MIN_CONFIDENCE, coefficients)
    assert confidence(at, 0.0, coefficients) == pytest.approx(MIN_CONFIDENCE)
    assert [verdict(p) for p in (0.9, 0.7, 0.5, 0.3, 0.1)] == ["match", "match", "possible", "possible", "unrelated"]


@pytest.mark.skipif(not default_model_runs(), reason="needs the memory extra: pip install 'mcp-sections[memory]'")
def test_the_confidence_separates_related_from_unrelated_on_a_set_never_fitted_on(shared_cache_dir: Path) -> None:
    """On memory_eval.json's pairs against off-topic questions (never fitted on): the confidence separates at least as
    well as the similarity, and each verdict means what its description says."""
    from benchmarks.memory_calibration import auc, first_results
    from mcp_sections.servers.memory.confidence import verdict

    check = first_results(shared_cache_dir)["check"]
    assert auc(check, "confidence") >= max(auc(check, "similarity"), 0.85)
    for label, low, high in (("match", 0.8, 1.0), ("possible", 0.4, 0.9), ("unrelated", 0.0, 0.2)):
        chosen = [row for row in check if verdict(row["confidence"]) == label]
        assert chosen and low <= sum(row["right"] for row in chosen) / len(chosen) <= high, (label, len(chosen))
