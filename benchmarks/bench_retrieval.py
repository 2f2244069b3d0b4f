"""Retrieval quality with default arguments, on the project's own evaluation sets.

Run: python -m benchmarks.bench_retrieval [--memory-only | --brain-only]
Goals (issue #12): memory recall@3 ≥ 0.9 with no empty answer when a relevant memory exists; brain recall@5 ≥ 0.9
on plain-word questions about a pinned third-party code base (downloaded from PyPI), ingest embedding at ≥ 90% of
the raw model's throughput measured in the same run, text search answering while vectors are pending.
"""

from __future__ import annotations

import argparse

from benchmarks.harness import print_table


def memory() -> None:
    from benchmarks.retrieval_eval import evaluate

    scores, threshold = evaluate()
    print(f"memory_search with default arguments (threshold {threshold:g}, calibrated for the model)")
    print("text = the BM25 leg alone (the store without a model); hybrid's goal: never below its better leg")
    rows = [
        [
            s.question_set,
            s.mode,
            s.questions,
            f"{s.recall_at_1:.2f}",
            f"{s.recall_at_3:.2f}",
            f"{s.above_threshold_at_3:.2f}",
            s.empty_answers,
            "reference" if s.mode == "text" else "recall@3 ≥ 0.90, 0 empty",
        ]
        for s in scores
    ]
    print_table(
        ["questions", "mode", "count", "recall@1", "recall@3", "@3 above threshold", "empty answers", "goal"], rows
    )


def brain() -> None:
    import json

    from benchmarks.brain_eval import DATA, evaluate

    data = json.loads(DATA.read_text(encoding="utf-8"))
    run = evaluate()
    print(f"\nbrain_search on {data['package']} {data['version']} (sdist from PyPI): {run.files} files scanned")
    rows = [
        [s.mode, s.questions, f"{s.recall_at_1:.2f}", f"{s.recall_at_5:.2f}", "recall@5 ≥ 0.90"] for s in run.scores
    ]
    print_table(["mode", "questions", "recall@1 (file)", "recall@5 (file)", "goal"], rows)
    for score in run.scores:
        for miss in score.misses:
            print(f"  {score.mode} miss: {miss}")
    ratio = run.ingest_texts_per_second / run.raw_texts_per_second
    print()
    print_table(
        ["measure", "value", "floor / goal"],
        [
            ["raw model, same texts (store order)", f"{run.raw_texts_per_second:.1f} texts/s", "the floor"],
            ["ingest's embedding pass", f"{run.ingest_texts_per_second:.1f} texts/s ({ratio:.0%})", "≥ 90% of raw"],
            ["nodes embedded", run.nodes_embedded, ""],
            [
                "text search while vectors pending",
                f"{run.text_search_ms_while_pending:.1f} ms, {run.text_hits_while_pending} hits",
                f"{run.pending_at_text_search} pending",
            ],
        ],
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--brain-only", action="store_true")
    args = parser.parse_args()
    if not args.brain_only:
        memory()
    if not args.memory_only:
        brain()
