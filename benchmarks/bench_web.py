"""web_ops on a local site, beside the reference `mcp-server-fetch` (PyPI) on the same static pages.

Run: python -m benchmarks.bench_web [--calls 30]

Serves the test site (tests/web_ops/site.py) on 127.0.0.1, starts web_ops over stdio (allowed to reach that
port only) and prints one table: a 10-page crawl at depth 2 (the seed's goal: 10 pages < 30 s; ours: < 3 s),
single-page fetch p50/p95 for a static and a script-rendered page (cache bypassed), the same static page through
`mcp-server-fetch` (installed with pip into a temporary venv), main-content extraction per page (in process, a
a 1 KB and a 140 KB page), and the section's peak RSS with its browser warm (server + Chromium processes).
Needs Chromium (Debian's `chromium`) and access to PyPI for the reference. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from benchmarks.harness import cli, median, parameters, percentile
from tests.web_ops.site import ARTICLE, Site, running_site

REFERENCE = "mcp-server-fetch"


def _reference_python() -> str | None:
    """A venv with mcp-server-fetch (its own `mcp`, kept away from ours)."""
    venv = Path(tempfile.gettempdir()) / "mcp-sections-bench-fetch"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", REFERENCE], capture_output=True, text=True, timeout=600
        )
        if installed.returncode != 0:
            print(f"{REFERENCE} could not be installed: {installed.stderr.strip()[-300:]}", file=sys.stderr)
            return None
    return str(python)


async def _timed(client: Client, calls: int, tool: str, arguments: dict[str, Any]) -> list[float]:
    samples = []
    for index in range(calls + 3):
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        elapsed = (time.perf_counter() - started) * 1000
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content[0].text if result.content else result}")
        if index >= 3:  # warm-up: lazy imports, the browser's first launch
            samples.append(elapsed)
    return samples


def _tree_rss_kb(marker: str) -> tuple[int, int]:
    """(peak RSS of the server process, current RSS of it and all its descendants), in KiB."""
    pids = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    parents: dict[int, int] = {}
    server = None
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        parents[pid] = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        if marker in cmdline and "serve web_ops" in cmdline:
            server = pid
    if server is None:
        return 0, 0
    tree = {server}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                changed = True

    def field(pid: int, name: str) -> int:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(name):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    return field(server, "VmHWM:"), sum(field(pid, "VmRSS:") for pid in tree)


def _extraction_ms(repeat: int = 20) -> tuple[float, float]:
    from mcp_sections.servers.web_ops.extraction import extract_html

    small = f"<html><head><title>t</title></head><body><nav>menu</nav><article><p>{ARTICLE}</p></article></body></html>"
    big = "<html><body>" + "".join(f"<section><h2>Part {n}</h2><p>{ARTICLE}</p></section>" for n in range(120))
    big += "</body></html>"
    results = []
    for html in (small, big):
        extract_html(html, "https://example.org/")
        started = time.perf_counter()
        for _ in range(repeat):
            extract_html(html, "https://example.org/")
        results.append((time.perf_counter() - started) * 1000 / repeat)
    print(f"(extraction pages: {len(small) // 1024} KB and {len(big) // 1024} KB)")
    return results[0], results[1]


async def main(calls: int) -> None:
    rows: list[tuple[str, str, str, str]] = []
    with running_site() as site, tempfile.TemporaryDirectory() as data:
        env = {"MCP_SECTIONS_WEB_OPS_ALLOW": f"127.0.0.1:{site.port}", "MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false"}
        argv = cli("serve", "web_ops", "--data-dir", data)
        async with Client(parameters(argv, env), mode="legacy") as web:
            await web.list_tools()
            started = time.perf_counter()
            crawl = await web.call_tool(
                "fetch_web_page", {"url": site.url("/crawl/0.html"), "depth": 2, "max_pages": 10, "force": True}
            )
            crawl_s = time.perf_counter() - started
            pages = (crawl.structured_content or {}).get("total_pages_fetched")
            rows.append(("crawl, 10-page site at depth 2", f"{crawl_s:.2f} s ({pages} pages)", "< 30 s (seed)", ""))
            static = await _timed(web, calls, "fetch_web_page", {"url": site.url("/static.html"), "force": True})
            script = await _timed(web, calls, "fetch_web_page", {"url": site.url("/js.html"), "force": True})
            peak_kb, tree_kb = _tree_rss_kb(data)
        reference = await _reference_static(site, calls)
        rows.append(("static page p50 / p95 (HTTP path)", _pp(static), _pp(reference) if reference else "n/a", ""))
        rows.append(("script page p50 / p95 (Chromium)", _pp(script), "cannot run scripts", ""))
    small_ms, big_ms = _extraction_ms()
    rows.append(("extraction per page (1 KB / 140 KB)", f"{small_ms:.1f} / {big_ms:.1f} ms", "", ""))
    rows.append(
        ("peak RSS: server / server + Chromium", f"{peak_kb / 1024:.0f} / {tree_kb / 1024:.0f} MiB", "", "warm browser")
    )
    width = max(len(row[0]) for row in rows)
    print(f"{'measure':<{width}}  {'web_ops':<26}{REFERENCE:<22}")
    for name, ours, theirs, note in rows:
        print(f"{name:<{width}}  {ours:<26}{theirs:<22}{note}")
    subprocess.run([sys.executable, "-m", "benchmarks.web_browser_guard", "--runs", str(calls)], check=True)


async def _reference_static(site: Site, calls: int) -> list[float] | None:
    python = _reference_python()
    if python is None:
        return None
    argv = [python, "-m", "mcp_server_fetch", "--ignore-robots-txt", "--allow-private-ips"]
    with open(os.devnull, "w") as quiet:
        transport = stdio_client(parameters(argv), errlog=quiet)
        async with Client(transport, mode="legacy") as reference:  # type: ignore[arg-type]
            await reference.list_tools()
            return await _timed(reference, calls, "fetch", {"url": site.url("/static.html")})


def _pp(samples: list[float]) -> str:
    return f"{median(samples):.0f} / {percentile(samples, 0.95):.0f} ms"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=30)
    anyio.run(main, parser.parse_args().calls)
