"""Cold start and tools/call round trip of calculator and todo, beside a bare one-tool SDK server.

Run: python -m benchmarks.bench_startup [--starts 5] [--calls 300]
Targets (issue #2): cold start ≤ 1.3× the bare server; call round trip ≤ 1.5× the bare server.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import anyio

from benchmarks.harness import ROOT, call_latencies_ms, cli, cold_start_ms, median, percentile, print_table

QUIET = {"MCP_SECTIONS_LOG_LEVEL": "CRITICAL"}


def _subjects(data_dir: str) -> list[tuple[str, list[str], str, dict]]:
    return [
        ("bare SDK server", [sys.executable, str(ROOT / "benchmarks" / "bare_server.py")], "add", {"a": 1, "b": 2}),
        ("calculator", cli("serve", "calculator"), "calculator_binary", {"operation": "add", "a": 1, "b": 2}),
        ("todo", cli("serve", "todo", "--data-dir", data_dir), "todo_list", {"limit": 10}),
    ]


async def main(starts: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        subjects = _subjects(data_dir)
        inits: dict[str, list[float]] = {label: [] for label, *_ in subjects}
        lists: dict[str, list[float]] = {label: [] for label, *_ in subjects}
        for _ in range(starts):  # round-robin, so machine noise hits every server alike
            for label, argv, _tool, _arguments in subjects:
                initialized, listed = await cold_start_ms(argv, QUIET)
                inits[label].append(initialized)
                lists[label].append(listed)
        rows, baseline = [], {}
        for label, argv, tool, arguments in subjects:

            async def call(client, tool=tool, arguments=arguments, label=label):
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    raise RuntimeError(f"{label}: {result.content[0].text}")

            samples = await call_latencies_ms(argv, calls, call, QUIET)
            cold, p50, p95 = median(lists[label]), median(samples), percentile(samples, 0.95)
            baseline = baseline or {"cold": cold, "p50": p50}
            ratio_cold, ratio_call = cold / baseline["cold"], p50 / baseline["p50"]
            rows.append([label, median(inits[label]), cold, f"{ratio_cold:.2f}x", p50, p95, f"{ratio_call:.2f}x"])
    print(f"cold start: median of {starts} spawns (round-robin); round trip: {calls} sequential calls (ms)")
    print_table(["server", "initialize", "tools/list", "vs bare", "call p50", "call p95", "vs bare"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    options = parser.parse_args()
    anyio.run(main, options.starts, options.calls)
