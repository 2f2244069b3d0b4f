"""The brain's hybrid search: vector and full-text candidates fused by reciprocal rank, filtered and paged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.brain.embedding_jobs import EmbeddingJobs
from mcp_sections.shared.brain.model import LABELS, Node
from mcp_sections.shared.ground.errors import invalid_input

RRF_K = 60
SCOPE_KINDS = ("function", "method", "class", "interface", "struct", "enum", "trait", "impl", "type", "block")


class BrainSearch(EmbeddingJobs):
    """Search over the brain (the searching half of `Brain`, which provides `describe`)."""

    store: Any
    embeddings: Any
    _executor: Any
    _executor_lock: Any

    def describe(self, node: Node, projects: dict[str, Any] | None = None, score: float | None = None) -> dict:
        raise NotImplementedError

    def _searcher(self) -> Any:
        with self._executor_lock:
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="brain-search")
            return self._executor

    def semantic_hits(
        self, query: str, project_ids: list[str] | None, labels: list[str] | None, limit: int
    ) -> tuple[list[tuple[str, float]], str | None]:
        """Vector hits, or ([], reason) when no model can answer."""
        if self.embeddings is None:
            return [], "embeddings are disabled"
        self.refuse_other_model()
        if not self.wait_for_model():
            return [], self.embedding_status()
        vector = self.embeddings.embed_query(query)
        return self.store.vector_search(self.model_key, vector, project_ids, labels, limit), None

    def search(
        self,
        query: str,
        *,
        project_ids: list[str] | None,
        types: Sequence[str] | None,
        semantic: bool,
        text: bool = True,
        text_match: str | None = None,
        limit: int = 10,
        offset: int = 0,
        project_types: Sequence[str] | None = None,
        min_score: float | None = None,
    ) -> dict[str, Any]:
        """Vector and full-text candidates ranked by reciprocal-rank fusion (RRF) of the legs that ran.

        Each result has one `score` (`models.SCORE_DESCRIPTION`): in mode semantic the cosine similarity, in modes
        hybrid and text the RRF scaled so that 1.0 is first in every leg that found something."""
        labels, kinds = _split_types(types)
        projects = {p.id: p for p in self.store.list_projects()}
        if project_types:
            allowed = [pid for pid, p in projects.items() if p.type in project_types]
            project_ids = [pid for pid in (project_ids or allowed) if pid in allowed]
        pool = (offset + limit) * 4 + 20
        semantic_hits: list[tuple[str, float]] = []
        note = None
        # the full-text query runs in a helper thread while the vectors are scored here (both release the GIL)
        pending_text = (
            self._searcher().submit(self.store.text_search, query, project_ids, labels, pool) if text else None
        )
        if semantic:
            semantic_hits, reason = self.semantic_hits(query, project_ids, labels, pool)
            if reason:
                note = f"semantic search unavailable ({reason}); results come from text search only"
                if pending_text is None:
                    pending_text = self._searcher().submit(self.store.text_search, query, project_ids, labels, pool)
                text = True
            if min_score is not None:
                semantic_hits = [(nid, s) for nid, s in semantic_hits if s >= min_score]
        text_hits = pending_text.result() if pending_text is not None else []
        mode = "hybrid" if semantic and not note and text else ("semantic" if semantic and not note else "text")
        legs = [(source, hits) for source, hits in (("semantic", semantic_hits), ("text", text_hits)) if hits]
        fused: dict[str, dict[str, Any]] = {}
        for source, hits in legs:
            for rank, (nid, raw) in enumerate(hits):
                entry = fused.setdefault(nid, {"rrf": 0.0, "matched_by": [], "similarity": None})
                entry["rrf"] += 1.0 / (RRF_K + rank + 1)
                entry["matched_by"].append(source)
                if source == "semantic":
                    entry["similarity"] = raw
        best = len(legs) / (RRF_K + 1)  # first in every leg
        for entry in fused.values():
            entry["score"] = entry["similarity"] if mode == "semantic" else entry["rrf"] / best
        candidates = sorted(fused, key=lambda nid: -fused[nid]["rrf"])
        if text_match:
            keep = self.store.filter_text_match(candidates, text_match)
            candidates = [nid for nid in candidates if nid in keep]
        if kinds:  # scope kinds live in the node properties: read every candidate
            nodes = {n.id: n for n in self.store.get_nodes(candidates)}
            candidates = [nid for nid in candidates if nid in nodes and nodes[nid].props.get("kind") in kinds]
        else:  # read only the page
            nodes = {n.id: n for n in self.store.get_nodes(candidates[offset : offset + limit])}
        page = [nid for nid in candidates[offset : offset + limit] if nid in nodes]
        results = []
        for nid in page:
            item = self.describe(nodes[nid], projects, round(fused[nid]["score"], 4))
            item["matched_by"] = fused[nid]["matched_by"]
            item["snippet"] = _snippet(nodes[nid], query)
            results.append(item)
        searched = project_ids if project_ids is not None else sorted(projects)
        return {
            "results": results,
            "total_count": len(candidates),
            "searched_projects": searched,
            "mode": mode,
            "note": note,
        }


def _split_types(types: Sequence[str] | None) -> tuple[list[str] | None, set[str]]:
    """`types` may name labels (Scope, File, ...) or scope kinds (function, class, ...)."""
    if not types:
        return None, set()
    by_lower = {label.lower(): label for label in LABELS}
    labels: list[str] = []
    kinds: set[str] = set()
    for item in types:
        lowered = item.strip().lower()
        if lowered in by_lower:
            labels.append(by_lower[lowered])
        elif lowered in SCOPE_KINDS:
            kinds.add(lowered)
            labels.append("Scope")
        else:
            raise invalid_input(
                f"unknown type {item!r}; use labels {', '.join(LABELS)} or scope kinds {', '.join(SCOPE_KINDS)}."
            )
    return list(dict.fromkeys(labels)), kinds


def _snippet(node: Node, query: str, width: int = 240) -> str:
    if node.label == "Scope":
        doc = (node.props.get("docstring") or "").strip().splitlines()
        head = node.props.get("signature") or node.name
        return (head + (" — " + doc[0] if doc else ""))[:width]
    content = node.content or node.name
    lowered = content.lower()
    positions = [lowered.find(w.lower()) for w in query.split() if len(w) > 2]
    positions = [p for p in positions if p >= 0]
    start = max(0, min(positions) - 60) if positions else 0
    return " ".join(content[start : start + width].split())
