"""The brain's projects at a glance, read from its SQLite file without opening the store (for the status page).

The gateway shows what the brain holds without starting rag_ops: it opens `<data dir>/brain.sqlite3` read-only
(`mode=ro`: no write, no migration, no lock held beyond one short read transaction) and counts, per project, its
nodes, the nodes with a text to embed, and those still waiting for a vector (no vector of their current text, from
any model); `searchable` says it in words, as rag_ops' list_projects does. A brain on Neo4j, or none yet, is reported
as such: nothing is started to find out.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.brain.opening import SQLITE_FILE

MAX_PROJECTS = 100

PROJECTS = """
SELECT p.id, p.name, p.type, p.status, p.last_ingest,
       (SELECT count(*) FROM nodes n WHERE n.project_id = p.id),
       (SELECT count(*) FROM nodes n LEFT JOIN vectors v ON v.node_id = n.id
         WHERE n.project_id = p.id AND n.embed_hash IS NOT NULL
           AND (v.node_id IS NULL OR v.embed_hash != n.embed_hash)),
       (SELECT count(*) FROM nodes n WHERE n.project_id = p.id AND n.embed_hash IS NOT NULL)
FROM projects p ORDER BY p.last_accessed DESC LIMIT ?
"""


@dataclass(frozen=True)
class ProjectSummary:
    id: str
    name: str
    type: str
    status: str
    last_ingest: float | None
    nodes: int
    pending_embeddings: int
    embeddable: int = 0  # nodes with a text to embed

    @property
    def searchable(self) -> str:
        """What a search finds of it now, in words: "text only for 696 of 1,240 nodes (544 embedded)"."""
        if self.status in ("ingesting", "interrupted"):
            what = "ingest interrupted, resumes at the next start" if self.status == "interrupted" else "ingesting"
            return f"{what}: text as far as it got, {self.embeddable - self.pending_embeddings:,} embedded"
        if self.pending_embeddings == 0:
            return f"text and meaning ({self.embeddable:,} embedded)" if self.embeddable else "text"
        embedded = self.embeddable - self.pending_embeddings
        return f"text only for {self.pending_embeddings:,} of {self.embeddable:,} nodes ({embedded:,} embedded)"


@dataclass(frozen=True)
class BrainSummary:
    projects: list[ProjectSummary]
    note: str | None = None  # why there is nothing to show (no brain yet, unreadable)


def brain_summary(data_dir: Path) -> BrainSummary:
    """The projects of the SQLite brain in `data_dir`, newest used first (at most `MAX_PROJECTS`)."""
    path = data_dir / SQLITE_FILE
    if not path.is_file():
        return BrainSummary([], "no SQLite brain in the data directory (rag_ops not used yet, or on Neo4j)")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        try:
            rows = connection.execute(PROJECTS, (MAX_PROJECTS,)).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        return BrainSummary([], f"the brain could not be read ({type(exc).__name__}: {str(exc)[:120]})")
    projects = [
        ProjectSummary(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4], int(r[5]), int(r[6]), int(r[7])) for r in rows
    ]
    return BrainSummary(projects, None if projects else "the brain has no project yet")
