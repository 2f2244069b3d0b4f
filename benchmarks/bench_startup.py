"""What a user waits for: spawn → first tool result, per section and through the gateway, beside a bare SDK server.

Each subject is spawned, initialized, listed and sent one cheap tool call; the clock runs from the spawn to
that call's result. Subjects are measured round-robin (machine noise hits all alike), median of `--starts`.
The bare SDK server (`benchmarks/bare_server.py`: `MCPServer` with one tool) is the floor any server on the
mandated SDK pays; the goal is ≤ 1.1x of it for each section. Through the gateway the first call also starts
the section's own process behind it, so its floor is two bare starts in a row (measured the same way).

`mcp-sections` pauses the garbage collector while it builds a server (servers/startup.py), which alone saves
~50 ms. So that this gain does not hide what our own code costs, the same bare server started with the same
pause is measured too, and every subject is also shown against it ("vs same start", information).

Last, issue #10's other goal in the same run: the gateway's hop against the bare SDK forwarder floor
(`benchmarks/bench_gateway.py`'s hop measurement: ≤ 1.1x, p50 and p95).

Run: python -m benchmarks.bench_startup [--starts 5] [--calls 300] [--hop-calls 1500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from typing import Any

import anyio
from mcp import Client

from benchmarks.bench_gateway import floor_verdicts, hop_cost
from benchmarks.harness import (
    ROOT,
    call_latencies_ms,
    cli,
    compile_project,
    median,
    parameters,
    percentile,
    print_table,
)

QUIET = {"MCP_SECTIONS_LOG_LEVEL": "CRITICAL", "MCP_SECTIONS_WARM_UP": "0"}
BARE = [sys.executable, str(ROOT / "benchmarks" / "bare_server.py")]
BARE_PAUSED = [*BARE, "--paused-gc"]
GOAL = 1.1  # issue #10: spawn → first tool result ≤ 1.1x the bare SDK server


def _subjects(data_dir: str, root: str) -> list[tuple[str, list[str], str, dict[str, Any]]]:
    gateway = cli("gateway", "--data-dir", data_dir, "--root", root)

    def through_gateway(section: str, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "call_section_tool", {"section": section, "tool": tool, "arguments": arguments}

    return [
        ("bare SDK server (floor)", BARE, "add", {"a": 1, "b": 2}),
        ("bare SDK server, gc paused", BARE_PAUSED, "add", {"a": 1, "b": 2}),
        ("calculator", cli("serve", "calculator"), "calculator_binary", {"operation": "add", "a": 1, "b": 2}),
        ("todo", cli("serve", "todo", "--data-dir", data_dir), "todo_list", {"limit": 1}),
        ("file_ops", cli("serve", "file_ops", "--root", root), "file_exists", {"path": "."}),
        ("shell_ops", cli("serve", "shell_ops", "--root", root), "list_safe_commands", {}),
        ("memory", cli("serve", "memory", "--data-dir", data_dir), "memory_list", {"limit": 1}),
        ("rag_ops", cli("serve", "rag_ops", "--data-dir", data_dir, "--root", root), "list_projects", {}),
        ("orchestration", cli("serve", "orchestration", "--data-dir", data_dir), "list_agents", {}),
        ("media_ops", cli("serve", "media_ops", "--root", root), "list_images", {"directory": "."}),
        ("gateway (own tool)", gateway, "list_tool_sections", {}),
        ("gateway → calculator", gateway, *through_gateway("calculator", "calculator_constant", {"name": "pi"})),
        ("gateway → todo", gateway, *through_gateway("todo", "todo_list", {"limit": 1})),
    ]


async def first_result_ms(argv: list[str], tool: str, arguments: dict[str, Any]) -> float:
    """Spawn → initialize → tools/list → one call's result, in milliseconds."""
    started = time.perf_counter()
    async with Client(parameters(argv, QUIET), mode="legacy") as client:
        await client.list_tools()
        result = await client.call_tool(tool, arguments)
        done = time.perf_counter()
    if result.is_error:
        raise RuntimeError(f"{argv} {tool}: {result.content[0].text if result.content else result}")  # type: ignore[union-attr]
    return (done - started) * 1000


async def main(starts: int, calls: int, hop_calls: int) -> None:
    compile_project()
    with tempfile.TemporaryDirectory() as data_dir, tempfile.TemporaryDirectory() as root:
        subjects = _subjects(data_dir, root)
        firsts: dict[str, list[float]] = {label: [] for label, *_ in subjects}
        for _ in range(starts):
            for label, argv, tool, arguments in subjects:
                firsts[label].append(await first_result_ms(argv, tool, arguments))
        floor, same_start = median(firsts[subjects[0][0]]), median(firsts[subjects[1][0]])
        rows = []
        for label, *_ in subjects:
            first = median(firsts[label])
            starts_behind = 2 if label.startswith("gateway →") else 1
            vs_floor, vs_same_start = (first / (starts_behind * reference) for reference in (floor, same_start))
            if label.startswith("bare"):
                verdict = "-"
            elif label == "gateway (own tool)":
                verdict = "(info)"
            else:
                verdict = "PASS" if vs_floor <= GOAL else "FAIL"
            rows.append([label, first, f"{vs_floor:.2f}x", f"{vs_same_start:.2f}x", verdict])
        print(f"spawn → first tool result: median of {starts} spawns, round-robin (ms)")
        print("(through the gateway the floor is two bare starts: the gateway's and the section's behind it;")
        print(" the gateway's own first tool, list_tool_sections, also reads every section's declaration;")
        print(f" goal: vs floor ≤ {GOAL:.2f}x; 'vs same start' (information): vs the floor with the same paused GC)")
        print_table(["subject", "first result", "vs floor", "vs same start", f"≤ {GOAL:.2f}x"], rows)

        call_rows = []
        warm = ("bare SDK server (floor)", "calculator", "gateway (own tool)")
        for label, argv, tool, arguments in (subject for subject in subjects if subject[0] in warm):

            async def call(client: Client, tool: str = tool, arguments: dict[str, Any] = arguments) -> None:
                await client.call_tool(tool, arguments)

            samples = await call_latencies_ms(argv, calls, call, QUIET)
            call_rows.append([label, median(samples), percentile(samples, 0.95)])
        print(f"\nwarm call round trip: {calls} sequential calls (ms)")
        print_table(["subject", "p50", "p95"], call_rows)

        stats = await hop_cost(data_dir, hop_calls)
        print("\nTarget: the gateway hop vs the bare SDK forwarder floor")
        print_table(["target", "measured", "goal", "result"], floor_verdicts(stats))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--hop-calls", type=int, default=1500, help="timed hop calls per path (default 1500)")
    options = parser.parse_args()
    anyio.run(main, options.starts, options.calls, options.hop_calls)
