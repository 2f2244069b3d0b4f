"""The brain manager: its lifecycle, what is searchable, and reading (scopes, nodes, schema) over a `BrainStore`.

Plain Python (no MCP import); the section's tools are thin wrappers around it. `Brain` is made of halves by concept:
`projects` (the registry), `ingest` (context resolution, incremental ingest), `forgetting` (forget_path, gc) and
`search` (the hybrid search), over `shared.brain.embedding_jobs`.

Embeddings: nodes carry a compact `embed_text`; a background worker embeds pending nodes in small
batches after each ingest (through the shared `EmbeddingService`, whose (model, content-hash) cache
means identical text is never embedded twice), so an ingest is searchable by text at once and by
meaning soon after. Without a model, every search falls back to text search and says so.

Completion: an ingest tool embeds what it wrote before it answers (`embed_for`, for as long as the call may take)
and answers with what is searchable now (`searchable`: "text only for 696 of 1,240: 544 embedded"); what is left goes
on in the background after the call, and is still pending in the store if the process stops: the next start embeds it.
An ingest cut short (cancelled, the client gone, the process stopped) leaves its project `interrupted` (or
`ingesting` after a kill); the next start ingests it again from its root (`resume_interrupted`), unchanged files
being skipped by their hash.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_sections.servers.rag_ops.forgetting import BrainForgetting
from mcp_sections.servers.rag_ops.ingest import BrainIngest
from mcp_sections.servers.rag_ops.names import looks_qualified, qualified_nodes, reference_for
from mcp_sections.shared.brain.embedding_jobs import Progress
from mcp_sections.shared.brain.model import EntityFilter, Node, Project
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ToolFailure, invalid_input, not_found

logger = logging.getLogger("mcp_sections.rag_ops")


SECTION_ID = "rag_ops"  # named in the brain's messages: `mcp-sections reembed rag_ops`
NODE_ID = re.compile(r"[0-9a-f]{24}")  # `shared.brain.model.node_id`
MAX_CANDIDATES = 10  # nodes suggested when a name is not found
MAX_AMBIGUOUS = 30  # nodes listed when a name is ambiguous
INTERRUPTED = ("ingesting", "interrupted")  # project statuses of an ingest that did not end


@dataclass
class Searchable:
    """What a search finds of a project now: all its text once its ingest ended, and by meaning what is embedded."""

    project_id: str
    ingest: str  # complete | ingesting | interrupted
    meaning: str  # complete | partial | disabled | unavailable
    embeddable: int  # nodes with a text to embed
    pending: int  # of those, still without a vector
    reason: str | None = None  # why search by meaning is unavailable

    @property
    def embedded(self) -> int:
        return self.embeddable - self.pending

    @property
    def complete(self) -> bool:
        return self.ingest == "complete" and self.meaning in ("complete", "disabled")

    def message(self) -> str:
        if self.ingest == "complete":
            text = "searchable by text: all of it"
        elif self.ingest == "ingesting":
            text = "being ingested: searchable by text as far as it got"
        else:
            text = (
                "the ingest was interrupted: searchable by text as far as it got; it resumes at the next start, or "
                "call ingest_directory again"
            )
        if self.meaning == "disabled":
            meaning = "search by meaning is off in this configuration (text only)"
        elif self.meaning == "unavailable":
            meaning = f"text only: search by meaning is unavailable ({self.reason})"
        elif self.pending == 0:
            meaning = f"by meaning: all {self.embeddable:,} nodes embedded"
        else:
            meaning = (
                f"text only for {self.pending:,} of {self.embeddable:,} nodes ({self.embedded:,} embedded); the rest "
                "is being embedded in the background, after this call too and after a restart (list_projects shows "
                "it)"
            )
        return f"{text}; {meaning}."

    def as_dict(self) -> dict[str, Any]:
        return {
            "ingest": self.ingest,
            "meaning": self.meaning,
            "embeddable": self.embeddable,
            "embedded": self.embedded,
            "pending": self.pending,
            "complete": self.complete,
            "message": self.message(),
        }


class Brain(BrainIngest, BrainForgetting):
    """One brain over a store; thread-safe (tools run in worker threads)."""

    def __init__(
        self,
        store: Any,
        roots: Sequence[Path],
        *,
        embedding_service: Any | None = None,
        max_file_bytes: int = 1_000_000,
        max_files: int = 20_000,
        retention_days: float = 30.0,
        background_embeddings: bool = True,
        embedding_wait_seconds: float = 30.0,
        private: Sequence[Path] = (),
    ) -> None:
        """`private`: the suite's own state (`Settings.own_state_paths()`), never read nor ingested."""
        self.store = store
        self.roots = [Path(os.path.realpath(r)) for r in roots]
        self.embeddings = embedding_service
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.retention_days = retention_days
        self.active: str | None = None
        self.loaded: set[str] = set()
        self._guard = PathGuard(self.roots, private=private)
        self._ingest_lock = threading.Lock()
        self._manifest_names = {}
        self._executor: Any = None
        self._executor_lock = threading.Lock()
        self._closing = threading.Event()
        self._resumer: threading.Thread | None = None
        self._heal()
        self.start_embedding_jobs(
            owner=SECTION_ID, background=background_embeddings, wait_seconds=embedding_wait_seconds
        )

    # ---- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        self._closing.set()  # an ingest resumed in the background stops at its next file (and stays interrupted)
        if self._resumer is not None:
            self._resumer.join(timeout=60)
        self.stop_embedding_jobs()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self.store.close()

    def _heal(self) -> None:
        """After a crash: recompute derived edges and counts of projects left mid-ingest."""
        for project in self.store.list_projects():
            if project.needs_relink or project.status in INTERRUPTED:
                self.store.relink(project.id)
                self.store.refresh_counts(project.id)

    def interrupted(self) -> list[Project]:
        """Directory projects whose last ingest did not end (cancelled, the client gone, the process stopped)."""
        return [p for p in self._dir_projects() if p.status in INTERRUPTED and os.path.isdir(p.root)]

    def resume_interrupted(self) -> list[str]:
        """Ingest again, from their roots, the projects whose last ingest did not end; their ids."""
        resumed = []
        for project in self.interrupted():
            if self._closing.is_set():
                break
            try:
                self.ingest_tree(project, "", "resumed", self._stop_when_closing)
            except ToolFailure as failure:
                logger.warning("resuming the ingest of %s failed: %s", project.id, failure.message)
                continue
            resumed.append(project.id)
            logger.info("resumed the interrupted ingest of %s", project.id)
        return resumed

    def resume_in_background(self) -> None:
        """`resume_interrupted` in a daemon thread (at a server's start), when there is anything to resume."""
        if not self.interrupted():
            return

        def resume() -> None:
            try:
                self.resume_interrupted()
            except _Closing:
                pass
            except Exception:  # the next start tries again
                logger.warning("resuming interrupted ingests failed", exc_info=True)

        self._resumer = threading.Thread(target=resume, name="brain-resume", daemon=True)
        self._resumer.start()

    def _stop_when_closing(self, done: int, total: int, message: str) -> None:
        if self._closing.is_set():
            raise _Closing

    # ---- what is searchable ---------------------------------------------------------------------
    def searchable(self, project_id: str) -> Searchable:
        """What a search finds of the project now."""
        project = self.project(project_id)
        ingest = project.status if project.status in INTERRUPTED else "complete"
        embeddable = int(self.store.schema([project.id])["embeddable"])
        if self.embeddings is None or self.model_key is None:
            return Searchable(project.id, ingest, "disabled", embeddable, embeddable)
        pending = int(self.store.count_pending(self.model_key, [project.id]))
        status = str(self.embeddings.embedder.status)
        if pending and (status == "failed" or self.other_model() is not None):
            return Searchable(project.id, ingest, "unavailable", embeddable, pending, self.embedding_status())
        return Searchable(project.id, ingest, "partial" if pending else "complete", embeddable, pending)

    def embed_for(self, project_ids: Sequence[str], seconds: float, progress: Progress | None = None) -> str | None:
        """Embed the projects' pending nodes in this thread for up to `seconds` (what is left goes on in the
        background); None, or why nothing could be embedded (no model: text search works)."""
        if self.embeddings is None:
            return "embeddings are disabled in this configuration: text search only."
        if seconds <= 0 or self.store.count_pending(self.model_key, list(project_ids)) == 0:
            return None
        try:
            self.generate_embeddings(list(project_ids), seconds, progress)
        except ToolFailure as failure:
            return failure.message
        finally:
            self.wake()
        return None

    # ---- reading --------------------------------------------------------------------------------
    def project_ids(self, requested: Sequence[str] | None) -> list[str] | None:
        if not requested:
            return None
        return list(dict.fromkeys(self.project(reference).id for reference in requested))

    def entities(self, flt: EntityFilter) -> tuple[list[Node], int]:
        """`store.query_entities`, where an exact name no node has is also read as a qualified name or a path
        (`names`: Class.method, module.function, path::Class.method)."""
        nodes, total = self.store.query_entities(flt)
        if total or not flt.name or flt.name_match != "exact" or not looks_qualified(flt.name):
            return nodes, total
        found = qualified_nodes(self.store, flt.name, flt)
        return found[flt.offset : flt.offset + flt.limit], len(found)

    def resolve_node(self, reference: str, project_id: str | None = None, label: str | None = None) -> Node:
        """The node `reference` names: an id (24 hex characters), else a name as `entities` reads it (exact, or
        qualified), narrowed by project and label. NOT_FOUND suggests names that contain it; a name several nodes
        share fails with INVALID_INPUT listing, for each, the qualified name (or path, or id) that tells it apart."""
        if NODE_ID.fullmatch(reference):
            found = self.store.get_nodes([reference])
            if found:
                return found[0]
        ids = self.project_ids([project_id] if project_id else None)
        nodes, total = self.entities(EntityFilter(label=label, name=reference, project_ids=ids, limit=MAX_AMBIGUOUS))
        if total == 1:
            return nodes[0]
        where = (f" in project {project_id!r}" if project_id else "") + (f" with label {label}" if label else "")
        if total > 1:
            choices = [(reference_for(node, nodes, reference), node) for node in nodes]
            raise invalid_input(
                f"{total} nodes{where} are named {reference!r}: "
                + "; ".join(f"{choice} ({_place(node)})" for choice, node in choices)
                + (f"; … and {total - len(nodes)} more" if total > len(nodes) else "")
                + f". Pass one of these as node_id, e.g. {choices[0][0]!r} (a qualified name, a path::qualname, or "
                "an id)."
            )
        last = reference.replace("::", ":").replace(":", ".").rstrip(".").rsplit(".", 1)[-1] or reference
        similar, _ = self.store.query_entities(
            EntityFilter(label=label, name=last, name_match="contains", project_ids=ids, limit=MAX_CANDIDATES)
        )
        hint = f" Names that contain {last!r}: {_candidates(similar)}." if similar else ""
        raise not_found(
            f"no node{where} has the id, the name or the qualified name {reference!r}.{hint} Get ids and names from "
            "brain_search, semantic_search or query_entities (name_match='contains')."
        )

    def describe(self, node: Node, projects: dict[str, Project] | None = None, score: float | None = None) -> dict:
        projects = projects if projects is not None else {p.id: p for p in self.store.list_projects()}
        project = projects.get(node.project_id)
        props = dict(node.props)
        if node.label == "Project" and project is not None:
            props.update(project.to_dict())
        absolute = node.path
        if project is not None and node.path and project.type != "web-crawl" and os.path.isabs(project.root):
            absolute = os.path.join(project.root, *node.path.split("/"))
        return {
            "id": node.id,
            "label": node.label,
            "name": node.name,
            "project_id": node.project_id,
            "project_type": project.type if project else None,
            "project_root": project.root if project else None,
            "path": absolute,
            "relative_path": node.path,
            "start_line": node.start_line,
            "end_line": node.end_line,
            "kind": props.get("kind"),
            "properties": {k: v for k, v in props.items() if v not in (None, "", [])},
            "score": score,
        }

    def schema(self, project_id: str | None = None) -> dict[str, Any]:
        ids = self.project_ids([project_id] if project_id else None)
        schema = self.store.schema(ids)
        schema["projects"] = len(ids) if ids is not None else len(self.store.list_projects())
        schema["embeddings_pending"] = self.store.count_pending(self.model_key, ids) if self.model_key else None
        schema["backend"] = self.store.backend
        schema["embedding_model"] = self.model_key
        schema["embedding_status"] = self.embedding_status()
        return schema


# ---- helpers -------------------------------------------------------------------------------------


class _Closing(Exception):
    """The brain is closing: an ingest resumed in the background stops between two files."""


def _candidates(nodes: Sequence[Node]) -> str:
    """`[label] name at path:line (project) id=…` for each node, the way a caller picks one."""
    return "; ".join(
        f"[{n.label}] {n.props.get('qualname') or n.name} at {n.path or '-'}"
        f"{f':{n.start_line}' if n.start_line else ''} ({n.project_id}) id={n.id}"
        for n in nodes
    )


def _place(node: Node) -> str:
    """`[Scope method] path:line, project p, id=…`: where a candidate is."""
    kind = f" {node.props['kind']}" if node.props.get("kind") else ""
    line = f":{node.start_line}" if node.start_line else ""
    return f"[{node.label}{kind}] {node.path or '-'}{line}, project {node.project_id}, id={node.id}"


def project_summary(project: Project, brain: Brain) -> dict[str, Any]:
    data = project.to_dict()
    data["loaded"] = project.id in brain.loaded
    data["active"] = project.id == brain.active
    with contextlib.suppress(Exception):
        searchable = brain.searchable(project.id)
        data["embeddings_pending"] = searchable.pending if brain.model_key else None
        data["searchable"] = searchable.as_dict()
    return data


__all__ = ["Brain", "Searchable", "project_summary"]
