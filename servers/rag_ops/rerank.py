"""The brain's last step in a hybrid search: a linear reranker over what the fusion knows of each candidate.

The fusion (`search`, `ranking`) scores a candidate by its weighted reciprocal ranks times the weight of its role for
the question's intent and its name and kind signals. Those constants were set by hand on three code bases and carry
over poorly to others. The reranker weighs every signal the fusion has, once per candidate (`SIGNALS`): the fused score
and rank, each leg's rank, the cosine gap to the best vector hit, the role's weight, the name and kind signals, and
the candidate's shape (label, kind, nested, private, documented, length, and whether the intent wants that label).
Its score is the dot product with `WEIGHTS`, learned by `python -m benchmarks.brain_rerank_study --weights` over
seven real code bases (a softmax over each question's first 40 candidates, held towards the fused score alone). On two
more, whose questions were written blind after it was final, it lifts recall@1/@5 from 0.35/0.56 to 0.38/0.71; the
same study scores it on each code base with weights learned on the others (README, "What a brain search covers").
Pure Python: a light install searches without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mcp_sections.servers.rag_ops.ranking import Question, is_a, name_match, weight
from mcp_sections.shared.brain.model import Node

RANK_K = 30
"""A leg's rank r (0-based) counts RANK_K / (RANK_K + r + 1): 1 ≈ first, 0.5 at rank 30."""
MISSING_COSINE_GAP = -0.3
"""The cosine gap of a candidate the vectors did not bring (about that of their 100th)."""
SIGNALS = (
    "log fused score",
    "fused rank",
    "vector rank",
    "cosine gap",
    "text rank",
    "symbol",
    "graph",
    "page",
    "log role weight",
    "name match",
    "kind asked",
    "private",
    "class",
    "function",
    "method",
    "doc section",
    "chunk",
    "nested",
    "documented",
    "log lines",
    "code intent × scope",
    "docs intent × section",
)
WEIGHTS = (
    1.78,
    1.05,
    -0.04,
    0.56,
    1.73,
    -0.59,
    0.43,
    0.07,
    0.70,
    0.13,
    0.91,
    -0.05,
    -0.64,
    0.48,
    0.17,
    0.21,
    -0.14,
    -0.09,
    -0.56,
    1.59,
    0.73,
    0.87,
)
"""One weight per signal, in `SIGNALS` order (`benchmarks/brain_rerank_study.py --weights` prints them)."""


@dataclass
class Candidate:
    """What the fusion knows of one candidate: its fused score, which legs found it at which rank (0-based), its
    cosine similarity when the vectors found it, and every way it was matched."""

    node: Node
    fused: float
    ranks: dict[str, int] = field(default_factory=dict)
    cosine: float | None = None
    matched_by: list[str] = field(default_factory=list)


def signals(candidates: Sequence[Candidate], question: Question) -> list[list[float]]:
    """Each candidate's `SIGNALS`, the candidates given best fused score first."""
    top_fused = max((c.fused for c in candidates), default=1.0) or 1.0
    top_cosine = max((c.cosine for c in candidates if c.cosine is not None), default=0.0)
    code, docs = question.intent in ("code", "mixed"), question.intent in ("docs", "changes")
    rows = []
    for position, candidate in enumerate(candidates):
        node, props = candidate.node, candidate.node.props
        scope, section = node.label == "Scope", node.label == "DocumentSection"
        kind = str(props.get("kind") or "")
        lines = (node.end_line or 0) - (node.start_line or 0) + 1
        rows.append(
            [
                math.log(candidate.fused / top_fused) if candidate.fused > 0 else -10.0,
                1 / (1 + position),
                _rank(candidate.ranks, "semantic"),
                candidate.cosine - top_cosine if candidate.cosine is not None else MISSING_COSINE_GAP,
                _rank(candidate.ranks, "text"),
                float("symbol" in candidate.ranks),
                float("graph" in candidate.matched_by),
                float("page" in candidate.matched_by),
                math.log(max(weight(question.intent, node), 1e-3)),
                name_match(question.stems, node),
                float(bool(question.thing) and is_a(node, str(question.thing))),
                float(node.name.startswith("_") and not node.name.startswith("__")),
                float(scope and kind == "class"),
                float(scope and kind == "function"),
                float(scope and kind == "method"),
                float(section),
                float(node.label == "Chunk"),
                float(bool(props.get("parent"))),
                float(bool(props.get("docstring"))),
                math.log(max(lines, 1)) / 5,
                float(code and scope),
                float(docs and section),
            ]
        )
    return rows


def scores(candidates: Sequence[Candidate], question: Question, weights: Sequence[float] = WEIGHTS) -> list[float]:
    """The reranker's score of each candidate (higher first), the candidates given best fused score first."""
    return [sum(w * x for w, x in zip(weights, row, strict=True)) for row in signals(candidates, question)]


def _rank(ranks: Mapping[str, int], leg: str) -> float:
    return RANK_K / (RANK_K + ranks[leg] + 1) if leg in ranks else 0.0
