"""The memory search's confidence: fitted, and how well it tells right first results from wrong ones.

    python -m benchmarks.memory_calibration [--fit]

Five question sets, each asked of its own real store (the real model, vector mode), every memory judged:
- fitted on: `memory_calibration.json` (25 memories of a software team; 45 questions in other words, 45 that no
  memory answers) and `memory_traps.json` (65 memories, 51 of them in pairs sharing a word in two senses; 70
  questions, 28 sharing a word with the wrong memory, 14 mostly an id; 40 no memory answers, 32 sharing a word);
- never fitted on: `memory_eval.json`'s 62 paraphrase pairs and 8 distractors against the 23 off-topic questions of
  the first file ("check"), its 24 keyword pairs ("keywords": ids with near-identical twins), and
  `memory_traps_heldout.json` ("heldout": 34 memories, 40 questions, 28 unanswerable).
Each question is scored in its whole store and in smaller ones (3, 6 and 12 of its memories: the answer, one of its
nearest rivals, the rest drawn at random, seeded): a user's store may hold three memories. A first result is right
when it is the question's memory; any first result of an unanswerable question is wrong. Printed per set and store
size, before (similarity and margin over the best other memory, the former model) and after (`confidence.py`): the
AUC of right against wrong first results, the wrong ones marked `match`, the right ones marked `match`, the share of
first results whose verdict is right (a match that is right, or a non-match that is wrong); then what each verdict
holds. `--fit` refits the coefficients on the fitted sets (logistic regression) and prints them.

Measured (AUC before → after; wrong first results marked match, before → after; share of verdicts right):
    set          whole store                       stores of 3-12
    calibration  0.952 → 0.945  3 → 1 of 46  82→83%   0.952 → 0.956  19 → 4 of 276   84→84%
    traps        0.881 → 0.870  8 → 10 of 53 77→75%   0.839 → 0.894  71 → 44 of 299  73→76%
    check        0.892 → 0.898  4 → 4 of 37  73→78%   0.888 → 0.913  19 → 18 of 207  74→77%
    heldout      0.903 → 0.917  4 → 0 of 35  85→84%   0.894 → 0.925  33 → 0 of 204   83→83%
    keywords     0.698 → 0.587  3 → 3 of 3   75→79%   0.754 → 0.590  10 → 10 of 10   86→85%
A `match` was right 91% / 90% / 79% / 84% / 92% of the time before, 98% / 91% / 84% / 100% / 92% now (all stores);
the price is fewer right answers called a match on the held-out traps (167 → 134 of 204 in small stores), which
the verdict `possible` then carries. "keywords" has 3 wrong first results (a twin's id): vector mode cannot tell
twins apart; hybrid mode ranks them (`python -m benchmarks.bench_retrieval`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
FITTED = ("calibration", "traps")  # the others are never fitted on
SMALL_STORES = (3, 6, 12)
PER_SIZE = 2  # small stores drawn per question and size
#: The former model, σ(9.688 × similarity + 7.156 × margin − 4.238), margin over the best other memory of the store.
PREVIOUS = (9.688, 7.156, -4.238)


@dataclass(frozen=True)
class Judged:
    """One memory as a search judged it for one question."""

    similarity: float
    unshared: float
    coverage: float
    confidence: float


@dataclass(frozen=True)
class Question:
    text: str
    answer: int | None  # the index of its memory (None: no memory answers it)
    memories: list[Judged]  # every memory of its store, by index


@dataclass(frozen=True)
class First:
    """A store's first result for a question: right or not, before and after."""

    right: bool
    before: float
    after: float
    similarity: float
    unshared: float
    coverage: float
    store: int  # 0: the whole store, else its size


def question_sets() -> dict[str, tuple[list[str], list[tuple[str, int | None]]]]:
    """Per set: its memories, and its questions with the index of the memory answering each (None: none does)."""
    calibration = json.loads((DATA / "memory_calibration.json").read_text(encoding="utf-8"))
    check = json.loads((DATA / "memory_eval.json").read_text(encoding="utf-8"))
    off_topic = calibration["unrelated"][22:]  # the first 22 are about a software team, as memory_eval's memories
    sets = {
        "calibration": (
            [item["memory"] for item in calibration["memories"]],
            [(item["question"], item["memory"]) for item in calibration["related"]]
            + [(question, None) for question in calibration["unrelated"]],
        ),
        "check": (
            [pair["memory"] for pair in check["pairs"]] + check["distractors"],
            [(pair["question"], index) for index, pair in enumerate(check["pairs"])]
            + [(question, None) for question in off_topic],
        ),
    }
    for name, file in (("traps", "memory_traps.json"), ("heldout", "memory_traps_heldout.json")):
        data = json.loads((DATA / file).read_text(encoding="utf-8"))
        sets[name] = (
            [item["memory"] for item in data["memories"]],
            [(item["question"], item["memory"]) for item in data["related"]]
            + [(item["question"], None) for item in data["unrelated"]],
        )
    sets["keywords"] = (
        [pair["memory"] for pair in check["keyword_pairs"]] + check["distractors"],
        [(pair["question"], index) for index, pair in enumerate(check["keyword_pairs"])],
    )
    return sets


def judge_all(cache_dir: Path | None = None) -> dict[str, list[Question]]:
    """Per set, each question with every memory of its store as the real search judged it."""
    from mcp_sections.servers.memory.store import MemoryStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    judged: dict[str, list[Question]] = {}
    with tempfile.TemporaryDirectory() as directory:
        embedder = get_embedder(EmbeddingSettings(), cache_dir or directory)
        for name, (memories, questions) in question_sets().items():
            store = MemoryStore.in_data_dir(Path(directory) / name, None, wait_seconds=120)
            store.attach_embeddings(EmbeddingService(embedder, EmbeddingCache(store.db)))
            try:
                index = {store.add("knowledge", text, workflow_id=None).memory.id: n for n, text in enumerate(memories)}
                judged[name] = []
                for question, answer in questions:
                    found = store.search(question, workflow_id=None, limit=100, threshold=-1.0).results
                    assert len(found) == len(memories), (name, question, len(found))
                    by_index: dict[int, Judged] = {}
                    for item in found:
                        assert item.evidence is not None and item.confidence is not None
                        evidence = item.evidence
                        by_index[index[item.memory.id]] = Judged(
                            evidence.similarity, evidence.unshared, evidence.coverage, item.confidence
                        )
                    judged[name].append(Question(question, answer, [by_index[n] for n in range(len(memories))]))
            finally:
                store.close()
    return judged


def stores(question: Question, rng: random.Random) -> Iterator[list[int]]:
    """The memories of each store the question is asked of: the whole one, then smaller ones holding its answer and
    one of its nearest rivals (the nearest, half the time), the rest at random."""
    everything = list(range(len(question.memories)))
    yield everything
    rivals = sorted((n for n in everything if n != question.answer), key=lambda n: -question.memories[n].similarity)
    for size in SMALL_STORES:
        for _ in range(PER_SIZE):
            chosen = [] if question.answer is None else [question.answer]
            chosen.append(rivals[0] if rng.random() < 0.5 else rng.choice(rivals[:5]))
            others = [n for n in everything if n not in chosen]
            yield chosen + rng.sample(others, size - len(chosen))


def firsts(questions: list[Question], seed: int = 41) -> list[First]:
    """Each store's first result for each question (a search ranks by similarity; the confidence of a result does
    not depend on the other memories, so a smaller store's first result is judged as in the whole store)."""
    rng = random.Random(seed)
    rows = []
    for question in questions:
        for memories in stores(question, rng):
            ranked = sorted(memories, key=lambda n: -question.memories[n].similarity)
            top, second = question.memories[ranked[0]], question.memories[ranked[1]]
            w_similarity, w_margin, bias = PREVIOUS
            margin = top.similarity - second.similarity
            before = 1 / (1 + math.exp(-(w_similarity * top.similarity + w_margin * margin + bias)))
            size = 0 if len(memories) == len(question.memories) else len(memories)
            right = ranked[0] == question.answer
            rows.append(First(right, before, top.confidence, top.similarity, top.unshared, top.coverage, size))
    return rows


def auc(rows: list[First], key: Callable[[First], float]) -> float:
    right = [key(row) for row in rows if row.right]
    wrong = [key(row) for row in rows if not row.right]
    pairs = sum((a > b) + 0.5 * (a == b) for a in right for b in wrong)
    return pairs / max(len(right) * len(wrong), 1)


def fit(rows: list[First], penalty: float = 0.01, steps: int = 3000) -> tuple[float, float, float, float]:
    """Logistic regression of right on (similarity, unshared similarity, coverage), standardised, lightly penalised:
    the coefficients of `confidence.py`."""
    import numpy as np

    features = np.array([[row.similarity, row.unshared, row.coverage] for row in rows])
    labels = np.array([float(row.right) for row in rows])
    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-9
    x = (features - mean) / scale
    weights, bias = np.zeros(3), 0.0
    for _ in range(steps):
        error = 1 / (1 + np.exp(-(x @ weights + bias))) - labels
        weights -= 0.5 * (x.T @ error / len(labels) + penalty * weights)
        bias -= 0.5 * float(error.mean())
    raw = weights / scale
    return float(raw[0]), float(raw[1]), float(raw[2]), float(bias - (mean / scale * weights).sum())


def before(row: First) -> float:
    return row.before


def after(row: First) -> float:
    return row.after


def summary(name: str, label: str, rows: list[First]) -> str:
    """One line of the first table: AUC, wrong and right first results marked match, verdicts right; before → after."""
    from mcp_sections.servers.memory.confidence import MATCH

    wrong, right = [r for r in rows if not r.right], [r for r in rows if r.right]
    matched = {
        key: (sum(key(r) >= MATCH for r in wrong), sum(key(r) >= MATCH for r in right)) for key in (before, after)
    }
    accurate = {key: sum((key(r) >= MATCH) == r.right for r in rows) / len(rows) for key in (before, after)}
    return (
        f"{name:<12} {label:<7} {len(rows):>6} {len(right):>5}  {auc(rows, before):>8.3f} → {auc(rows, after):.3f}  "
        f"{matched[before][0]:>5} → {matched[after][0]:<3}/{len(wrong):<4}  "
        f"{matched[before][1]:>5} → {matched[after][1]:<3}/{len(right):<4}  "
        f"{accurate[before]:>6.0%} → {accurate[after]:<4.0%}"
    )


def report(results: dict[str, list[First]]) -> list[str]:
    from mcp_sections.servers.memory.confidence import verdict

    lines = [
        f"{'set':<12} {'stores':<7} {'firsts':>6} {'right':>5}  {'AUC before → after':>19}  "
        f"{'wrong as match':>15}  {'right as match':>15}  {'verdict right':>14}"
    ]
    for name, rows in results.items():
        lines.append(summary(name, "whole", [row for row in rows if not row.store]))
        lines.append(summary(name, "3-12", [row for row in rows if row.store]))
    lines += ["", f"{'set':<12} {'verdict':<10} {'before: firsts':>14} {'right':>6} {'after: firsts':>14} {'right':>6}"]
    for name, rows in results.items():
        for label in ("match", "possible", "unrelated"):
            cells = []
            for key in (before, after):
                chosen = [row for row in rows if verdict(key(row)) == label]
                share = sum(row.right for row in chosen) / len(chosen) if chosen else float("nan")
                cells.append(f"{len(chosen):>14} {share:>6.0%}")
            lines.append(f"{name:<12} {label:<10} {cells[0]} {cells[1]}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit the coefficients on the fitted sets")
    args = parser.parse_args()
    results = {name: firsts(questions) for name, questions in judge_all().items()}
    print("\n".join(report(results)))
    if args.fit:
        rows = [row for name in FITTED for row in results[name]]
        print("\ncoefficients (W_SIMILARITY, W_UNSHARED, W_COVERAGE, BIAS):", fit(rows))


if __name__ == "__main__":
    main()
