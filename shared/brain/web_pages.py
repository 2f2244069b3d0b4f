"""Web pages in the brain: a fetched page as a `WebPage` node with a deterministic id from its normalised URL
(re-ingesting updates, never duplicates), its markdown in chunks of whole blocks (a code block is never split
across chunks unless it is longer than MAX_CODE_BLOCK_CHARS), and `LINKS_TO` edges to the other ingested pages
it links to, in a `web-crawl` project per site. Written by web_ops (and rag_ops); no MCP, no network here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from mcp_sections.shared.brain.model import Edge, Project, Ref, node_id, project_node_id, slugify
from mcp_sections.shared.ground.errors import invalid_input
from mcp_sections.shared.text.markdown_blocks import window

INLINE_MTIME = -1  # records not read from a directory (pages, inline snippets): never "removed" by a walk
PAGE_CONTENT_CHARS = 4000
MAX_LINKS = 500


def web_project_id(url: str) -> str:
    """The project a page of this site belongs to by default: `web-<host>`."""
    return f"web-{slugify(urlparse(url).netloc, 50)}"


def store_web_page(
    store: Any,
    url: str,
    title: str,
    text: str,
    links: Sequence[str] = (),
    project_id: str | None = None,
    *,
    retention_days: float = 30.0,
    embed: bool = True,
) -> tuple[str, Any]:
    """Write one page (replacing its earlier version) and relink the project; returns (project id, records).

    `embed=False` stores it for text search only: its nodes carry no text to embed, so they never wait for a vector.
    """
    from mcp_sections.shared.brain.parsing import Builder, chunk_markdown, file_digest  # loaded when a page comes

    parsed_url = urlparse(url)
    if parsed_url.scheme not in ("http", "https") or not parsed_url.netloc:
        raise invalid_input("url must be an absolute http(s) URL.")
    pid = project_id or web_project_id(url)
    if store.get_project(pid) is None:
        store.upsert_project(
            Project(
                id=pid,
                name=parsed_url.netloc,
                root=f"{parsed_url.scheme}://{parsed_url.netloc}/",
                type="web-crawl",
                auto_cleanup=True,
                retention_days=retention_days,
            )
        )
    data = text.encode("utf-8", "surrogatepass")
    builder = Builder(pid, url, "html", file_digest(data), len(data), INLINE_MTIME)
    page_id = node_id(pid, "WebPage", url)
    builder.file.id = builder.file_id = page_id
    builder.record.node_id = page_id
    builder.file.label = "WebPage"
    builder.file.name = title[:200] or url
    builder.file.file_id = page_id
    builder.file.content = window(text, 0, PAGE_CONTENT_CHARS)[0]  # the page's head, cut between blocks
    builder.file.props = {"url": url, "title": title[:300], "fetched_at": time.time()}
    builder.file.embed_text = f"{title}\n{text[:600]}"
    builder.edges = [Edge(page_id, "IN_PROJECT", project_node_id(pid))]
    if len(text) > PAGE_CONTENT_CHARS:
        chunk_markdown(builder, text)
    builder.refs = [Ref(page_id, "link", link.split("#", 1)[0]) for link in links[:MAX_LINKS]]
    parsed = builder.done()
    parsed.nodes[0].embed_text = f"{title}\n{text[:600]}"
    if not embed:
        for node in parsed.nodes:
            node.embed_text = None
    store.replace_files(pid, [parsed])
    store.relink(pid)
    store.refresh_counts(pid)
    return pid, parsed
