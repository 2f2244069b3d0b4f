"""Memory retrieval with default arguments on the project's own evaluation set (paraphrased questions).

Run: python -m benchmarks.bench_retrieval
Goal (issue #12): recall@3 ≥ 0.9 with default arguments, no empty answer when a relevant memory exists.
"""

from __future__ import annotations

from benchmarks.harness import print_table
from benchmarks.retrieval_eval import evaluate


def main() -> None:
    scores, threshold = evaluate()
    print(f"memory_search with default arguments (threshold {threshold:g}, calibrated for the model)")
    rows = [
        [
            s.mode,
            s.questions,
            f"{s.recall_at_1:.2f}",
            f"{s.recall_at_3:.2f}",
            f"{s.above_threshold_at_3:.2f}",
            s.empty_answers,
            "recall@3 ≥ 0.90, 0 empty",
        ]
        for s in scores
    ]
    print_table(["mode", "questions", "recall@1", "recall@3", "@3 above threshold", "empty answers", "goal"], rows)


if __name__ == "__main__":
    main()
