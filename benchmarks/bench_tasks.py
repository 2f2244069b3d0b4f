"""Long work as an agent sees it: a 10-page crawl (what reaches its context) and a long ingest (with, without a task).

Run: python -m benchmarks.bench_tasks [--ingest DIR] [--timeout 60]

1. A crawl of 10 real documentation pages (`benchmarks/corpus`, served on 127.0.0.1 behind a small index page) with
   fetch_web_page(depth=1): the characters of the result's text content and of its structured content, beside the
   main text of the 10 pages, i.e. what every page inline would have pushed into the context (the peer), and
   what the previous shape gave (the start page up to max_chars, each other page cut at a tenth of it, the rest
   unreachable without fetching it again).
2. ingest_directory of DIR (default: the installed sympy, ~1,500 Python files) on rag_ops over stdio (text search
   only), by a 2026-07-28 client that waits `--timeout` seconds for a reply, as many clients do: once as a plain
   call, once as an MCP task (the tasks extension declared): when the client had an answer, what it saw meanwhile
   (progress in tasks/get), and how it ended.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from benchmarks.harness import cli, parameters, print_table
from tests.tasks_client import CreatedTask, Tasks, call_for_task, get_task

CRAWLED = (
    "nodejs/api/child_process.html",
    "nodejs/api/events.html",
    "nodejs/api/path.html",
    "nodejs/api/url.html",
    "nodejs/api/util.html",
    "rust/book/ch03-02-data-types.html",
    "rust/book/ch06-02-match.html",
    "rust/book/ch08-02-strings.html",
    "rust/book/ch09-02-recoverable-errors-with-result.html",
)
MAX_CHARS = 20_000  # fetch_web_page's default


async def crawl() -> list[tuple[str, Any]]:
    from benchmarks.corpus import pages
    from mcp_sections.servers.registry import load_section
    from mcp_sections.shared.serving.server import build_server
    from mcp_sections.shared.settings.config import Settings

    index = "".join(f"<li><a href='/{path}'>{path}</a></li>" for path in CRAWLED)
    bodies = {f"/{page.path}": page.html for page in pages() if page.path in CRAWLED}
    bodies["/index.html"] = f"<html><body><main><h1>Docs</h1><ul>{index}</ul></main></body></html>".encode()
    with _serving(bodies) as base, tempfile.TemporaryDirectory() as data:
        port = base.rstrip("/").rsplit(":", 1)[1]
        table = {"allow": [f"127.0.0.1:{port}"], "embeddings": False, "timeout_seconds": 20}
        section = load_section("web_ops")
        settings = Settings.load({"data_dir": data, "sections": {"web_ops": table}, "warm_up": False})
        server, _ = build_server(section, section.runtime(settings))
        arguments = {"url": f"{base}index.html", "depth": 1, "max_pages": 10, "render": "http"}
        async with Client(server) as client:
            result = await client.call_tool("fetch_web_page", arguments)
            assert not result.is_error and result.structured_content is not None, result.content
            structured = result.structured_content
            links = [block for block in result.content if isinstance(block, types.ResourceLink)]
            whole = {link.uri: (await client.read_resource(link.uri)).contents[0].text for link in links}  # type: ignore[union-attr]
    text_chars = sum(len(block.text) for block in result.content if isinstance(block, types.TextContent))
    children = structured["children"]
    page_chars = [structured["text_chars"], *(len(whole.get(c["text_uri"], c["text"] or "")) for c in children)]
    inline_before = min(page_chars[0], MAX_CHARS) + sum(min(chars, MAX_CHARS // 10) for chars in page_chars[1:])
    return [
        ("pages fetched", structured["total_pages_fetched"]),
        ("main text of the pages (chars)", sum(page_chars)),
        ("peer, every page inline: text + structured (chars)", 2 * sum(page_chars)),
        ("previous shape: text + structured (chars)", 2 * inline_before),
        ("now, text content (chars)", text_chars),
        ("now, structured content (chars)", len(json.dumps(structured, ensure_ascii=False))),
        ("now, by reference: resource links", len(links)),
        ("now, by reference: bytes readable (resources/read)", sum(link.size or 0 for link in links)),
    ]


def _serving(bodies: dict[str, bytes]) -> Any:
    import contextlib
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = bodies.get(self.path.split("?", 1)[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"not found")

    @contextlib.contextmanager
    def running() -> Any:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            server.server_close()

    return running()


async def ingest(directory: Path, timeout: float, as_task: bool) -> dict[str, Any]:
    """One ingest of `directory` by a client that waits `timeout` s for a reply; a fresh data directory each time."""
    with tempfile.TemporaryDirectory() as data:
        env = {
            "MCP_SECTIONS_DATA_DIR": data,
            "MCP_SECTIONS_ROOTS": str(directory),
            "MCP_SECTIONS_RAG_OPS_EMBEDDINGS": "false",
            "MCP_SECTIONS_WARM_UP": "0",
        }
        tasks = Tasks() if as_task else None
        server = parameters(cli("serve", "rag_ops"), env)
        async with Client(server, extensions=[tasks] if tasks else None, read_timeout_seconds=timeout) as client:
            await client.list_tools()
            arguments = {"path": str(directory)}
            started = time.perf_counter()
            if not as_task:
                try:
                    result = await client.call_tool("ingest_directory", arguments)
                except MCPError as error:
                    return {
                        "answer_s": time.perf_counter() - started,
                        "outcome": f"error {error.code}: {error.message}",
                    }
                return {"answer_s": time.perf_counter() - started, "outcome": _files(result)}
            handle = await call_for_task(client, "ingest_directory", arguments)
            answered = time.perf_counter() - started
            assert isinstance(handle, CreatedTask), handle
            polls, messages = 0, []
            while True:
                task = await get_task(client.session, handle.task_id)
                polls += 1
                if task.status_message and task.status_message not in messages:
                    messages.append(task.status_message)
                if task.status in ("completed", "failed", "cancelled"):
                    break
                await anyio.sleep((task.poll_interval_ms or 1000) / 1000)
            done = time.perf_counter() - started
            result = types.CallToolResult.model_validate(task.result) if task.result else None
            return {
                "answer_s": answered,
                "result_s": done,
                "polls": polls,
                "progress": messages,
                "outcome": _files(result) if result else f"{task.status}: {task.error}",
            }


def _files(result: types.CallToolResult) -> str:
    data = result.structured_content or {}
    if result.is_error:
        return f"{data.get('error_code')}: {data.get('error', '')[:120]}"
    return f"{data.get('files_scanned')} files scanned, {data.get('nodes_written')} nodes in {data.get('seconds')} s"


async def main(directory: Path, timeout: float) -> None:
    print("1. fetch_web_page, depth 1, 10 pages of real documentation (what reaches the agent's context)\n")
    print_table(["measure", "value"], await crawl())
    print(f"\n2. ingest_directory of {directory} by a client that waits {timeout:g} s for a reply\n")
    task = await ingest(directory, timeout, as_task=True)
    plain = await ingest(directory, timeout, as_task=False)
    rows = [
        ("plain call", f"{plain['answer_s']:.1f}", "-", "-", plain["outcome"]),
        (
            "as an MCP task",
            f"{task['answer_s'] * 1000:.0f} ms",
            f"{task['result_s']:.1f}",
            task["polls"],
            task["outcome"],
        ),
    ]
    print_table(["call", "answer after (s)", "result after (s)", "tasks/get", "outcome"], rows)
    shown = task["progress"]
    print(f"\nprogress seen in tasks/get ({len(shown)} distinct): {shown[:2]} … {shown[-2:]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sympy = Path(__import__("sympy").__file__).parent if __import__("importlib.util").util.find_spec("sympy") else None
    parser.add_argument("--ingest", type=Path, default=sympy, help="directory to ingest (default: sympy's sources)")
    parser.add_argument("--timeout", type=float, default=60.0, help="how long the client waits for a reply (s)")
    args = parser.parse_args()
    anyio.run(main, args.ingest.resolve(), args.timeout)
