"""What the OS sandbox adds to each command: shell_ops' process runner with bubblewrap vs without, same machine.

Run: python -m benchmarks.bench_sandbox [--runs 200]
Goal (issue #11): added latency ≤ 15 ms p50 for `true` and `git status`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.harness import median, percentile, print_table
from mcp_sections.servers.shell_ops.service import ShellOps
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings


async def timings(ops: ShellOps, argv: list[str], cwd: Path, runs: int) -> list[float]:
    samples = []
    for _ in range(runs + 5):
        started = time.perf_counter()
        result = await ops._run(argv, cwd, timeout=30, max_output=1 << 20)
        samples.append((time.perf_counter() - started) * 1000)
        assert result.exit_code == 0, result.stderr.text()
    return samples[5:]  # the first runs warm the page cache


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "a.txt").write_text("a\n", encoding="utf-8")
        confined = ShellOps(ShellOpsSettings.load(sandbox="auto"), [root])
        open_ = ShellOps(ShellOpsSettings.load(sandbox="off"), [root])
        rows = []
        for label, argv in (("true", ["/usr/bin/true"]), ("git status", ["/usr/bin/git", "status", "--porcelain"])):
            bare = await timings(open_, argv, root, runs)
            boxed = await timings(confined, argv, root, runs)
            added = median(boxed) - median(bare)
            rows.append(
                [label, median(bare), percentile(bare, 0.95), median(boxed), percentile(boxed, 0.95), added, "≤ 15.0"]
            )
        confined.close()
        open_.close()
    print(f"per command, {runs} runs each (ms); 'off' is the same runner without bubblewrap")
    print_table(["command", "off p50", "off p95", "sandbox p50", "sandbox p95", "added p50", "goal"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))
