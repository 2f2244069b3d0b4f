"""Full-text search over SQLite FTS5: the one query builder and stop-word list (memory and the brain use it).

A caller's text becomes a safe MATCH expression: each word quoted (so `AND`, `NEAR`, `*`, `"` and column filters
are plain words, never operators), duplicates dropped, stop words dropped unless nothing else is left, OR-ed so
that BM25 ranks documents by how many of the words they hold and how rare those words are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WORD = re.compile(r"\w+", re.UNICODE)

#: Common English function words: they match nearly every row, so they cost time and add no ranking signal.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def query_terms(text: str, *, max_terms: int = 32, extra_stopwords: Iterable[str] = ()) -> list[str]:
    """The distinct lower-case words of `text` worth searching for (all of them if only stop words remain)."""
    stop = STOPWORDS | frozenset(extra_stopwords)
    words = list(dict.fromkeys(word.lower() for word in WORD.findall(text)))
    meaningful = [word for word in words if word not in stop]
    return (meaningful or words)[:max_terms]


def match_expression(text: str, *, max_terms: int = 32, extra_stopwords: Iterable[str] = ()) -> str | None:
    """A safe FTS5 MATCH expression for `text` (None when it holds no word at all)."""
    terms = query_terms(text, max_terms=max_terms, extra_stopwords=extra_stopwords)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
