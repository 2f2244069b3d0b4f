"""memory_search's confidence (issue #41): a calibrated probability that a result answers the query, from its
similarity, its similarity without the words it shares with the query, and the share of the query's words it holds;
with a verdict; the default threshold is a confidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.shared.embeddings.embedder import default_model_runs


def test_the_confidence_reads_the_similarity_the_unshared_similarity_and_the_coverage() -> None:
    from mcp_sections.servers.memory.confidence import (
        MIN_CONFIDENCE,
        Evidence,
        calibration,
        confidence,
        similarity_at,
        verdict,
    )

    coefficients = calibration("all-MiniLM-L6-v2@onnx")
    assert coefficients is not None and calibration("some-other-model") is None and calibration(None) is None
    # the same similarity: a match when the memory resembles the question as a whole, not when one shared word of
    # three made it (nothing is left once that word is masked)
    assert confidence(Evidence(0.45, 0.45, 0.0), coefficients) > 0.7
    assert confidence(Evidence(0.45, 0.05, 1 / 3), coefficients) < 0.5
    # holding every word of the question is evidence of its own
    assert confidence(Evidence(0.45, 0.05, 1.0), coefficients) > confidence(Evidence(0.45, 0.05, 1 / 3), coefficients)
    assert confidence(Evidence(0.22, 0.22, 0.0), coefficients) < 0.3
    at = similarity_at(MIN_CONFIDENCE, coefficients)
    assert confidence(Evidence(at, at, 0.0), coefficients) == pytest.approx(MIN_CONFIDENCE)
    assert [verdict(p) for p in (0.9, 0.7, 0.5, 0.3, 0.1)] == ["match", "match", "possible", "possible", "unrelated"]


@pytest.mark.slow
@pytest.mark.skipif(not default_model_runs(), reason="needs the memory extra: pip install 'mcp-sections[memory]'")
def test_on_sets_never_fitted_on_the_verdicts_mean_what_they_say(shared_cache_dir: Path) -> None:
    """On memory_eval.json's pairs and on memory_traps_heldout.json, in the whole stores and in stores of 3 to 12 of
    their memories: the confidence separates right from wrong first results at least as well as the former model
    (similarity and margin), marks no more wrong first results `match`, and a `match` is right 9 times in 10."""
    from benchmarks.memory_calibration import auc, firsts, judge_all
    from mcp_sections.servers.memory.confidence import MATCH, verdict

    judged = judge_all(shared_cache_dir)
    for name in ("check", "heldout"):
        rows = firsts(judged[name])
        for stores in ([row for row in rows if not row.store], [row for row in rows if row.store]):
            assert auc(stores, lambda row: row.after) >= max(auc(stores, lambda row: row.before) - 0.01, 0.85), name
            wrong = [row for row in stores if not row.right]
            assert sum(row.after >= MATCH for row in wrong) <= sum(row.before >= MATCH for row in wrong), name
        for label, low, high in (("match", 0.9, 1.0), ("possible", 0.25, 0.8), ("unrelated", 0.0, 0.2)):
            chosen = [row for row in rows if verdict(row.after) == label]
            assert chosen and low <= sum(row.right for row in chosen) / len(chosen) <= high, (name, label, len(chosen))
