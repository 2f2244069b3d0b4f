"""How sure a memory search is that a result answers the query: a calibrated probability and a verdict.

A cosine similarity alone does not say it: a correct but loosely worded match and an unrelated query can both score
0.22 with all-MiniLM-L6-v2. The confidence reads two things of a result: its similarity, and its margin over the
best other memory found (a memory that answers stands out from the rest; for an unrelated query all are alike):

    confidence = 1 / (1 + exp(-(W_SIMILARITY × similarity + W_MARGIN × margin + BIAS)))

fitted by logistic regression on `benchmarks/data/memory_calibration.json` (25 memories, 45 questions asked in other
words, 45 that no memory answers; written before fitting) with `python -m benchmarks.memory_calibration`, and
checked on `benchmarks/data/memory_eval.json` (written earlier, never fitted on). Top-1 results, AUC (related vs
unrelated), similarity alone → confidence: 0.950 → 0.943 on the calibration set (5-fold), 0.873 → 0.892 on the
check set. What a verdict means (the share of results that were right, calibration / check set):
- "match" (confidence ≥ 0.7): 91% / 88% right: use it;
- "possible" (0.3 to 0.7): 63% / 68%: read it before relying on it;
- "unrelated" (< 0.3): 8% / 13%: treat it as no answer.
The default threshold is confidence `MIN_CONFIDENCE` 0.5 (before: similarity 0.30, which let 43% of the unrelated
questions of the check set through against 19% now, for 81% of the related ones found against 92%).
The coefficients belong to the model; another model has no confidence until it is calibrated.
"""

from __future__ import annotations

import math
from typing import Literal

Verdict = Literal["match", "possible", "unrelated"]

#: Per embedding model: (W_SIMILARITY, W_MARGIN, BIAS), from `python -m benchmarks.memory_calibration`.
CALIBRATIONS: dict[str, tuple[float, float, float]] = {"all-MiniLM-L6-v2": (9.688, 7.156, -4.238)}
MIN_CONFIDENCE = 0.5  # the default threshold: results below it are offered only to complete an answer, marked
MATCH = 0.7
POSSIBLE = 0.3


def calibration(model_key: str | None) -> tuple[float, float, float] | None:
    """The model's coefficients (None: not calibrated)."""
    return CALIBRATIONS.get(model_key.split("@", 1)[0]) if model_key else None


def confidence(similarity: float, margin: float, coefficients: tuple[float, float, float]) -> float:
    """The probability that a result with this similarity, and this margin over the best other memory found (0 when
    none was), answers the query."""
    w_similarity, w_margin, bias = coefficients
    return 1.0 / (1.0 + math.exp(-(w_similarity * similarity + w_margin * margin + bias)))


def confidences(similarities: list[float | None], coefficients: tuple[float, float, float]) -> list[float | None]:
    """Each result's confidence, from its similarity and its margin over the best other result's (0 when alone;
    None for a result without a vector)."""
    scores: list[float | None] = []
    for index, similarity in enumerate(similarities):
        others = [value for other, value in enumerate(similarities) if other != index and value is not None]
        margin = similarity - max(others) if similarity is not None and others else 0.0
        scores.append(None if similarity is None else round(confidence(similarity, margin, coefficients), 4))
    return scores


def verdict(probability: float) -> Verdict:
    return "match" if probability >= MATCH else "possible" if probability >= POSSIBLE else "unrelated"


def similarity_at(probability: float, coefficients: tuple[float, float, float]) -> float:
    """The similarity a result with no margin needs to reach `probability` (the threshold reported to the client)."""
    w_similarity, _, bias = coefficients
    return (math.log(probability / (1.0 - probability)) - bias) / w_similarity
