"""Writing fetched pages into the brain (the store rag_ops searches), with their vectors made in the background.

Pages become `WebPage` nodes through `shared.brain.web_pages` (deterministic ids from the normalised URL, so a
re-ingest updates and never duplicates); the shared `EmbeddingJobs` embeds them after each write, so the text is
searchable at once and by meaning soon after.
"""

from __future__ import annotations

import threading
from typing import Any

from mcp_sections.shared.brain.embedding_jobs import EmbeddingJobs
from mcp_sections.shared.brain.model import valid_project_id
from mcp_sections.shared.brain.web_pages import store_web_page
from mcp_sections.shared.ground.errors import invalid_input

BRAIN_OWNER = "rag_ops"  # the section that searches the brain and re-embeds it (`mcp-sections reembed rag_ops`)


class PageIngest(EmbeddingJobs):
    """One brain store opened by web_ops; `ingest` is thread-safe."""

    def __init__(self, store: Any, embeddings: Any | None, *, retention_days: float = 30.0) -> None:
        self.store = store
        self.embeddings = embeddings
        self.retention_days = retention_days
        self._write_lock = threading.Lock()
        self.start_embedding_jobs(owner=BRAIN_OWNER, background=True, wait_seconds=0.0)

    def ingest(
        self, url: str, title: str, text: str, links: list[str], project_id: str | None, *, embed: bool = True
    ) -> tuple[str, str]:
        """Store one page; returns (project id, node id). `embed=False` stores it for text search only."""
        if project_id is not None and not valid_project_id(project_id):
            raise invalid_input(
                f"project_name {project_id!r} is not a valid project id: lower-case letters, digits, '-' and '_'."
            )
        with self._write_lock:
            pid, parsed = store_web_page(
                self.store, url, title, text, links, project_id, retention_days=self.retention_days, embed=embed
            )
        if embed:
            self.wake()
        return pid, parsed.nodes[0].id

    def pending(self, project_id: str) -> int:
        if self.embeddings is None:
            return 0
        return int(self.store.count_pending(self.embeddings.model_key, [project_id]))

    def close(self) -> None:
        self.stop_embedding_jobs()
        self.store.close()
