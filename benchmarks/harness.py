"""Timing helpers shared by the benchmarks: stdio servers, percentiles, a plain-text table."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent


def compile_project() -> None:
    """Byte-compile `shared/` and `servers/` as an install would, so that start-up timings never include
    compiling modules from source (a checkout run with PYTHONDONTWRITEBYTECODE=1 writes no .pyc files)."""
    import compileall

    for package in ("shared", "servers"):
        compileall.compile_dir(ROOT / package, quiet=1)


def cli(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "mcp-sections"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "mcp_sections.servers", *args]


def parameters(argv: Sequence[str], env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=list(argv[1:]), env={**os.environ, **(env or {})})


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


async def cold_start_ms(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(spawn → initialize answered, spawn → tools/list answered) in milliseconds."""
    started = time.perf_counter()
    async with Client(parameters(argv, env), mode="legacy") as client:
        initialized = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter()
    return (initialized - started) * 1000, (listed - started) * 1000


async def call_latencies_ms(
    argv: Sequence[str], calls: int, call: Callable[[Client], Awaitable[Any]], env: dict[str, str] | None = None
) -> list[float]:
    samples = []
    async with Client(parameters(argv, env), mode="legacy") as client:
        await client.list_tools()
        for _ in range(10):  # warm-up (lazy state, worker processes)
            await call(client)
        for _ in range(calls):
            started = time.perf_counter()
            await call(client)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def status_kb(pid: int, name: str) -> int | None:
    """A figure of `/proc/<pid>/status` in KiB (`name` is its line's head: `VmHWM:`, `VmRSS:`); None if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers], *[[f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for index, row in enumerate(cells):
        print(
            "  ".join(
                cell.rjust(width) if i else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if index == 0:
            print("  ".join("-" * width for width in widths))
