"""The memory search's confidence: fitted, and how well it separates related from unrelated queries (issue #41).

    python -m benchmarks.memory_calibration [--fit]

Asks every question of `benchmarks/data/memory_calibration.json` (25 memories, 45 related, 45 unrelated questions)
and of the check set (`memory_eval.json`'s 62 paraphrase pairs with its distractors, against the 23 off-topic
unrelated questions of the first file) of the real store (vector mode, default arguments, the real model), and
scores each question's first result: right (its memory) or not (a wrong memory, or any for an unrelated question).
Prints the AUC of the similarity (before) and of the confidence (after), what share of each verdict was right, and
the old default threshold (similarity 0.30) beside the new (confidence 0.5). `--fit` refits the coefficients of
`servers/memory/confidence.py` on the calibration set (logistic regression on similarity and margin) and prints them.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
OLD_THRESHOLD = 0.30


def question_sets() -> dict[str, tuple[list[str], list[tuple[str, int | None]]]]:
    """Per set: its memories, and its questions with the index of the memory answering each (None: none does)."""
    calibration = json.loads((DATA / "memory_calibration.json").read_text(encoding="utf-8"))
    check = json.loads((DATA / "memory_eval.json").read_text(encoding="utf-8"))
    off_topic = calibration["unrelated"][22:]  # the first 22 are about a software team, as memory_eval's memories
    return {
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


def first_results(cache_dir: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per set, each question's first result: right or not, similarity, margin over the second, confidence."""
    from mcp_sections.servers.memory.store import MemoryStore
    from mcp_sections.shared.embeddings import EmbeddingCache, EmbeddingService, EmbeddingSettings, get_embedder

    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as directory:
        embedder = get_embedder(EmbeddingSettings(), cache_dir or directory)
        for name, (memories, questions) in question_sets().items():
            store = MemoryStore.in_data_dir(Path(directory) / name, None, wait_seconds=120)
            store.attach_embeddings(EmbeddingService(embedder, EmbeddingCache(store.db)))
            try:
                ids = [store.add("knowledge", text, workflow_id=None).memory.id for text in memories]
                rows = []
                for question, answer in questions:
                    found = store.search(question, workflow_id=None, limit=3).results
                    first, second = found[0], found[1]
                    rows.append(
                        {
                            "right": answer is not None and first.memory.id == ids[answer],
                            "similarity": first.similarity or 0.0,
                            "margin": (first.similarity or 0.0) - (second.similarity or 0.0),
                            "confidence": first.confidence,
                        }
                    )
                results[name] = rows
            finally:
                store.close()
    return results


def auc(rows: list[dict[str, Any]], key: str) -> float:
    right = [row[key] for row in rows if row["right"]]
    wrong = [row[key] for row in rows if not row["right"]]
    pairs = sum((a > b) + 0.5 * (a == b) for a in right for b in wrong)
    return pairs / max(len(right) * len(wrong), 1)


def fit(rows: list[dict[str, Any]], penalty: float = 0.01, steps: int = 3000) -> tuple[float, float, float]:
    """Logistic regression of right on (similarity, margin), standardised, lightly penalised: the coefficients."""
    import numpy as np

    features = np.array([[row["similarity"], row["margin"]] for row in rows])
    labels = np.array([float(row["right"]) for row in rows])
    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-9
    x = (features - mean) / scale
    weights, bias = np.zeros(2), 0.0
    for _ in range(steps):
        error = 1 / (1 + np.exp(-(x @ weights + bias))) - labels
        weights -= 0.5 * (x.T @ error / len(labels) + penalty * weights)
        bias -= 0.5 * float(error.mean())
    raw = weights / scale
    return float(raw[0]), float(raw[1]), float(bias - (mean / scale * weights).sum())


def report(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    from mcp_sections.servers.memory.confidence import MIN_CONFIDENCE, verdict

    lines = [f"{'set':<12} {'first results':>13} {'right':>6} {'AUC similarity':>15} {'AUC confidence':>15}"]
    for name, rows in results.items():
        right = sum(row["right"] for row in rows)
        lines.append(
            f"{name:<12} {len(rows):>13} {right:>6} {auc(rows, 'similarity'):>15.3f} {auc(rows, 'confidence'):>15.3f}"
        )
    lines.append("")
    lines.append(f"{'set':<12} {'verdict':<10} {'results':>8} {'right':>6}")
    for name, rows in results.items():
        for label in ("match", "possible", "unrelated"):
            chosen = [row for row in rows if verdict(row["confidence"]) == label]
            share = sum(row["right"] for row in chosen) / len(chosen) if chosen else float("nan")
            lines.append(f"{name:<12} {label:<10} {len(chosen):>8} {share:>6.0%}")
    lines.append("")
    lines.append(f"{'set':<12} {'default threshold':<22} {'right kept':>10} {'wrong kept':>10}")
    for name, rows in results.items():
        for label, keeps in (
            (f"similarity ≥ {OLD_THRESHOLD:.2f} (before)", lambda row: row["similarity"] >= OLD_THRESHOLD),
            (f"confidence ≥ {MIN_CONFIDENCE:g} (now)", lambda row: row["confidence"] >= MIN_CONFIDENCE),
        ):
            right = [keeps(row) for row in rows if row["right"]]
            wrong = [keeps(row) for row in rows if not row["right"]]
            lines.append(f"{name:<12} {label:<22} {sum(right) / len(right):>10.0%} {sum(wrong) / len(wrong):>10.0%}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit the coefficients on the calibration set")
    args = parser.parse_args()
    results = first_results()
    print("\n".join(report(results)))
    if args.fit:
        print("\ncoefficients (W_SIMILARITY, W_MARGIN, BIAS):", fit(results["calibration"]))


if __name__ == "__main__":
    main()
