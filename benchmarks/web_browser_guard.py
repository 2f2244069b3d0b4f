"""What guarding the browser costs: a script-rendered page through web_ops' proxy, beside the bare browser.

Run: python -m benchmarks.web_browser_guard [--runs 30]

Serves a small client-rendered app on 127.0.0.1 from a process of its own (HTML, a stylesheet, a script that
builds the article and fetches JSON, three images) and renders it, runs interleaved in a shuffled order each
round, three ways:

- direct browser: a context that bypasses every proxy for the app's address: no proxy, no guard (the floor);
- route() interception: the same, with every request answered through `context.route` by the guarded HTTP
  client (how web_ops guarded its browser before the proxy; kept here as the reference);
- guarding proxy: `Browser.render` itself, each render through its own `EgressProxy`.

All three run in the one Chromium web_ops launched, so no way gets a fresher or busier browser than another.

Each render is what `Browser.render` does: a fresh context and page, `goto` until `load`, the HTML and title,
the context closed. Prints p50 / p95 per way and the median of the per-round ratios to the direct browser (paired
rounds cancel the drift of a shared machine's load), with the verdict against the goal "the proxy adds at most
10% to a script-rendered page fetch". Needs Chromium.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from benchmarks.harness import median, percentile, print_table
from mcp_sections.servers.web_ops.browser import SCREENSHOT_VIEWPORT, Browser
from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
from mcp_sections.shared.net.fetch import GuardedHttp

GOAL = 1.10  # the guarded render may take at most 10% more than the direct one
USER_AGENT = "mcp-sections-bench"
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")
APP = {
    "/": (
        "text/html",
        b"<!doctype html><html><head><meta charset=utf-8><title>Harbour</title>"
        b"<link rel=stylesheet href=/app.css><script src=/app.js defer></script></head>"
        b"<body><div id=root>Loading</div><img src=/a.gif><img src=/b.gif><img src=/c.gif></body></html>",
    ),
    "/app.css": ("text/css", b"body { font: 16px serif; margin: 2em } article { max-width: 40em }"),
    "/app.js": (
        "text/javascript",
        b"const text = 'The harbour master counts the boats and writes each name in the ledger. '.repeat(30);"
        b"document.getElementById('root').innerHTML = '<article><h1>Harbour</h1><p>' + text + '</p></article>';"
        b"fetch('/tides.json').then(r => r.json()).then(t => document.title = 'Harbour ' + t.high);",
    ),
    "/tides.json": ("application/json", b'{"high": "06:12", "low": "12:30"}'),
    **{f"/{name}.gif": ("image/gif", GIF) for name in "abc"},
}


def _handler() -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            content_type, body = APP.get(self.path, ("text/plain", b"not found"))
            self.send_response(200 if self.path in APP else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            # Headers and body in one write: two small writes meet the client's delayed ACK (a 40 ms stall).
            self._headers_buffer.append(b"\r\n" + body)  # type: ignore[attr-defined]
            self.flush_headers()

    return Handler


def _serve_app(ports: Any) -> None:
    """The app's server, in a process of its own (as a real site is: not competing with the proxy for the GIL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler())
    server.daemon_threads = True
    ports.put(server.server_address[1])
    server.serve_forever()


@contextlib.contextmanager
def _serving() -> Iterator[int]:
    spawn = multiprocessing.get_context("spawn")
    ports = spawn.Queue()
    process = spawn.Process(target=_serve_app, args=(ports,), daemon=True)
    process.start()
    try:
        yield ports.get(timeout=30)
    finally:
        process.terminate()
        process.join()


async def _bare_render(chromium: Any, url: str, http: GuardedHttp | None) -> str:
    """A render as `Browser.render` does it, connecting directly (the context bypasses its proxy for the app's
    address); through `route()` when `http` is given."""
    context = await chromium.new_context(
        proxy={"server": "http://127.0.0.1:1", "bypass": "127.0.0.1"},
        service_workers="block",
        user_agent=USER_AGENT,
        viewport=SCREENSHOT_VIEWPORT,
        accept_downloads=False,
    )
    try:
        if http is not None:
            await context.route("**/*", _route_through(http))
        page = await context.new_page()
        await page.goto(url, wait_until="load", timeout=30_000)
        html: str = await page.content()
        await page.title()
        return html
    finally:
        await context.close()


def _route_through(http: GuardedHttp) -> Callable[[Any], Awaitable[None]]:
    async def route(request_route: Any) -> None:
        request = request_route.request
        answer = await http.request(
            request.method, request.url, headers=await request.all_headers(), content=request.post_data_buffer
        )
        headers = {k: v for k, v in answer.headers.items() if k not in ("content-encoding", "content-length")}
        await request_route.fulfill(status=answer.status, headers=headers, body=answer.body)

    return route


async def compare(runs: int) -> None:
    with _serving() as port:
        url = f"http://127.0.0.1:{port}/"
        http = GuardedHttp(UrlGuard(AllowList.parse([f"127.0.0.1:{port}"])), user_agent=USER_AGENT)
        guarded = Browser(http)
        try:
            chromium = await guarded.chromium()
            ways: dict[str, Callable[[], Awaitable[str]]] = {
                "direct browser (no proxy, no guard)": lambda: _bare_render(chromium, url, None),
                "route() interception (before)": lambda: _bare_render(chromium, url, http),
                "guarding proxy (Browser.render)": lambda: _guarded_render(guarded, url),
            }
            samples: dict[str, list[float]] = {name: [] for name in ways}
            for round_ in range(runs + 3):  # three warm-up rounds: the browser's first pages
                order = list(ways)
                random.shuffle(order)
                for name in order:
                    started = time.perf_counter()
                    html = await ways[name]()
                    elapsed = (time.perf_counter() - started) * 1000
                    if "harbour master counts the boats" not in html:
                        raise RuntimeError(f"{name}: the page was not rendered")
                    if round_ >= 3:
                        samples[name].append(elapsed)
        finally:
            await guarded.close()
            await http.aclose()
    _report(samples, runs)


async def _guarded_render(browser: Browser, url: str) -> str:
    rendered = await browser.render(url, wait_for="load", timeout_seconds=30)
    if rendered.blocked:
        raise RuntimeError(f"the guarded render refused requests: {rendered.blocked}")
    return rendered.html


def _report(samples: dict[str, list[float]], runs: int) -> None:
    direct = next(iter(samples.values()))
    ratios = {
        name: median([value / floor for value, floor in zip(values, direct, strict=True)])
        for name, values in samples.items()
    }
    rows = [
        (name, f"{median(values):.0f}", f"{percentile(values, 0.95):.0f}", f"{ratios[name]:.2f}x")
        for name, values in samples.items()
    ]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Script-rendered page in Chromium, {runs} rounds, each way once per round in a shuffled order")
    print(f"(ms; 'vs direct' = median of the per-round ratios; load average now: {load} on {os.cpu_count()} CPUs)")
    print_table(("way", "p50 ms", "p95 ms", "vs direct"), rows)
    ratio = ratios["guarding proxy (Browser.render)"]
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"guarding proxy vs direct browser: {ratio:.2f}x -> {verdict} the goal (<= {GOAL:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    anyio.run(compare, parser.parse_args().runs)


if __name__ == "__main__":
    main()
