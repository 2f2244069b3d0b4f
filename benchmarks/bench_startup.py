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


def _subjects(data_dir: str) -> list[tuple[str, list[str], str, dict]]:
    return [
        ("bare SDK server", [sys.executable, str(ROOT / "benchmarks" / "bare_server.py")], "add", {"a": 1, "b": 2}),
        ("calculator", cli("serve", "calculator"), "calculator_binary", {"operation": "add", "a": 1, "b": 2}),
        ("todo", cli("serve", "todo", "--data-dir", data_dir), "todo_list", {"limit": 10}),
    ]


async def main(starts: int, calls: int) -> None:
    rows = []
    baseline: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as data_dir:
        for label, argv, tool, arguments in _subjects(data_dir):
            inits, lists = [], []
            for _ in range(starts):
                initialized, listed = await cold_start_ms(argv)
                inits.append(initialized)
                lists.append(listed)

            async def call(client, tool=tool, arguments=arguments, label=label):
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    raise RuntimeError(f"{label}: {result.content[0].text}")

            samples = await call_latencies_ms(argv, calls, call)
            cold, p50, p95 = median(lists), median(samples), percentile(samples, 0.95)
            if not baseline:
                baseline = {"cold": cold, "p50": p50}
            rows.append(
                [
                    label,
                    median(inits),
                    cold,
                    f"{cold / baseline['cold']:.2f}x",
                    p50,
                    p95,
                    f"{p50 / baseline['p50']:.2f}x",
                ]
            )
    print(f"cold start: median of {starts} spawns; round trip: {calls} sequential calls after 10 warm-up calls (ms)")
    print_table(["server", "initialize", "tools/list", "vs bare", "call p50", "call p95", "vs bare"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    options = parser.parse_args()
    anyio.run(main, options.starts, options.calls)
