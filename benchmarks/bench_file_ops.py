"""file_ops beside the reference `@modelcontextprotocol/server-filesystem`, on the same generated tree.

Run: python -m benchmarks.bench_file_ops [--files 50000] [--calls 200] [--starts 5]

Generates a tree of `--files` files (plus one directory of 10,000 entries), installs the reference server
with npm into a temporary directory, and prints one table: cold start (spawn → tools/list answered),
read_file p50/p95, listing the 10,000-entry directory (file_ops in
two pages of 5,000, following the cursor), glob `**/*.py`, and a literal content search (the
reference server has no content search: `grep -rlF` and, if installed, `rg -lF` are shown instead). A third
column, "floor", runs benchmarks/sdk_file_server.py: the least a Python server on the `mcp` SDK can do (cold
start, read_file and listing only).
Needs node and npm on PATH and access to the npm registry. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.harness import cli, cold_start_ms, median, parameters, percentile

NEEDLE = "NEEDLE_7f3a91"
REFERENCE_PACKAGE = "@modelcontextprotocol/server-filesystem"
FLAT_ENTRIES = 10_000


def generate_tree(root: Path, files: int, seed: int = 7) -> list[str]:
    """`files` small source files over nested packages, plus `flat/` with FLAT_ENTRIES entries."""
    rng = random.Random(seed)
    extensions = [".py", ".py", ".js", ".ts", ".md", ".txt", ".json"]
    body = "".join(f"line {n}: the quick brown fox jumps over the lazy dog {n * 7}\n" for n in range(8))
    created: list[str] = []
    flat = root / "flat"
    flat.mkdir(parents=True)
    for index in range(FLAT_ENTRIES):
        (flat / f"entry_{index:05d}.txt").write_text(body)
        created.append(f"flat/entry_{index:05d}.txt")
    remaining = max(files - FLAT_ENTRIES, 0)
    per_dir = 50
    for index in range(remaining):
        package = index // per_dir
        directory = root / "src" / f"group_{package // 20:03d}" / f"pkg_{package:05d}"
        if index % per_dir == 0:
            directory.mkdir(parents=True, exist_ok=True)
        name = f"module_{index % per_dir:02d}{rng.choice(extensions)}"
        text = body + (f"# marker {NEEDLE}\n" if index % 997 == 0 else "")
        (directory / name).write_text(text)
        created.append(str((directory / name).relative_to(root)))
    return created


def install_reference(directory: Path) -> list[str]:
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        raise SystemExit("node and npm are needed to run the reference server")
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(directory), REFERENCE_PACKAGE],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=600,
    )
    entry = directory / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    return [node, str(entry)]


async def _no_validation(name: str, result: Any) -> None:
    return None


async def timed_calls(
    argv: list[str],
    env: dict[str, str],
    runs: int,
    make_call: Callable[[Client, int], Awaitable[Any]],
    validate: bool = True,
) -> list[float]:
    samples = []
    async with Client(parameters(argv, env), mode="legacy", read_timeout_seconds=600) as client:
        await client.list_tools()
        if not validate:  # the Python client checks structured results with jsonschema: slow on 10,000 entries
            client.session.validate_tool_result = _no_validation  # type: ignore[method-assign]
        for index in range(min(runs, 5)):  # warm-up
            await make_call(client, index)
        for index in range(runs):
            started = time.perf_counter()
            result = await make_call(client, index)
            samples.append((time.perf_counter() - started) * 1000)
            if getattr(result, "is_error", False):
                raise RuntimeError(f"{argv[0]}: {result.content[0].text[:300]}")
    return samples


def shell_ms(argv: list[str], runs: int = 3) -> float | None:
    if shutil.which(argv[0]) is None:
        return None
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append((time.perf_counter() - started) * 1000)
    return median(samples)


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


Call = Callable[[Client, int], Awaitable[Any]]


def workloads(root: Path, sample: list[str]) -> dict[str, dict[str, Call]]:
    """The calls each server answers, by workload and subject (the floor server only reads and lists)."""

    def read_ours(client: Client, i: int) -> Awaitable[Any]:
        return client.call_tool("read_file", {"path": sample[i % len(sample)]})

    def read_reference(client: Client, i: int) -> Awaitable[Any]:
        return client.call_tool("read_text_file", {"path": str(root / sample[i % len(sample)])})

    async def list_all_pages(client: Client, _: int) -> Any:
        """file_ops pages listings (at most 5,000 entries a call): every page, as a client would."""
        arguments: dict[str, Any] = {"path": "flat", "limit": 5_000}
        while True:
            result = await client.call_tool("list_directory", arguments)
            cursor = (result.structured_content or {}).get("next_cursor")
            if result.is_error or not cursor:
                return result
            arguments = {**arguments, "cursor": cursor}

    def list_reference(client: Client, i: int) -> Awaitable[Any]:
        return client.call_tool("list_directory", {"path": str(root / "flat")})

    return {
        "read": {"ours": read_ours, "reference": read_reference, "floor": read_reference},
        "list": {"ours": list_all_pages, "reference": list_reference, "floor": list_reference},
        "glob": {
            "ours": lambda client, i: client.call_tool("glob_files", {"pattern": "**/*.py", "max_results": 20_000}),
            "reference": lambda client, i: client.call_tool("search_files", {"path": str(root), "pattern": "**/*.py"}),
        },
        "search": {
            "ours": lambda client, i: client.call_tool("search_files", {"pattern": NEEDLE, "max_results": 1000}),
        },
    }


async def measure(
    subjects: tuple[tuple[str, list[str]], ...],
    env: dict[str, str],
    calls: int,
    starts: int,
    work: dict[str, dict[str, Call]],
) -> dict[str, dict[str, float | None]]:
    """Metric by metric, every server back to back: a busy machine skews all sides alike."""
    results: dict[str, dict[str, float | None]] = {"ours": {}, "reference": {}, "floor": {}}
    for label, argv in subjects:
        print(f"cold start: {label} ...", file=sys.stderr)
        cold = [(await cold_start_ms(argv, env))[1] for _ in range(starts)]
        results[label]["cold start (ms, median)"] = median(cold)
    for label, argv in subjects:
        print(f"read_file: {label} ...", file=sys.stderr)
        read = await timed_calls(argv, env, calls, work["read"][label])
        results[label]["read_file p50 (ms)"] = percentile(read, 0.5)
        results[label]["read_file p95 (ms)"] = percentile(read, 0.95)
    for label, argv in subjects:
        print(f"listing: {label} ...", file=sys.stderr)
        listing = work["list"][label]
        results[label]["list 10,000 entries, all pages (ms)"] = median(await timed_calls(argv, env, 3, listing))
        results[label]["  same, no client schema check (ms)"] = median(
            await timed_calls(argv, env, 3, listing, validate=False)
        )
    subjects = subjects[:2]  # the floor server only reads and lists
    for label, argv in subjects:
        print(f"glob: {label} ...", file=sys.stderr)
        results[label]["glob **/*.py (ms)"] = median(await timed_calls(argv, env, 3, work["glob"][label]))
    for label, argv in subjects:
        search = work["search"].get(label)
        results[label]["content search, literal (ms)"] = (
            median(await timed_calls(argv, env, 3, search)) if search is not None else None
        )
    return results


def print_table(results: dict[str, dict[str, float | None]], root: Path, files: int, calls: int) -> None:
    """The table, with grep and ripgrep's content search below it."""
    grep = shell_ms(["grep", "-rlF", NEEDLE, str(root)])
    ripgrep = shell_ms(["rg", "-lF", NEEDLE, str(root)])
    rows = [
        (
            metric,
            fmt(results["ours"][metric]),
            fmt(results["reference"].get(metric)),
            fmt(results["floor"].get(metric)),
        )
        for metric in results["ours"]
    ]
    print()
    print(f"tree: {files:,} files ({FLAT_ENTRIES:,} in one directory); {calls} reads; {os.cpu_count()} CPUs")
    print("floor: benchmarks/sdk_file_server.py, a bare Python SDK server reading and listing with no checks at all")
    width = max(len(row[0]) for row in rows) + 2
    print(f"{'metric':<{width}} {'file_ops':>12} {'reference':>12} {'floor':>12}")
    for metric, mine, theirs, bare in rows:
        print(f"{metric:<{width}} {mine:>12} {theirs:>12} {bare:>12}")
    print(f"{'grep -rlF (ms)':<{width}} {fmt(grep):>12}")
    print(f"{'rg -lF (ms)':<{width}} {fmt(ripgrep):>12}")
    print("reference: no content-search tool (it only globs file names).")


async def main(files: int, calls: int, starts: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-file-ops-") as temp:
        base = Path(temp)
        root = base / "tree"
        print(f"generating {files:,} files ...", file=sys.stderr)
        started = time.perf_counter()
        created = generate_tree(root, files)
        print(f"  done in {time.perf_counter() - started:.1f}s; installing {REFERENCE_PACKAGE} ...", file=sys.stderr)
        reference = [*install_reference(base / "reference"), str(root)]
        config = base / "empty.toml"
        config.write_text("")
        env = {"MCP_SECTIONS_CONFIG": str(config), "MCP_SECTIONS_ROOTS": ""}
        ours = cli("serve", "file_ops", "--root", str(root))
        floor = [sys.executable, str(Path(__file__).resolve().parent / "sdk_file_server.py")]
        chooser = random.Random(3)  # one generator: a different file for each call, the same ones every run
        sample = [chooser.choice(created) for _ in range(calls)]
        subjects = (("ours", ours), ("reference", reference), ("floor", floor))
        results = await measure(subjects, env, calls, starts, workloads(root, sample))
        print_table(results, root, len(created), calls)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=5)
    arguments = parser.parse_args()
    anyio.run(main, arguments.files, arguments.calls, arguments.starts)
