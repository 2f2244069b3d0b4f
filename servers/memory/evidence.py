"""The words a search's results share with its query, and each result's confidence judged from them (`confidence.py`).

`held_terms` is the one reading of which searched words a memory holds, matched as the full-text index matches them
(stemmed: "metrics" holds "metric"): hybrid mode's keyword bonus reads its coverage, the confidence reads it too and
the similarity of the query without those words. A `Judge` embeds each distinct masked query once, only when asked:
a search judges its results in rank order and stops once it has enough, so the masking costs a forward pass per
distinct set of shared words among the results it offers, and nothing for results that share no word.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mcp_sections.shared.embeddings import EmbeddingUnavailable
from mcp_sections.shared.text.fulltext import WORD, query_terms

from .confidence import Evidence, confidence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .dialects import Dialect

logger = logging.getLogger("mcp_sections.memory")


def held_terms(connection: Any, dialect: Dialect, query: str, pks: Sequence[int]) -> dict[int, frozenset[str]]:
    """For each of these memories that holds any, the query's searched words it holds."""
    terms = query_terms(query)
    pks = list(dict.fromkeys(pks))
    if not terms or not pks:
        return {}
    held: dict[int, set[str]] = {}
    marks = ",".join("?" * len(pks))
    for term in terms:
        for row in connection.execute(dialect.covered.format(marks=marks), [dialect.match(term), *pks]):
            held.setdefault(row[0], set()).add(term)
    return {pk: frozenset(words) for pk, words in held.items()}


def coverage(query: str, held: dict[int, frozenset[str]]) -> dict[int, float]:
    """The share of the query's searched words each memory holds."""
    count = len(query_terms(query))
    return {pk: len(words) / count for pk, words in held.items()} if count else {}


def without_words(query: str, words: frozenset[str]) -> str:
    """The query with these (lower-case) words left out."""
    return " ".join(word for word in WORD.findall(query) if word.lower() not in words)


class Judge:
    """The confidence of one search's results, computed on demand (`confidence.py`)."""

    def __init__(
        self,
        query: str,
        query_vector: np.ndarray,
        coefficients: tuple[float, float, float, float],
        held: dict[int, frozenset[str]],
        similarity_of: Callable[[np.ndarray, int], float | None],
        embed: Callable[[str], np.ndarray],
    ) -> None:
        self.query = query
        self.query_vector = query_vector
        self.coefficients = coefficients
        self.held = held
        self.coverage = coverage(query, held)
        self.similarity_of = similarity_of  # the cosine of a query vector with a memory's (None: no vector now)
        self.embed = embed
        self._masked: dict[str, tuple[np.ndarray, float] | None] = {}  # masked text: its vector, what it keeps

    def evidence(self, pk: int, similarity: float) -> Evidence:
        """What the confidence reads of the memory `pk` found at this similarity.

        The unshared similarity is the similarity of the query without the words the memory shares with it, weighed
        by how much of the question's meaning those words leave (the cosine of the masked query with the query): a
        question that is mostly its shared words ("what runs on db-07?" masked is "what runs on") has nothing left
        to hold against the memory, one that is mostly something else ("which database did we pick for metrics")
        must still resemble it once "metrics" is masked."""
        shared = self.held.get(pk)
        masked = self._masked_query(without_words(self.query, shared)) if shared else None
        unshared = None if masked is None else self.similarity_of(masked[0], pk)
        if masked is None or unshared is None:  # nothing shared, or every word: no similarity to set apart
            return Evidence(similarity, similarity, self.coverage.get(pk, 0.0))
        kept = masked[1]
        return Evidence(similarity, (1 - kept) * similarity + kept * unshared, self.coverage.get(pk, 0.0))

    def _masked_query(self, text: str) -> tuple[np.ndarray, float] | None:
        """The masked query's vector and how much of the query it keeps (its cosine with it, 0-1); None: empty."""
        if not text:
            return None
        if text not in self._masked:
            try:
                vector = self.embed(text)
                self._masked[text] = vector, min(max(float(vector @ self.query_vector), 0.0), 1.0)
            except EmbeddingUnavailable:  # the model went away since the query was embedded: no masking
                logger.warning("embedding a masked query failed; its results are judged without it")
                self._masked[text] = None
        return self._masked[text]

    def judge(self, pk: int, similarity: float | None) -> tuple[float | None, Evidence | None]:
        """The confidence of the memory `pk` found at this similarity (None without a vector), and its evidence."""
        if similarity is None:
            return None, None
        evidence = self.evidence(pk, similarity)
        return round(confidence(evidence, self.coefficients), 4), evidence
