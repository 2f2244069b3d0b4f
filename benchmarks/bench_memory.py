"""Benchmark of the memory section's store and embeddings: `python benchmarks/bench_memory.py`.

Prints one table. Measured in-process on the domain code (`MemoryStore`), which is what every tool call
runs after argument validation; the model is the real all-MiniLM-L6-v2 (CPU).

Why numpy brute force and not an ANN index: the pyenv `sqlite3` cannot load extensions (no sqlite-vec), and
an exact scan over L2-normalised float32 vectors is one matrix-vector product: ~1 ms at 10k and ~10 ms at
100k × 384 on one core, exact (no recall loss), with no index to build or keep in sync across processes.
HNSW would only pay off well beyond 100k memories per data directory.

Sizes 10k and 100k use synthetic unit vectors inserted directly into SQLite (embedding 100k sentences
would take ~13 minutes here); the 1k set is embedded by the model. Queries are always real sentences
embedded by the model (distinct, so the in-memory query cache never helps).

Embedding backends (`--backends torch,onnx,onnx-int8`) are compared side by side: load time and RSS in
fresh processes (round 0 makes the ONNX exports, into a temporary directory unless `--onnx-dir`; then
`--rounds` cold loads per backend, interleaved, medians), then query encoding and search latency in one
process with every backend loaded, in alternating blocks of 10 calls so that a busy CPU slows them alike.
The rest of the table (adds, hybrid, disk, RAM, stdio) runs on the default backend.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import (
    Embedder,
    EmbeddingCache,
    EmbeddingService,
    EmbeddingSettings,
    content_hash,
    get_embedder,
    to_blob,
)

SYLLABLES = ["ka", "lo", "mi", "ter", "san", "dra", "vel", "po", "rin", "tu", "gex", "bar", "on", "qui", "zel", "fa"]
STOP = ["the", "a", "of", "to", "and", "is", "in", "for", "on", "with"]


def vocabulary(size: int = 5_000) -> list[str]:
    rng = random.Random(3)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


VOCABULARY = vocabulary()
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]  # word frequencies as in natural text


SUBJECTS = ["The user", "Our team", "The billing service", "The parser", "Alice", "The on-call engineer", "The client"]
VERBS = ["prefers", "decided to use", "reported a bug in", "wants to migrate", "deployed", "reviewed", "documented"]
OBJECTS = [
    "PostgreSQL for invoices",
    "short answers without emojis",
    "the cache layer",
    "a Rust rewrite of the lexer",
    "weekly releases on Friday",
    "the login page",
    "the quarterly revenue report",
    "SQLite in WAL mode",
    "the onboarding checklist",
    "the on-call rotation",
    "the design review",
    "the vector search index",
]
REASONS = ["because it is faster", "after the outage", "to cut costs", "for the audit", "before the holidays", ""]


def english(rng: random.Random) -> str:
    """A short realistic English memory (what embedding speed depends on: ~15-20 word pieces)."""
    parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(REASONS)]
    return " ".join(part for part in parts if part) + f" (note {rng.randint(1, 10**6)})."


def sentence(rng: random.Random, n: int = 12) -> str:
    """Synthetic text with natural word statistics: Zipf-distributed content words plus stop words."""
    content = rng.choices(VOCABULARY, weights=ZIPF, k=n)
    words = [word if rng.random() > 0.35 else f"{rng.choice(STOP)} {word}" for word in content]
    return " ".join(words).capitalize() + "."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:  # current RSS (ru_maxrss is only the peak)
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def file_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20


def open_store(directory: Path, service_settings: EmbeddingSettings) -> MemoryStore:
    store = MemoryStore(directory / "memory.sqlite3", None, wait_seconds=60)
    store.attach_embeddings(EmbeddingService(get_embedder(service_settings), EmbeddingCache(store.db)))
    return store


def insert_synthetic(store: MemoryStore, count: int, dim: int, rng: random.Random) -> None:
    import numpy as np

    generator = np.random.default_rng(7)
    model = store.model_key
    now = "2026-01-01T00:00:00.000000Z"
    workflows = ["", "wf-a", "wf-b", "wf-c"]
    types = ["user_pref", "context", "knowledge", "decision"]
    batch = 5_000
    for start in range(0, count, batch):
        vectors = generator.standard_normal((min(batch, count - start), dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = []
        for offset, vector in enumerate(vectors):
            text = f"{sentence(rng)} #{start + offset}"
            rows.append(
                (
                    f"mem_{uuid.uuid4().hex}",
                    types[offset % 4],
                    text,
                    content_hash(text),
                    "{}",
                    "[]",
                    workflows[offset % 4],
                    now,
                    now,
                    to_blob(vector),
                    model,
                )
            )
        with store.db.write() as connection:
            connection.executemany(
                "INSERT INTO memories(id, type, content, content_hash, metadata, tags, workflow_id, created_at, "
                "updated_at, embedding, embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )


CPU_TIMES: list[float] = []  # process CPU ms of the last time_searches call (robust to a busy machine)


def time_searches(store: MemoryStore, queries: list[str], mode: str = "vector") -> list[float]:
    timings = []
    CPU_TIMES.clear()
    for query in queries:
        started, cpu = time.perf_counter(), time.process_time()
        store.search(query, workflow_id="wf-a", scope="both", threshold=0.0, limit=10, mode=mode)  # type: ignore[arg-type]
        timings.append((time.perf_counter() - started) * 1000)
        CPU_TIMES.append((time.process_time() - cpu) * 1000)
    return timings


async def over_stdio(data_dir: Path, calls: int, rng: random.Random) -> list[tuple[str, str]]:
    """The same operations through a real `mcp-sections serve memory` process and the official client."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    script = Path(sys.executable).parent / "mcp-sections"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mcp_sections.servers"]
    env = {k: v for k, v in os.environ.items() if k.startswith(("MCP_SECTIONS_", "PATH", "HOME", "HF_"))}
    parameters = StdioServerParameters(
        command=command[0], args=[*command[1:], "serve", "memory", "--data-dir", str(data_dir)], env=env
    )
    rows = []
    started = time.perf_counter()
    async with Client(parameters, read_timeout_seconds=120) as client:  # type: ignore[arg-type]
        await client.list_tools()
        rows.append(("stdio: start + initialize + tools/list", f"{(time.perf_counter() - started) * 1000:.0f} ms"))
        started = time.perf_counter()
        await client.call_tool("memory_search", {"query": "warm-up query"})
        rows.append(("stdio: first search (waits for the model load)", f"{time.perf_counter() - started:.1f} s"))
        adds, searches = [], []
        for _ in range(calls):
            began = time.perf_counter()
            await client.call_tool("memory_add", {"type": "knowledge", "content": english(rng), "force": True})
            adds.append((time.perf_counter() - began) * 1000)
        for _ in range(calls):
            began = time.perf_counter()
            await client.call_tool("memory_search", {"query": english(rng), "threshold": 0.0})
            searches.append((time.perf_counter() - began) * 1000)
    rows.append(
        (
            f"stdio: memory_add p50 / p95 ({calls} calls)",
            f"{statistics.median(adds):.1f} / {percentile(adds, 95):.1f} ms",
        )
    )
    rows.append(
        (
            f"stdio: memory_search p50 / p95 ({calls} calls, {calls} memories)",
            f"{statistics.median(searches):.1f} / {percentile(searches, 95):.1f} ms",
        )
    )
    return rows


BACKENDS = ("torch", "onnx", "onnx-int8")


def backend_settings(backend: str, onnx_dir: Path) -> EmbeddingSettings:
    return EmbeddingSettings(embedding_backend=backend, embedding_onnx_dir=str(onnx_dir))  # type: ignore[arg-type]


def probe_load(backend: str, onnx_dir: Path) -> int:
    """`--probe BACKEND`: a cold process loads one backend and prints what it cost, as JSON."""
    import json

    rss_start = rss_mb()
    embedder = get_embedder(backend_settings(backend, onnx_dir))
    started = time.perf_counter()
    if not embedder.load():
        print(json.dumps({"error": embedder.error}))
        return 1
    load = time.perf_counter() - started
    began = time.perf_counter()
    embedder.encode(["the first query after start"])
    first = (time.perf_counter() - began) * 1000
    report = {
        "load_s": load,
        "first_encode_ms": first,
        "rss_mb": rss_mb(),
        "rss_delta_mb": rss_mb() - rss_start,
        "active": embedder.active_backend,
        "torch_imported": "torch" in sys.modules,
    }
    print(json.dumps(report))
    return 0


def cold_loads(backends: list[str], onnx_dir: Path, rounds: int) -> list[tuple[str, str]]:
    """Load time and RSS per backend in fresh processes, interleaved round by round; medians.

    Round 0 makes the ONNX exports (timed as the one-time export) and is not counted."""
    import json
    import subprocess

    results: dict[str, list[dict[str, float]]] = {backend: [] for backend in backends}
    rows: list[tuple[str, str]] = []
    for round_ in range(rounds + 1):
        for backend in backends:
            command = [sys.executable, __file__, "--probe", backend, "--onnx-dir", str(onnx_dir)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
            lines = done.stdout.strip().splitlines()
            report = json.loads(lines[-1]) if lines else {"error": done.stderr.strip()[-300:]}
            if "error" in report:
                raise SystemExit(f"{backend}: {report['error']}")
            if round_ == 0:
                if backend != "torch":
                    rows.append((f"[{backend}] one-time ONNX export + first load (cold)", f"{report['load_s']:.1f} s"))
                continue
            results[backend].append(report)
    for backend, reports in results.items():
        load = statistics.median(r["load_s"] for r in reports)
        rss = statistics.median(r["rss_mb"] for r in reports)
        delta = statistics.median(r["rss_delta_mb"] for r in reports)
        first = statistics.median(r["first_encode_ms"] for r in reports)
        torch_note = "torch imported" if reports[0]["torch_imported"] else "no torch in the process"
        rows.append(
            (
                f"[{backend}] model import + load, cold process (median of {len(reports)})",
                f"{load:.2f} s, first encode {first:.0f} ms (runs on {reports[0]['active']})",
            )
        )
        rows.append((f"[{backend}] process RSS after load", f"{rss:.0f} MB (+{delta:.0f} MB; {torch_note})"))
    return rows


def interleaved(functions: dict[str, Any], inputs: list[Any], block: int = 10) -> dict[str, tuple[list, list]]:
    """Wall and process-CPU ms of `function(input)` for every backend, in alternating blocks (a busy CPU
    slows them alike; CPU time is what the call costs whatever the other processes do)."""
    timings: dict[str, tuple[list, list]] = {name: ([], []) for name in functions}
    for start in range(0, len(inputs), block):
        for name, function in functions.items():
            wall, cpu = timings[name]
            for item in inputs[start : start + block]:
                began, began_cpu = time.perf_counter(), time.process_time()
                function(item)
                wall.append((time.perf_counter() - began) * 1000)
                cpu.append((time.process_time() - began_cpu) * 1000)
    return timings


def p50_p95(values: list[float], cpu: list[float] | None = None) -> str:
    text = f"{statistics.median(values):.1f} / {percentile(values, 95):.1f} ms"
    return text + (f" (CPU {statistics.median(cpu):.1f} / {percentile(cpu, 95):.1f} ms)" if cpu else "")


def encoding_rows(embedders: dict[str, Embedder], rng: random.Random, count: int) -> list[tuple[str, str]]:
    """Query encoding latency, one sentence per call (what a search pays), interleaved; then batched throughput."""
    rows: list[tuple[str, str]] = []
    queries = [f"{english(rng)} {sentence(rng, 2)}" for _ in range(count)]
    for each in embedders.values():
        each.encode(queries[:5])  # warm the kernels
    encode = interleaved({name: (lambda text, e=each: e.encode([text])) for name, each in embedders.items()}, queries)
    for backend, (wall, cpu) in encode.items():
        rows.append((f"[{backend}] query encode p50 / p95 (one sentence)", p50_p95(wall, cpu)))
    batch = [english(rng) for _ in range(512)]  # embedding throughput (batched, no cache)
    for backend, each in embedders.items():
        started = time.perf_counter()
        each.encode(batch)
        rate = len(batch) / (time.perf_counter() - started)
        rows.append(
            (f"[{backend}] embedding throughput (batch 32, short English sentences)", f"{rate:.0f} sentences/s")
        )
    return rows


def add_rows(
    directory: Path, settings: EmbeddingSettings, rng: random.Random, adds: int, default: str
) -> list[tuple[str, str]]:
    """memory_add throughput: embed + duplicate check + insert + fsync, one by one (default backend)."""
    store = open_store(directory, settings)
    texts = [english(rng) for _ in range(adds)]
    started = time.perf_counter()
    stored = sum(store.add("knowledge", text, workflow_id="wf-a").stored for text in texts)
    elapsed = time.perf_counter() - started
    rows = [
        (
            f"memory_add throughput (embed + duplicate check + commit; {default})",
            f"{adds / elapsed:.0f} adds/s ({stored} stored, {adds - stored} near-duplicates)",
        )
    ]
    started = time.perf_counter()
    for text in texts[:100]:
        store.add("knowledge", text, workflow_id="wf-b", force=True)  # same texts: the cache skips the model
    rows.append(("memory_add throughput, cached embeddings", f"{100 / (time.perf_counter() - started):.0f} adds/s"))
    store.close()
    return rows


def fill_store(directory: Path, settings: EmbeddingSettings, size: int, dim: int, rng: random.Random) -> float:
    """`size` memories in a new store (embedded by the model up to 1,000, synthetic above); its MB on disk."""
    directory.mkdir()
    store = open_store(directory, settings)
    if size <= 1000:
        for text in (english(rng) for _ in range(size)):
            store.add("knowledge", text, workflow_id=rng.choice(["wf-a", "wf-b", None]), force=True)
    else:
        insert_synthetic(store, size, dim, rng)
    store.close()
    with sqlite3.connect(directory / "memory.sqlite3") as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return file_mb(directory / "memory.sqlite3")


def backend_stores(
    directory: Path, model_key: str | None, embedders: dict[str, Embedder], onnx_dir: Path
) -> dict[str, MemoryStore]:
    """A store per backend over the same memories (int8 has its own model key, so its copy of the database
    relabels the vectors: retrieval costs the same, only encoding differs)."""
    stores = {}
    for backend, each in embedders.items():
        if each.model_key == model_key:
            stores[backend] = open_store(directory, backend_settings(backend, onnx_dir))
            continue
        copy = directory.parent / f"{directory.name}-{backend}"
        copy.mkdir()
        shutil.copy(directory / "memory.sqlite3", copy / "memory.sqlite3")
        with sqlite3.connect(copy / "memory.sqlite3") as connection:
            connection.execute("UPDATE memories SET embedding_model = ?", (each.model_key,))
        stores[backend] = open_store(copy, backend_settings(backend, onnx_dir))
    return stores


@dataclass(frozen=True)
class Backends:
    """The embedders compared, all loaded in this process, and the default one's settings."""

    settings: EmbeddingSettings
    default: str  # the backend the default settings run on
    embedders: dict[str, Embedder]
    onnx_dir: Path


def size_rows(
    directory: Path, size: int, backends: Backends, rng: random.Random, count: int, dim: int
) -> list[tuple[str, str]]:
    """Search latency (every backend, interleaved; hybrid), first search, disk and RAM at one store size."""
    settings, default = backends.settings, backends.default
    disk = fill_store(directory, settings, size, dim, rng)
    # a fresh store = a server process right after start (model already loaded in this process)
    before = rss_mb()
    store = open_store(directory, settings)
    # English questions plus two corpus words, so BM25 (hybrid) has real matches to rank
    queries = [f"{english(rng)} {sentence(rng, 2)}" for _ in range(count + 1)]
    started = time.perf_counter()
    time_searches(store, queries[:1])
    first = (time.perf_counter() - started) * 1000
    index_mb = rss_mb() - before
    hybrid = time_searches(store, [q + " hybrid" for q in queries[1:51]], "hybrid")
    cached_query = time_searches(store, [queries[1]] * 50)  # query vector cached: retrieval alone
    stores = backend_stores(directory, store.model_key, backends.embedders, backends.onnx_dir)
    for each_store in stores.values():
        time_searches(each_store, queries[:1])  # loads the vector cache
    searches = interleaved(
        {name: (lambda query, s=each_store: time_searches(s, [query])) for name, each_store in stores.items()},
        queries[1:],
    )
    label = f"{size:,} memories"
    rows = [
        (f"[{backend}] search p50 / p95, {label} (vector)", p50_p95(wall, cpu))
        for backend, (wall, cpu) in searches.items()
    ]
    for each_store in stores.values():
        each_store.close()
    rows.append((f"search p50 / p95, {label} (hybrid, {default})", p50_p95(hybrid)))
    rows.append((f"  retrieval only (cached query vector), {label}", f"{statistics.median(cached_query):.1f} ms"))
    rows.append((f"first search after start, {label}", f"{first:.0f} ms (loads the vector cache)"))
    rows.append((f"disk per 1,000 memories ({label})", f"{disk / size * 1000:.2f} MB"))
    rows.append((f"RAM per 1,000 memories ({label}, vector cache)", f"{max(index_mb, 0) / size * 1000:.2f} MB"))
    store.close()
    return rows


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes")
    parser.add_argument("--queries", type=int, default=200, help="searches per size and backend")
    parser.add_argument("--adds", type=int, default=300, help="memory adds to time")
    parser.add_argument("--stdio", type=int, default=100, help="calls timed through a real server (0: skip)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="embedding backends to compare")
    parser.add_argument("--rounds", type=int, default=3, help="cold-process loads per backend (median)")
    parser.add_argument("--onnx-dir", type=Path, help="ONNX export cache (default: a fresh temporary directory)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)  # internal: one cold load (see probe_load)
    return parser.parse_args()


def main() -> int:
    args = arguments()
    if args.probe:
        return probe_load(args.probe, args.onnx_dir)
    sizes = [int(size) for size in args.sizes.split(",")]
    backends = [backend.strip() for backend in args.backends.split(",") if backend.strip()]
    rng = random.Random(42)
    rows: list[tuple[str, str]] = []

    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        root = Path(tmp)
        onnx_dir = args.onnx_dir or root / "models"
        os.environ["MCP_SECTIONS_MEMORY_EMBEDDING_ONNX_DIR"] = str(onnx_dir)  # the stdio server reuses the exports
        rows += cold_loads(backends, onnx_dir, args.rounds)
        print("done: cold loads", file=sys.stderr)

        # every backend in this process (1 thread each), so that latencies are measured side by side
        settings = EmbeddingSettings(embedding_onnx_dir=str(onnx_dir))  # the default backend
        embedders = {backend: get_embedder(backend_settings(backend, onnx_dir)) for backend in backends}
        for backend, each in embedders.items():
            if not each.load():
                print(f"{backend}: embedding model unavailable: {each.error}", file=sys.stderr)
                return 1
        embedder = get_embedder(settings)
        embedder.load()
        default = embedder.active_backend or settings.embedding_backend

        rows += encoding_rows(embedders, rng, args.queries)
        rows += add_rows(root / "adds", settings, rng, args.adds, default)
        dim = embedder.dimension or 384
        compared = Backends(settings, default, embedders, onnx_dir)
        for size in sizes:
            rows += size_rows(root / f"n{size}", size, compared, rng, args.queries, dim)
            print(f"done: {size:,} memories", file=sys.stderr)

        if args.stdio:
            import anyio

            with tempfile.TemporaryDirectory(prefix="bench-memory-stdio-") as stdio_tmp:
                rows += anyio.run(over_stdio, Path(stdio_tmp) / "data", args.stdio, rng)

    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  value")
    print(f"{'-' * width}  {'-' * 30}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
