"""What limits the brain's ranking, and what its reranker is worth on code nobody tuned on (issue #41).

On the code evaluation's nine code bases (`brain_code_eval`: three the fusion was tuned on, six whose questions were
written blind), every question is asked as `brain_search` asks it, up to the reranker: its first `RERANK_DEPTH`
candidates by fused score, with the signals `rerank.signals` reads for each. Two tables:
- recall@1/@5 per group of code bases, ordered by the fused score, by each leg alone, by the fused legs without the
  role weights and name signals, by the role weights without the name signals, and by the reranker;
- the reranker learned on all code bases but one and scored on that one, in turn (leave one project out), beside the
  fused score on the same candidates: what it is worth on a code base it never saw.
`--weights` prints the weights learned on the seven code bases of `LEARNED_ON`, which `rerank.WEIGHTS` holds (a softmax
over each question's candidates, by gradient descent from the fused score alone and held towards it with `--l2`);
pyparsing and tomlkit, written blind after that, were never learned from.

Run: python -m benchmarks.brain_rerank_study [--keep DIR] [--l2 1.0] [--weights] [--model DIR] (the brains are
ingested as `bench_brain --eval` does; with --keep they stay there between runs, one directory per model). With
`--model` another embedding model answers, to see what a larger one is worth: all-mpnet-base-v2 (110 M parameters,
768 dimensions, against the default's 22 M and 384; on torch), run on 2026-11-29, gave the same leave-one-project-out
figures, 138 / 198 of 236 against the default's 138 / 197, the vector leg alone 0.02-0.08 better at @1; embedding
took several times as long (not timed apart: that run shared the CPU).

Tried with scratch scripts on the same candidates, leave one project out, and not kept (the default scores 138 / 197
of 236 there):
- more signals for the reranker: the cosine of the question with the candidate's whole text (138 / 194), the share of
  the question's stems among its body's words (134 / 201), the cosine with its comments and message strings, the
  body's prose (135 / 193), all of these (139 / 201);
- the same signals in a pointwise gradient-boosted model instead of the weighted sum (126-142 / 191-201);
- a definition's name written out as words in the text embedded for it, `StatementSplitter (statement splitter)`
  (142 / 195), or in place of the name (137 / 193), the brains ingested again;
- the question's opening ("where is", "how does") cut from what the vectors are searched with (131 / 192).
Each moves a few questions either way, within what a different split of the same questions moves.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.brain_code_eval import brain_at, evaluate, fetch, is_answer, loaded_embedder, questions, sdist_cache
from benchmarks.harness import median, percentile, print_table
from mcp_sections.servers.rag_ops.ranking import Question, fit, read_question, weight
from mcp_sections.servers.rag_ops.rerank import SIGNALS, WEIGHTS, Candidate, scores, signals
from mcp_sections.servers.rag_ops.search import POOL, RERANK_DEPTH, fused_candidates

LEARNED_ON = ("click", "attrs", "marshmallow", "sqlparse", "structlog", "cattrs", "itsdangerous")
GROUPS = {
    "tuned on (click, attrs, marshmallow)": ("click", "attrs", "marshmallow"),
    "written blind (sqlparse, structlog, cattrs, itsdangerous)": ("sqlparse", "structlog", "cattrs", "itsdangerous"),
    "blind, after the reranker (pyparsing, tomlkit)": ("pyparsing", "tomlkit"),
}


@dataclass
class Asked:
    """One question: what the ranking read from it, its first `RERANK_DEPTH` candidates by fused score (what the
    reranker orders in `brain_search`), and which of them are right answers."""

    project: str
    question: Question
    candidates: list[Candidate]
    right: list[bool]


def collect(keep: Path, model: str | None = None) -> list[Asked]:
    """Every question of every code base, asked as `brain_search` asks it up to the reranker (with `model` instead of
    the default embedding model, if given)."""
    evaluate(keep=keep, throughput=False, model=model, ask=False)  # ingests and embeds what `keep` does not hold yet
    cache = sdist_cache()
    embedder = loaded_embedder(cache.parent, model)
    asked = []
    for project in questions():
        root = fetch(project["package"], project["version"], cache)
        brain = brain_at(keep / project["id"] / "brain.sqlite3", [root], embedder)
        try:
            ids = brain.search_scope(None, roots=[str(root)]).project_ids
            for item in project["questions"]:
                query = item["question"]
                question = read_question(query)
                legs, _, _, text = brain._run_legs(query, ids, None, POOL, True, True, None)
                graph = question.intent in ("code", "mixed") and text
                fused, nodes = brain._fuse(query, legs, question, ids, graph=graph)
                head = fused_candidates(fused, nodes)[:RERANK_DEPTH]
                right = [
                    any(is_answer(brain.describe(c.node, None, 0.0), answer, root) for answer in item["answers"])
                    for c in head
                ]
                asked.append(Asked(project["id"], question, head, right))
        finally:
            brain.close()
    return asked


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
            values = x @ weights
            p = np.exp(values - values.max())
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


Ordering = Callable[[Candidate, Question], "float | None"]


def ordered_by(asked: list[Asked], key: Ordering) -> tuple[int, int]:
    """(@1, @5) hits when each question's candidates are ordered by `key` (candidates it has no value for left out)."""
    first = five = 0
    for one in asked:
        valued = [(key(c, one.question), right) for c, right in zip(one.candidates, one.right, strict=True)]
        ranked = sorted(((v, right) for v, right in valued if v is not None), key=lambda pair: -pair[0])
        first += bool(ranked) and ranked[0][1]
        five += any(right for _, right in ranked[:5])
    return first, five


def _name_and_kind(c: Candidate, q: Question) -> float:
    """The factor the name and kind signals gave a candidate (`ranking.fit` beyond its role's weight)."""
    return fit(q.intent, c.node, q.stems, q.thing) / weight(q.intent, c.node)


ORDERINGS: dict[str, Ordering] = {
    "fused score (brain_search before the reranker)": lambda c, q: c.fused,
    "vector leg alone": lambda c, q: -c.ranks["semantic"] if "semantic" in c.ranks else None,
    "text leg alone": lambda c, q: -c.ranks["text"] if "text" in c.ranks else None,
    "fused legs, no role or name": lambda c, q: c.fused / (weight(q.intent, c.node) * _name_and_kind(c, q)),
    "roles, no name or kind signal": lambda c, q: c.fused / _name_and_kind(c, q),
    "the reranker as shipped (rerank.WEIGHTS)": lambda c, q: None,  # filled in by `main`
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep the brains here between runs")
    parser.add_argument("--l2", type=float, default=1.0, help="the reranker's pull towards the fused score")
    parser.add_argument("--weights", action="store_true", help="print the weights of LEARNED_ON")
    parser.add_argument(
        "--model", help="another embedding model than the default (a sentence-transformers directory), to compare"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        asked = collect(args.keep or Path(directory), args.model)
    data: Data = [
        (np.array(signals(one.candidates, one.question)), np.array(one.right, float), one.project)
        for one in asked
        if one.candidates
    ]
    learned = learn(data, args.l2)
    ORDERINGS["the reranker as shipped (rerank.WEIGHTS)"] = _scored_by(asked, np.array(WEIGHTS))
    print("recall@1 / @5 (questions with a right answer first / in the first five), per group of code bases\n")
    table = []
    for name, key in ORDERINGS.items():
        cells = []
        for group in GROUPS.values():
            mine = [one for one in asked if one.project in group]
            first, five = ordered_by(mine, key)
            cells.append(f"{first / len(mine):.2f} / {five / len(mine):.2f}")
        table.append([name, *cells])
    print_table(["ordering", *GROUPS], table)
    base = np.zeros(len(SIGNALS))
    base[0] = 1.0
    print(f"\nthe reranker, leave one project out (l2 {args.l2}): hits @1 / @5, fused score → reranker\n")
    table = []
    totals = np.zeros(4, int)
    for project in sorted({project for _, _, project in data}):
        held = [d for d in data if d[2] == project]
        (b1, b5), (r1, r5) = hits(held, base), hits(held, learn([d for d in data if d[2] != project], args.l2))
        totals += (b1, b5, r1, r5)
        table.append([project, str(len(held)), f"{b1} / {b5}", f"{r1} / {r5}"])
    table.append(["all", str(len(data)), f"{totals[0]} / {totals[1]}", f"{totals[2]} / {totals[3]}"])
    print_table(["held out", "questions", "fused", "reranker"], table)
    shipped = np.array(WEIGHTS)
    print(f"\nrerank.WEIGHTS (learned on the first seven): {hits(data, shipped)} of {len(data)}; learned on all:")
    print(f"{hits(data, learned)} (in sample)")
    reachable = sum(any(one.right) for one in asked)
    print(f"a right answer among the {RERANK_DEPTH} candidates the reranker orders: {reachable} of {len(asked)}")
    spent = []
    for one in asked:
        started = time.perf_counter()
        scores(one.candidates, one.question)
        spent.append((time.perf_counter() - started) * 1000)
    print(
        f"the reranker's cost per question ({RERANK_DEPTH} candidates): p50 {median(spent):.2f} ms, p95 "
        f"{percentile(spent, 0.95):.2f} ms"
    )
    if args.weights:
        chosen = learn([d for d in data if d[2] in LEARNED_ON], args.l2)
        print("WEIGHTS = (" + ", ".join(f"{w:.2f}" for w in chosen) + ")")


def _scored_by(asked: list[Asked], weights: np.ndarray) -> Ordering:
    """An ordering by the reranker's score with `weights` (looked up by candidate)."""
    by_candidate = {
        id(c): value
        for one in asked
        if one.candidates
        for c, value in zip(one.candidates, scores(one.candidates, one.question, list(weights)), strict=True)
    }
    return lambda c, q: by_candidate[id(c)]


if __name__ == "__main__":
    main()
