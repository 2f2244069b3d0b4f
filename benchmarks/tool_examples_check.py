"""Check the tools' example needs against each other, without any needs file: each example, left out of its tool,
is asked of find_tools' index; an example whose own tool is not first reads as another tool's need.

    python -m benchmarks.tool_examples_check [--section todo] [--all]

Prints, per section, how many of its examples find their own tool first and within three, then every example that
does not (with the tools that outranked it). Use it when writing `@tool(examples=...)` (see CONTRIBUTING.md): an
example that pulls toward a neighbour is worded with what tells the two apart, or replaced.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from collections import defaultdict
from pathlib import Path

from benchmarks.tool_search_eval import tool_search
from mcp_sections.servers.gateway.tool_search import COLUMNS, ToolEntry, ToolIndex, query_vector, tool_vectors


@dataclasses.dataclass
class Outcome:
    entry: ToolEntry
    example: str
    rank: int  # 1-based rank of the example's own tool (0: not in the first 10)
    above: list[str]  # the tools ranked above it


def without_example(entry: ToolEntry, left_out: int) -> ToolEntry:
    examples = tuple(example for position, example in enumerate(entry.examples) if position != left_out)
    columns = list(entry.columns)
    columns[list(COLUMNS).index("examples")] = " . ".join(examples)
    return dataclasses.replace(entry, examples=examples, columns=tuple(columns))


def check(sections: set[str] | None) -> list[Outcome]:
    with tempfile.TemporaryDirectory() as scratch:
        search = tool_search(Path(scratch) / "cache", Path(scratch) / "data")
        index = search.index(wait_seconds=600)
        service = search.embedding_service()  # the same model and vector cache as the index
        if service is None:
            raise SystemExit("the embedding model is not available: install the embedding extra")
        outcomes = []
        for row, entry in enumerate(index.entries):
            if sections is not None and entry.section not in sections:
                continue
            for position, example in enumerate(entry.examples):
                entries = list(index.entries)
                entries[row] = without_example(entry, position)
                assert index.vectors is not None
                vectors = index.vectors.copy()
                vectors[row] = tool_vectors([entries[row]], service)[0]
                hits = ToolIndex(entries, vectors).rank(example, query_vector(example, service), 10)
                names = [hit.entry.name for hit in hits]
                rank = names.index(entry.name) + 1 if entry.name in names else 0
                above = names[: rank - 1] if rank else names[:3]
                outcomes.append(Outcome(entry, example, rank, above))
        return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", action="append", help="check only this section's tools (repeatable)")
    parser.add_argument("--all", action="store_true", help="print every example, not only those not ranked first")
    args = parser.parse_args()
    outcomes = check(set(args.section) if args.section else None)
    by_section: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_section[outcome.entry.section].append(outcome)
    print(f"{'section':<14} {'examples':>8} {'own tool 1st':>13} {'within 3':>9}")
    for section, items in sorted(by_section.items()):
        first = sum(item.rank == 1 for item in items)
        within = sum(1 <= item.rank <= 3 for item in items)
        print(f"{section:<14} {len(items):>8} {first:>13} {within:>9}")
    total = len(outcomes)
    first = sum(item.rank == 1 for item in outcomes)
    within = sum(1 <= item.rank <= 3 for item in outcomes)
    shares = f"({first / max(total, 1):.3f} / {within / max(total, 1):.3f})"
    print(f"{'all':<14} {total:>8} {first:>13} {within:>9}   {shares}")
    print()
    for item in outcomes:
        if args.all or item.rank != 1:
            where = f"rank {item.rank}" if item.rank else "not in the first 10"
            print(f"{item.entry.name}: {item.example!r}: {where}; above: {', '.join(item.above)}")


if __name__ == "__main__":
    main()
