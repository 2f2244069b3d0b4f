"""What limits the brain's ranking: each signal alone, and a linear reranker learned over all of them (issue #41).

On the code evaluation's seven code bases (`brain_code_eval`: three tuned on, four whose questions were written blind),
every question's first 40 fused candidates are read with the signals the fusion has for them: the fused score and
rank, the rank and cosine of the vector leg, the rank of the text leg, the symbol leg, the call graph and page
legs, the role's weight for the intent, the name and kind signals, and the candidate's shape (label, kind, nested,
private, documented, length). Two tables:
- recall@1/@5 per group of code bases, ordered by the brain's ranking, by each leg alone, by the fused legs without
  the role weights and name signals, and by the role weights without the name signals;
- a linear reranker over those signals (softmax over each question's candidates, L2 towards the fused score),
  learned on six code bases and scored on the seventh, in turn (leave one project out), beside the brain's ranking
  on the same candidates.

Run: python -m benchmarks.brain_rerank_study [--keep DIR] [--l2 1.0] (the brains are ingested as `--eval` does;
with --keep they stay there between runs).
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.brain_code_eval import evaluate, fetch, is_answer, questions, sdist_cache
from benchmarks.harness import print_table

CANDIDATES = 40
RRF_K = 30
GROUPS = {
    "tuned on (click, attrs, marshmallow)": ("click", "attrs", "marshmallow"),
    "written blind (the other four)": ("sqlparse", "structlog", "cattrs", "itsdangerous"),
}
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


def collect(keep: Path) -> list[dict[str, Any]]:
    """Every question with its candidates' raw signals and whether each is a right answer."""
    from mcp_sections.servers.rag_ops import ranking, search
    from mcp_sections.servers.rag_ops.brain import Brain
    from mcp_sections.shared.brain.sqlite_backend import SQLiteBrainStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    evaluate(keep=keep, throughput=False)  # ingests and embeds what `keep` does not hold yet
    cache = sdist_cache()
    embedder = get_embedder(EmbeddingSettings(), cache.parent)
    assert embedder.load(), embedder.describe()
    rows = []
    for project in questions():
        root = fetch(project["package"], project["version"], cache)
        store = SQLiteBrainStore(keep / project["id"] / "brain.sqlite3")
        service = EmbeddingService(embedder, EmbeddingCache(store.database))
        brain = Brain(store, [root], embedding_service=service, background_embeddings=False)
        try:
            ids = brain.search_scope(None, roots=[str(root)]).project_ids
            for item in project["questions"]:
                query = item["question"]
                intent = ranking.intent_of(query)
                legs, _, _, text = brain._run_legs(query, ids, None, search.POOL, True, True, None)
                fused, nodes = brain._fuse(query, legs, intent, ids, graph=intent in ("code", "mixed") and text)
                ranks = {source: {nid: rank for rank, (nid, _) in enumerate(hits)} for source, hits in legs}
                cosines = {nid: raw for source, hits in legs if source == "semantic" for nid, raw in hits}
                stems, thing = ranking.query_stems(query), ranking.thing_asked(query)
                order = sorted((nid for nid in fused if nid in nodes), key=lambda nid: -fused[nid]["rrf"])
                candidates = []
                for position, nid in enumerate(order[:CANDIDATES]):
                    node = nodes[nid]
                    described = brain.describe(node, None, 0.0)
                    candidates.append(
                        {
                            "right": any(is_answer(described, answer, root) for answer in item["answers"]),
                            "position": position,
                            "fused": fused[nid]["rrf"],
                            "ranks": {source: found[nid] for source, found in ranks.items() if nid in found},
                            "cosine": cosines.get(nid),
                            "by": fused[nid]["matched_by"],
                            "weight": ranking.weight(intent, node),
                            "name": ranking.name_match(stems, node),
                            "kind asked": bool(thing and ranking.is_a(node, thing)),
                            "label": node.label,
                            "kind": str(node.props.get("kind") or ""),
                            "nested": bool(node.props.get("parent")),
                            "private": node.name.startswith("_") and not node.name.startswith("__"),
                            "documented": bool(node.props.get("docstring")),
                            "lines": (node.end_line or 0) - (node.start_line or 0) + 1,
                        }
                    )
                rows.append({"project": project["id"], "intent": intent, "candidates": candidates})
        finally:
            brain.close()
    return rows


def signals(row: dict[str, Any]) -> np.ndarray:
    """One question's candidates × `SIGNALS`."""
    candidates = row["candidates"]
    top_cosine = max([c["cosine"] for c in candidates if c["cosine"] is not None] or [0.0])
    top_fused = max(c["fused"] for c in candidates)
    code, docs = row["intent"] in ("code", "mixed"), row["intent"] in ("docs", "changes")

    def rank(c: dict[str, Any], source: str) -> float:
        return RRF_K / (RRF_K + c["ranks"][source] + 1) if source in c["ranks"] else 0.0

    matrix = []
    for c in candidates:
        scope, section = c["label"] == "Scope", c["label"] == "DocumentSection"
        matrix.append(
            [
                math.log(c["fused"] / top_fused) if c["fused"] > 0 else -10.0,
                1 / (1 + c["position"]),
                rank(c, "semantic"),
                c["cosine"] - top_cosine if c["cosine"] is not None else -0.3,
                rank(c, "text"),
                float("symbol" in c["ranks"]),
                float("graph" in c["by"]),
                float("page" in c["by"]),
                math.log(max(c["weight"], 1e-3)),
                c["name"],
                float(c["kind asked"]),
                float(c["private"]),
                float(scope and c["kind"] == "class"),
                float(scope and c["kind"] == "function"),
                float(scope and c["kind"] == "method"),
                float(section),
                float(c["label"] == "Chunk"),
                float(c["nested"]),
                float(c["documented"]),
                math.log(max(c["lines"], 1)) / 5,
                float(code and scope),
                float(docs and section),
            ]
        )
    return np.array(matrix)


Data = list[tuple[np.ndarray, np.ndarray, str]]


def learn(data: Data, l2: float, steps: int = 600, rate: float = 0.1) -> np.ndarray:
    """Weights over `SIGNALS` by gradient descent on each question's softmax cross-entropy, from (and held towards)
    the fused score alone."""
    start = np.zeros(len(SIGNALS))
    start[0] = 1.0
    weights = start.copy()
    usable = [(x, y) for x, y, _ in data if len(y) and y.sum()]
    for _ in range(steps):
        gradient = np.zeros(len(SIGNALS))
        for x, y in usable:
            scores = x @ weights
            p = np.exp(scores - scores.max())
            gradient += x.T @ (p / p.sum() - y / y.sum())
        weights -= rate * (gradient + l2 * (weights - start)) / len(usable)
    return weights


def hits(data: Data, weights: np.ndarray) -> tuple[int, int]:
    """Questions with a right answer first, and in the first five."""
    first = five = 0
    for x, y, _ in data:
        if len(y):
            order = np.argsort(-(x @ weights), kind="stable")
            first += bool(y[order[0]])
            five += bool(y[order[:5]].sum())
    return first, five


def ordered_by(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], float | None]) -> tuple[int, int]:
    """(@1, @5) hits when each question's candidates are ordered by `key` (candidates it has no value for left out)."""
    first = five = 0
    for row in rows:
        ranked = sorted((c for c in row["candidates"] if key(c) is not None), key=lambda c: -(key(c) or 0.0))
        first += bool(ranked) and ranked[0]["right"]
        five += any(c["right"] for c in ranked[:5])
    return first, five


def _name_and_kind(c: dict[str, Any]) -> float:
    """The factor the name and kind signals gave a candidate of the wanted role (`ranking.fit`)."""
    from mcp_sections.servers.rag_ops.ranking import NAME_BOOST, THING_BOOST

    if c["weight"] < 1.0:
        return 1.0
    return (1 + NAME_BOOST * c["name"]) * (THING_BOOST if c["kind asked"] else 1.0)


ORDERINGS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "the brain (brain_search)": lambda c: c["fused"],
    "vector leg alone": lambda c: -c["ranks"]["semantic"] if "semantic" in c["ranks"] else None,
    "text leg alone": lambda c: -c["ranks"]["text"] if "text" in c["ranks"] else None,
    "fused legs, no role or name": lambda c: c["fused"] / (c["weight"] * _name_and_kind(c)),
    "roles, no name or kind signal": lambda c: c["fused"] / _name_and_kind(c),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the brains here between runs")
    parser.add_argument("--l2", type=float, default=1.0, help="the reranker's pull towards the fused score")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        rows = collect(args.keep or Path(directory))
    print("recall@1 / @5 (questions with a right answer first / in the first five), per group of code bases\n")
    header = ["ordering", *GROUPS]
    table = []
    for name, key in ORDERINGS.items():
        cells = []
        for group in GROUPS.values():
            mine = [row for row in rows if row["project"] in group]
            first, five = ordered_by(mine, key)
            cells.append(f"{first / len(mine):.2f} / {five / len(mine):.2f}")
        table.append([name, *cells])
    print_table(header, table)
    data: Data = [
        (signals(row), np.array([c["right"] for c in row["candidates"]], float), row["project"])
        for row in rows
        if row["candidates"]
    ]
    projects = sorted({project for _, _, project in data})
    base = np.zeros(len(SIGNALS))
    base[0] = 1.0
    print(f"\nlinear reranker, leave one project out (l2 {args.l2}): hits @1 / @5, the brain → the reranker\n")
    table = []
    for project in projects:
        held = [d for d in data if d[2] == project]
        weights = learn([d for d in data if d[2] != project], args.l2)
        (b1, b5), (r1, r5) = hits(held, base), hits(held, weights)
        table.append([project, str(len(held)), f"{b1} / {b5}", f"{r1} / {r5}"])
    print_table(["held out", "questions", "brain", "reranker"], table)
    weights = learn(data, args.l2)
    print("\nweights learned on all: " + ", ".join(f"{n} {w:+.2f}" for n, w in zip(SIGNALS, weights, strict=True)))


if __name__ == "__main__":
    main()
