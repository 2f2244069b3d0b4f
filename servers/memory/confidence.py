"""How sure a memory search is that a result answers the query: a calibrated probability and a verdict.

A cosine similarity alone does not say it. A correct but loosely worded match and an unrelated memory can both score
0.22 with all-MiniLM-L6-v2, and a memory that shares one word with the question in another sense ("metric units" for
a question about "metrics") can score 0.45, as high as most right answers. So the confidence reads three things of
each result, each on its own (nothing about the other memories found, so a store of 3 memories and one of 3,000
judge a result alike):

- its similarity to the query;
- its *unshared similarity*: the similarity of the query with the words the memory shares with it left out (matched
  as the full-text index matches them: stemmed, stop words aside), weighed by how much of the question's meaning
  those words leave (`evidence.Judge`); the similarity itself when it shares none. A memory that answers still
  resembles the rest of the question; one found through a shared word alone does not;
- its *coverage*: the share of the query's searched words it holds (evidence of its own: ids, names).

    confidence = 1 / (1 + exp(-(W_SIMILARITY × similarity + W_UNSHARED × unshared + W_COVERAGE × coverage + BIAS)))

Fitted by logistic regression with `python -m benchmarks.memory_calibration --fit` on `memory_calibration.json` and
`memory_traps.json` (questions asked in other words, questions sharing a word with the wrong memory, questions naming
an id, questions no memory answers), in their whole stores and in stores of 3, 6 and 12 of their memories; checked
on `memory_eval.json` and `memory_traps_heldout.json`, never fitted on. The former model read the similarity and the
margin over the best other memory: fitted on stores of 25 memories and more, it took any memory standing out of a
small store for a match (15 of the 69 wrong first results of the held-out stores of 3 were `match`; none now).
The figures, before and after, are in the benchmark's docstring. The coefficients belong to the model; another model
has no confidence until it is calibrated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["match", "possible", "unrelated"]

#: Per embedding model: (W_SIMILARITY, W_UNSHARED, W_COVERAGE, BIAS), from `python -m benchmarks.memory_calibration`.
CALIBRATIONS: dict[str, tuple[float, float, float, float]] = {"all-MiniLM-L6-v2": (6.943, 6.351, 1.806, -4.833)}
MIN_CONFIDENCE = 0.5  # the default threshold: results below it are offered only to complete an answer, marked
MATCH = 0.7
POSSIBLE = 0.3


@dataclass(frozen=True)
class Evidence:
    """What the confidence reads of one result (see the module docstring)."""

    similarity: float
    unshared: float  # the similarity without the words shared with the query (= similarity when none is)
    coverage: float  # the share of the query's searched words the memory holds, 0-1


def calibration(model_key: str | None) -> tuple[float, float, float, float] | None:
    """The model's coefficients (None: not calibrated)."""
    return CALIBRATIONS.get(model_key.split("@", 1)[0]) if model_key else None


def confidence(evidence: Evidence, coefficients: tuple[float, float, float, float]) -> float:
    """The probability that a result with this evidence answers the query."""
    w_similarity, w_unshared, w_coverage, bias = coefficients
    logit = w_similarity * evidence.similarity + w_unshared * evidence.unshared + w_coverage * evidence.coverage
    return 1.0 / (1.0 + math.exp(-(logit + bias)))


def verdict(probability: float) -> Verdict:
    return "match" if probability >= MATCH else "possible" if probability >= POSSIBLE else "unrelated"


def similarity_at(probability: float, coefficients: tuple[float, float, float, float]) -> float:
    """The similarity a result sharing no word with the query needs to reach `probability` (the threshold reported
    to the client)."""
    w_similarity, w_unshared, _, bias = coefficients
    return (math.log(probability / (1.0 - probability)) - bias) / (w_similarity + w_unshared)
