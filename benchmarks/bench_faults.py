"""Faults under load: sections killed while a gateway serves 8 callers, and what the callers saw (issue #44).

Run: python -m benchmarks.bench_faults [--callers 8] [--kills 10] [--in-a-row 5] [--sections calculator,todo]

A real gateway (`mcp-sections gateway` over stdio, default restart settings, an empty config) serves `--callers`
callers that call `call_section_tool` in a loop, as fast as they get answers, spread over `--sections` (calculator:
`calculator_binary`, read-only; todo: `todo_create`, a write; the two whose calls this benchmark knows). Meanwhile
the killer SIGKILLs the sections' processes `--kills` times, `--in-a-row` times on one section before the next: a
running process under load, then each replacement while it is still starting up (0.05-0.3 s after it appears,
before its handshake is done). Kills landing during start-up are what made restarts back off to 8 s and fail every
call meanwhile before. Calls go on for 3 s after the last kill.

Printed per section: calls, answered, coded errors (by code) and their share of the calls, latency p50/p99/max.
Goal: coded errors ≤ 2% of each section's calls. What cannot be avoided: a write in flight when its process is
killed fails with DEPENDENCY_ERROR saying it may have run (a read-only call is sent again to the new process).

The other half of the issue's fault benchmark, write latency of pipelined `write_file` calls with the undo journal
on, is file_ops' own command (kept apart: it needs no kills).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from benchmarks.harness import cli, parameters, percentile, print_table
from tests.processes import running_with

CALLS: dict[str, tuple[str, Any]] = {
    "calculator": ("calculator_binary", lambda caller, n: {"operation": "add", "a": caller, "b": n}),
    "todo": ("todo_create", lambda caller, n: {"workflow_id": "faults", "name": f"caller {caller} call {n}"}),
}
AFTER_LAST_KILL_SECONDS = 3.0


def outcome(result: types.CallToolResult) -> str:
    """ "OK", or the coded error of a failed call."""
    if not result.is_error:
        return "OK"
    data = result.structured_content or {}
    return str(data.get("error_code") or "UNCODED")


class Run:
    """What the callers saw, by section."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.stop = anyio.Event()


async def caller(client: Client, run: Run, index: int, section: str) -> None:
    tool, arguments = CALLS[section]
    n = 0
    while not run.stop.is_set():
        n += 1
        started = time.perf_counter()
        forwarded = {"section": section, "tool": tool, "arguments": arguments(index, n)}
        try:
            code = outcome(await client.call_tool("call_section_tool", forwarded))
        except MCPError as exc:
            code = f"MCP {exc.code}"
        run.latencies[section].append((time.perf_counter() - started) * 1000)
        run.outcomes[section][code] += 1


def processes(section: str, data_dir: str) -> list[int]:
    return running_with(f"serve {section} --data-dir {data_dir}")


async def killer(
    run: Run, sections: list[str], kills: int, in_a_row: int, data_dir: str, log: list[tuple[str, ...]]
) -> None:
    """Kill `in_a_row` times on one section, then on the next: a process under load, then its replacements during
    their start-up."""
    chance = random.Random(44)
    killed: list[int] = []
    for kill in range(kills):
        section = sections[(kill // in_a_row) % len(sections)]
        if kill % in_a_row == 0:
            await anyio.sleep(chance.uniform(1.0, 2.5))
            pids = processes(section, data_dir)
            when = "under load"
        else:
            with anyio.move_on_after(15):
                while not (pids := [pid for pid in processes(section, data_dir) if pid not in killed]):
                    await anyio.sleep(0.01)
            await anyio.sleep(chance.uniform(0.05, 0.3))
            when = "during start-up"
        killed = list(pids)
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                when += " (already gone)"
        log.append((str(kill + 1), section, when, ", ".join(map(str, killed)) or "none found"))
    await anyio.sleep(AFTER_LAST_KILL_SECONDS)
    run.stop.set()


async def main(callers: int, kills: int, in_a_row: int, sections: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as base:
        data_dir, root, config = f"{base}/data", Path(base, "root"), Path(base, "config.toml")
        root.mkdir()
        config.write_text("")
        argv = cli("gateway", "--config", str(config), "--data-dir", data_dir, "--root", str(root))
        async with Client(parameters(argv), mode="legacy", read_timeout_seconds=120) as client:
            warm = Run()
            for section in sections:  # every section started once before the clock runs
                tool, arguments = CALLS[section]
                forwarded = {"section": section, "tool": tool, "arguments": arguments(0, 0)}
                assert outcome(await client.call_tool("call_section_tool", forwarded)) == "OK", section
            run, log = warm, []
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for index in range(callers):
                    group.start_soon(caller, client, run, index, sections[index % len(sections)])
                group.start_soon(killer, run, sections, kills, in_a_row, data_dir, log)
            seconds = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"{callers} callers, {kills} kills over {seconds:.1f} s ({os.cpu_count()} cores, load {load:.1f})\n")
    print_table(["kill", "section", "when", "pids"], log)
    print()
    rows = []
    for section in sections:
        counts = run.outcomes[section]
        calls = sum(counts.values())
        errors = calls - counts["OK"]
        by_code = ", ".join(f"{code} {count}" for code, count in counts.most_common() if code != "OK") or "-"
        latencies = run.latencies[section]
        rows.append(
            (
                section,
                calls,
                counts["OK"],
                errors,
                f"{100 * errors / max(calls, 1):.2f}%",
                by_code,
                f"{percentile(latencies, 0.5):.0f}",
                f"{percentile(latencies, 0.99):.0f}",
                f"{max(latencies):.0f}",
            )
        )
    print_table(
        ["section", "calls", "answered", "coded errors", "share", "by code", "p50 ms", "p99 ms", "max ms"], rows
    )
    worst = max(float(row[4].rstrip("%")) for row in rows)
    print(
        f"\ngoal: coded errors ≤ 2% of each section's calls: {'met' if worst <= 2 else 'NOT met'} (worst {worst:.2f}%)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, default=8, help="callers calling at once (default 8)")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs of section processes (default 10)")
    parser.add_argument("--in-a-row", type=int, default=5, help="kills of one section in a row (default 5)")
    parser.add_argument("--sections", default="calculator,todo", help=f"sections called, of: {', '.join(CALLS)}")
    args = parser.parse_args()
    chosen = [section.strip() for section in args.sections.split(",") if section.strip()]
    unknown = [section for section in chosen if section not in CALLS]
    if unknown:
        parser.error(f"unsupported sections: {', '.join(unknown)} (supported: {', '.join(CALLS)})")
    anyio.run(main, args.callers, args.kills, max(1, args.in_a_row), chosen)
