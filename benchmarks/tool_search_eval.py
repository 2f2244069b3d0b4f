"""The tool-search evaluation: every need of `benchmarks/data/tool_needs_<split>.jsonl` asked of find_tools' index.

Shared by `python -m benchmarks.bench_gateway` (prints the table) and `tests/gateway/test_tool_search.py` (holds
the recall floor on the dev needs). Two sets of needs, each line `{"need": ..., "tools": [acceptable tools]}`:
- `heldout`: written first, before any tool example or dev need existed, from the seeds' French reference
  documents (`source` names the document) translated into plain needs; never looked at while tuning;
- `dev`: written from the tool descriptions as a user would ask, every built-in tool at least once; the index's
  constants were chosen on it.
A need is found at k when one of its acceptable tools is among the first k results. The index is the gateway's
own (`servers/gateway/tool_search.py`) over the built-in sections' declarations, with the real embedding model.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DATA = Path(__file__).resolve().parent / "data"
SPLITS = ("dev", "heldout")
Ranking = Literal["fused", "bm25", "vectors"]
#: What each ranking is called in the tables: the gateway's hybrid, and each of its legs alone.
RANKINGS: dict[Ranking, str] = {
    "fused": "hybrid (find_tools)",
    "bm25": "BM25 alone (FTS5)",
    "vectors": "embeddings alone",
}


def needs(split: str) -> list[dict[str, Any]]:
    path = DATA / f"tool_needs_{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Score:
    split: str
    ranking: Ranking
    needs: int
    recall_at_1: float
    recall_at_3: float
    misses: list[str] = field(default_factory=list)  # needs with no acceptable tool in the top 3


def tool_search(cache_dir: Path, data_dir: Path, embedding: Any = None) -> Any:
    """A gateway's ToolSearch over the built-in sections (no section started), built now."""
    from mcp_sections.servers.gateway.tool_search import ToolSearch
    from mcp_sections.servers.pool.catalog import build_catalog
    from mcp_sections.servers.pool.settings import GatewaySettings
    from mcp_sections.shared.config import Settings

    settings = Settings(cache_dir=cache_dir, data_dir=data_dir)
    search = ToolSearch(build_catalog(GatewaySettings()), settings, embedding)
    search.index(wait_seconds=600)
    return search


def evaluate(
    search: Any, splits: tuple[str, ...] = SPLITS, rankings: tuple[Ranking, ...] = tuple(RANKINGS)
) -> list[Score]:
    """Recall@1 and @3 per split and ranking (vector rankings need the model: skipped without it)."""
    index = search.index(wait_seconds=0)
    scores = []
    for split in splits:
        items = needs(split)
        vectors = [search.embed_query(item["need"]) if index.vectors is not None else None for item in items]
        for ranking in rankings:
            if ranking != "bm25" and index.vectors is None:
                continue
            top1 = top3 = 0
            misses = []
            for item, vector in zip(items, vectors, strict=True):
                found = [hit.entry.name for hit in index.rank(item["need"], vector, 3, mode=ranking)]
                acceptable = set(item["tools"])
                top1 += bool(found) and found[0] in acceptable
                if acceptable & set(found):
                    top3 += 1
                else:
                    misses.append(f"{item['need']!r}: wanted {'/'.join(item['tools'])}, got {', '.join(found)}")
            scores.append(Score(split, ranking, len(items), top1 / len(items), top3 / len(items), misses))
    return scores


def latency_ms(search: Any, rounds: int = 3) -> dict[str, tuple[float, float]]:
    """Warm (p50, p95) in ms of `ToolSearch.search` ("search") and, interleaved with it, of embedding the query
    alone ("model", the floor of any search by meaning), over the dev and held-out needs, each once a round."""
    queries = [item["need"] for split in SPLITS for item in needs(split)]
    search.search("warm up", 5, None)
    steps = {"search": lambda query: search.search(query, 5, None), "model": search.embed_query}
    samples: dict[str, list[float]] = {key: [] for key in steps}
    for _ in range(rounds):
        for query in queries:
            for key, step in steps.items():
                started = time.perf_counter()
                step(query)
                samples[key].append((time.perf_counter() - started) * 1000)
    return {key: (statistics.median(values), _p95(values)) for key, values in samples.items()}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def build_times(cache_dir: Path, data_dir: Path) -> dict[str, Any]:
    """Seconds to build the index in this process: definitions, model load, vectors (embedded or cached)."""
    started = time.perf_counter()
    search = tool_search(cache_dir, data_dir)
    times = search.times
    return {
        "total": time.perf_counter() - started,
        "definitions": times.definitions,
        "model": times.model,
        "vectors": times.vectors,
        "embedded": times.embedded,
        "mode": search.index(wait_seconds=0).mode,
    }


if __name__ == "__main__":  # one build in a fresh process (bench_gateway runs it twice: cold, then cached)
    import sys

    print(json.dumps(build_times(Path(sys.argv[1]), Path(sys.argv[2]))))
