"""The brain's hybrid search: vector and full-text candidates fused by reciprocal rank, filtered and paged."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mcp_sections.servers.rag_ops.ranking import (
    Question,
    fit,
    identifiers_in,
    is_document,
    names_version,
    read_question,
    role_of,
    versions_in,
)
from mcp_sections.servers.rag_ops.rerank import Candidate, scores
from mcp_sections.shared.brain.embedding_jobs import EmbeddingJobs
from mcp_sections.shared.brain.model import LABELS, SCOPE_KINDS, EntityFilter, Node
from mcp_sections.shared.ground.errors import invalid_input

RRF_K = 30
POOL = 100  # candidates each leg brings
LEG_WEIGHTS = {"semantic": 1.0, "text": 0.35, "symbol": 1.0}
SYMBOL_LIMIT = 20
GRAPH_SEEDS = 2  # the definitions whose callers join the ranking
GRAPH_CALLERS = 3
GRAPH_SHARE = 0.5  # a caller's score, as a share of its definition's
PAGE_FILES = 5  # documentation files whose title section stands for them
VERSION_BOOST = 2.0
RERANK_DEPTH = 40  # the candidates the reranker orders (what it was learned on)
Leg = tuple[str, list[tuple[str, float]]]  # a search leg's name and its hits, best first


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
        min_score: float | None = None,
    ) -> dict[str, Any]:
        """Candidates from every leg that ran (vectors, full text, symbol names, then the call graph around the
        best definitions), fused by weighted reciprocal rank and scaled by the weight of each node's role for the
        question's intent (`ranking`): a "where is X done" question gets definitions first, then their callers, then
        tests and docs; a "how do I" question gets docs first. Among the role wanted, a candidate whose own name the
        question spells, or of the kind of thing it asks for ("the field that …"), counts more (`ranking.fit`).

        In a hybrid search the reranker (`rerank`) then orders the first `RERANK_DEPTH` candidates by every signal the
        fusion has for them, with weights learned on real code bases.

        Each result has one `score` (`models.SCORE_DESCRIPTION`): in mode semantic the cosine similarity; in mode
        hybrid the reranker's, 1.0 first; in mode text the fused score scaled so that 1.0 is first in every leg with
        the role the intent wants (or the first of this answer, when its name lifted it above that)."""
        labels, kinds = _split_types(types)
        projects = {p.id: p for p in self.store.list_projects()}
        question = read_question(query)
        intent = question.intent
        pool = max(POOL, (offset + limit) * 4 + 20)
        legs, mode, note, text = self._run_legs(query, project_ids, labels, pool, semantic, text, min_score)
        fused, nodes = self._fuse(query, legs, question, project_ids, graph=intent in ("code", "mixed") and text)
        if mode == "hybrid":
            rerank_fused(fused, nodes, question)
        else:
            first = sum(leg_score(source, 0, hits[0][1]) for source, hits in legs)  # first in every leg
            best = max([first, *(entry["rrf"] for entry in fused.values())])  # or above it, by name or version
            for entry in fused.values():
                entry["score"] = entry["similarity"] if mode == "semantic" else entry["rrf"] / best
                entry["order"] = entry["rrf"]
        candidates = self._ordered(fused, nodes, text_match, kinds)
        results = []
        for nid in candidates[offset : offset + limit]:
            item = self.describe(nodes[nid], projects, round(fused[nid]["score"] or 0.0, 4))
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
            "intent": intent,
        }

    def _run_legs(
        self,
        query: str,
        project_ids: list[str] | None,
        labels: list[str] | None,
        pool: int,
        semantic: bool,
        text: bool,
        min_score: float | None,
    ) -> tuple[list[Leg], str, str | None, bool]:
        """The legs that found something, the mode, why search by meaning was unavailable, and whether text legs ran
        (they do, in its stead, when search by meaning is unavailable)."""
        # the full-text query runs in a helper thread while the vectors are scored here (both release the GIL)
        pending_text = (
            self._searcher().submit(self.store.text_search, query, project_ids, labels, pool) if text else None
        )
        semantic_hits: list[tuple[str, float]] = []
        note = None
        if semantic:
            semantic_hits, note = self._semantic_leg(query, project_ids, labels, pool, min_score)
            if note:
                if pending_text is None:
                    pending_text = self._searcher().submit(self.store.text_search, query, project_ids, labels, pool)
                text = True
        text_hits = pending_text.result() if pending_text is not None else []
        symbol_hits = self.symbol_hits(query, project_ids, labels) if text else []
        mode = "hybrid" if semantic and not note and text else ("semantic" if semantic and not note else "text")
        legs = [
            (source, hits)
            for source, hits in (("semantic", semantic_hits), ("text", text_hits), ("symbol", symbol_hits))
            if hits
        ]
        return legs, mode, note, text

    def _semantic_leg(
        self, query: str, project_ids: list[str] | None, labels: list[str] | None, pool: int, min_score: float | None
    ) -> tuple[list[tuple[str, float]], str | None]:
        """The vector hits at or above `min_score`, and a note when no model could answer."""
        hits, reason = self.semantic_hits(query, project_ids, labels, pool)
        note = f"semantic search unavailable ({reason}); results come from text search only" if reason else None
        if min_score is not None:
            hits = [(nid, s) for nid, s in hits if s >= min_score]
        return hits, note

    def _fuse(
        self, query: str, legs: list[Leg], question: Question, project_ids: list[str] | None, *, graph: bool
    ) -> tuple[dict[str, dict[str, Any]], dict[str, Node]]:
        """The candidates of every leg by weighted reciprocal rank, scaled by the weight of their role for the
        question's intent; documentation pages stand for their title section; with `graph`, the callers of the best
        definitions join."""
        fused: dict[str, dict[str, Any]] = {}
        for source, hits in legs:
            for rank, (nid, raw) in enumerate(hits):
                entry = _candidate(fused, nid)
                entry["rrf"] += leg_score(source, rank, raw)
                entry["matched_by"].append(source)
                entry["ranks"].setdefault(source, rank)
                if source == "semantic":
                    entry["similarity"] = raw
        nodes = {n.id: n for n in self.store.get_nodes(list(fused))}
        raw_scores = {nid: entry["rrf"] for nid, entry in fused.items()}
        intent, stems = question.intent, question.stems
        versions = versions_in(query) if intent == "changes" else set()
        for nid, entry in fused.items():
            entry["rrf"] *= fit(intent, nodes[nid], stems, question.thing) if nid in nodes else 0.0
            if versions and nid in nodes and names_version(nodes[nid], versions):
                entry["rrf"] *= VERSION_BOOST  # "what changed in 3.0": the section named 3.0
        self._pages_as_sections(fused, nodes, raw_scores, question)
        if graph:
            self._add_callers(fused, nodes, project_ids)
        return fused, nodes

    def _ordered(
        self, fused: dict[str, dict[str, Any]], nodes: dict[str, Node], text_match: str | None, kinds: set[str]
    ) -> list[str]:
        """The candidates best first (by `order`: the reranker's score in a hybrid search, else the fused score),
        kept if their text matches `text_match` and their kind is one of `kinds`."""
        candidates = sorted(
            (nid for nid in fused if nid in nodes), key=lambda nid: (-fused[nid]["order"], -fused[nid]["rrf"])
        )
        if text_match:
            keep = self.store.filter_text_match(candidates, text_match)
            candidates = [nid for nid in candidates if nid in keep]
        if kinds:
            candidates = [nid for nid in candidates if nodes[nid].props.get("kind") in kinds]
        return candidates

    def symbol_hits(
        self, query: str, project_ids: list[str] | None, labels: list[str] | None
    ) -> list[tuple[str, float]]:
        """Definitions whose name the question spells (`asdict`, `post_load`, "post load", `CliRunner`), classes and
        functions first."""
        if labels and "Scope" not in labels:
            return []
        names = identifiers_in(query)
        if not names:
            return []
        found = self.store.scopes_named(names, project_ids, SYMBOL_LIMIT)
        order = {"class": 0, "function": 1, "method": 2}
        found.sort(key=lambda node: (order.get(str(node.props.get("kind")), 3), node.path.endswith(".pyi")))
        return [(node.id, 1.0) for node in found]

    def _pages_as_sections(
        self,
        fused: dict[str, dict[str, Any]],
        nodes: dict[str, Node],
        raw: dict[str, float],
        question: Question,
    ) -> None:
        """A documentation page found by its file (whose embedded text is the page's title) stands for its title
        section: the section gets the file's score if it had less, and the file leaves the ranking."""
        pages = [nid for nid in fused if nid in nodes and nodes[nid].label == "File" and is_document(nodes[nid])]
        for nid in sorted(pages, key=lambda n: -raw[n])[:PAGE_FILES]:
            page = nodes[nid]
            found, _ = self.store.query_entities(
                EntityFilter(label="DocumentSection", path_prefix=page.path, project_ids=[page.project_id], limit=1)
            )
            del fused[nid]
            if not found:
                continue
            section = found[0]
            nodes.setdefault(section.id, section)
            entry = _candidate(fused, section.id)
            entry["rrf"] = max(entry["rrf"], raw[nid] * fit(question.intent, section, question.stems))
            entry["matched_by"] = list(dict.fromkeys([*entry["matched_by"], "page"]))

    def _add_callers(
        self, fused: dict[str, dict[str, Any]], nodes: dict[str, Node], project_ids: list[str] | None
    ) -> None:
        """The callers of the best definitions join the ranking just below them (graph leg)."""
        top = sorted(
            (nid for nid in fused if nid in nodes and role_of(nodes[nid]) == "code"), key=lambda n: -fused[n]["rrf"]
        )[:GRAPH_SEEDS]
        for seed in top:
            callers, _ = self.store.neighbors(seed, ["CALLS"], "in", 1, GRAPH_CALLERS)
            below = fused[seed]["rrf"] * GRAPH_SHARE
            for node, depth in callers:
                if depth != 1 or role_of(node) not in ("code", "nested"):
                    continue
                if project_ids is not None and node.project_id not in project_ids:
                    continue
                entry = _candidate(fused, node.id)
                nodes.setdefault(node.id, node)
                if entry["rrf"] < below:
                    entry["rrf"] = below
                if "graph" not in entry["matched_by"]:
                    entry["matched_by"].append("graph")


def _candidate(fused: dict[str, dict[str, Any]], nid: str) -> dict[str, Any]:
    """`nid`'s entry in the fusion, made empty if it has none yet (its fused score, the legs that found it and at
    which rank, its cosine similarity when the vectors did)."""
    return fused.setdefault(nid, {"rrf": 0.0, "matched_by": [], "ranks": {}, "similarity": None})


def fused_candidates(fused: dict[str, dict[str, Any]], nodes: dict[str, Node]) -> list[Candidate]:
    """The fusion's candidates as the reranker reads them, best fused score first."""
    order = sorted((nid for nid in fused if nid in nodes), key=lambda nid: -fused[nid]["rrf"])
    found = []
    for nid in order:
        entry = fused[nid]
        found.append(Candidate(nodes[nid], entry["rrf"], entry["ranks"], entry["similarity"], entry["matched_by"]))
    return found


def rerank_fused(fused: dict[str, dict[str, Any]], nodes: dict[str, Node], question: Question) -> None:
    """Each candidate's `score` in a hybrid search: the first `RERANK_DEPTH` by fused score ordered by the reranker
    (`rerank.scores`; 1.0 first, e^-1 one unit below), the rest after them in fused order."""
    ranked = fused_candidates(fused, nodes)
    head = ranked[:RERANK_DEPTH]
    learned = scores(head, question)
    best = max(learned, default=0.0)
    for candidate, value in zip(head, learned, strict=True):
        fused[candidate.node.id]["score"] = math.exp(value - best)
    floor = min((fused[c.node.id]["score"] for c in head), default=1.0)
    last = head[-1].fused if head and head[-1].fused > 0 else 1.0
    for candidate in ranked[RERANK_DEPTH:]:  # at most the last reranked one's, in fused order
        fused[candidate.node.id]["score"] = floor * min(candidate.fused / last, 1.0)
    for entry in fused.values():
        entry.setdefault("score", 0.0)  # a node the store no longer has
        entry["order"] = entry["score"]


def leg_score(source: str, rank: int, raw: float) -> float:
    """What being at `rank` (0-based) of a leg brings a candidate: its weighted reciprocal rank."""
    return LEG_WEIGHTS[source] / (RRF_K + rank + 1)


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
