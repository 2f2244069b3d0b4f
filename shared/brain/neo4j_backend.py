"""The brain on an external Neo4j server (official `neo4j` driver, imported lazily).

- Every node carries the `BrainNode` label plus its own (`File`, `Scope`, ...); ids are the deterministic
  ids of `model.node_id`, written with MERGE in UNWIND batches; one write transaction per batch of files.
- The statements, the schema and the indexes are in `neo4j_statements` (labels and relationship types inlined from
  the allow-lists of `model` only; every value a parameter); the rows sent and read back in `neo4j_rows`.
- Reads go through read transactions (`execute_read`); `run_read_query` (the `run_cypher` tool) is
  strictly read-only: deny-list, EXPLAIN query type must be "r", READ access mode, timeout, row cap.
- Configuration: NEO4J_URI, NEO4J_USERNAME, NEO4J_PASSWORD or NEO4J_PASSWORD_FILE (never logged, never in an
  error), NEO4J_DATABASE.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mcp_sections.shared.brain.cypher_guard import check_read_query
from mcp_sections.shared.brain.model import (
    RELATIONSHIPS,
    Edge,
    EntityFilter,
    FileRecord,
    Node,
    ParsedFile,
    Project,
    check_project_fields,
    project_node_id,
)
from mcp_sections.shared.brain.neo4j_rows import (
    edge_rows_by_type,
    jsonable,
    node_from,
    node_rows_by_label,
    project_from,
)
from mcp_sections.shared.brain.neo4j_statements import (
    COUNT_DERIVED,
    COUNT_PENDING,
    DELETE_DERIVED,
    DELETE_FILE_EDGES,
    DELETE_PROJECT_BATCH,
    DELETE_STALE_NODES,
    EDGES_AMONG,
    EXPLAIN_PREFIX,
    FILE_RECORDS,
    FILTER_TEXT_MATCH,
    GC_FOREIGN_NODES,
    GC_ORPHAN_NODES,
    GET_NODES,
    GET_PROJECT,
    LINK_CALLS,
    LIST_PROJECTS,
    MARK_RELINK,
    MODULES,
    PENDING,
    PREVIOUS_FILE_IDS,
    PUT_VECTORS,
    REFERENCES,
    REFRESH_COUNTS,
    RELINK_DONE,
    REMOVE_PATHS,
    RESET,
    SCHEMA_LABELS,
    SCHEMA_RELATIONSHIPS,
    SCHEMA_STATEMENTS,
    SCHEMA_VECTORS,
    SCOPES_NAMED,
    TEXT_SEARCH,
    UPDATE_FILE_STATS,
    UPDATE_PROJECT,
    UPSERT_PROJECT,
    VECTOR_SEARCH,
    merge_edges_statement,
    neighbors_statement,
    query_entities_statement,
    upsert_nodes_statement,
    vector_index_statement,
)
from mcp_sections.shared.brain.schema_answer import schema_answer
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

logger = logging.getLogger("mcp_sections.brain.neo4j")

BATCH = 500
DELETE_BATCH = 5_000


def _batches(statement: str, rows: list[dict[str, Any]], **params: Any) -> list[tuple[str, dict[str, Any]]]:
    """`statement` over `rows`, BATCH rows a step."""
    return [(statement, {"rows": rows[start : start + BATCH], **params}) for start in range(0, len(rows), BATCH)]


# ---- connection -------------------------------------------------------------------------------------


def _sanitized_uri(uri: str) -> str:
    """The URI without any user:password part (never shown or logged)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "<invalid NEO4J_URI>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _scrub(text: str, *secrets: str | None) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _uri_secrets(uri: str) -> tuple[str, str | None]:
    """The raw URI and the password of its user-info part, both to be scrubbed from any message."""
    try:
        return uri, urlsplit(uri).password
    except ValueError:
        return uri, None


# ---- the store --------------------------------------------------------------------------------------


class Neo4jBrainStore:
    """`BrainStore` over Neo4j."""

    backend = "neo4j"

    def __init__(self, driver: Any, database: str | None = None, *, secret: str | None = None) -> None:
        self._driver = driver
        self._database = database
        self._secret = secret
        self._vector_dims: int | None = None
        for statement in SCHEMA_STATEMENTS:
            self._write(statement)

    @classmethod
    def from_env(cls) -> Neo4jBrainStore:
        uri = os.environ.get("NEO4J_URI", "").strip()
        if not uri:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR, "backend=neo4j needs NEO4J_URI (and NEO4J_USERNAME / NEO4J_PASSWORD)."
            )
        user = os.environ.get("NEO4J_USERNAME", "neo4j")
        password = os.environ.get("NEO4J_PASSWORD", "")
        if not password and os.environ.get("NEO4J_PASSWORD_FILE"):  # a container secret (compose.yaml)
            try:
                with open(os.environ["NEO4J_PASSWORD_FILE"], encoding="utf-8") as handle:
                    password = handle.read().strip()
            except OSError as exc:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"NEO4J_PASSWORD_FILE cannot be read ({exc.strerror or exc}); check the secret's path.",
                ) from None
        try:
            import neo4j
        except ImportError as exc:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR, f"the neo4j driver is not installed; {install_hint('rag')}."
            ) from exc
        shown = _sanitized_uri(uri)
        try:
            driver = neo4j.GraphDatabase.driver(uri, auth=(user, password), connection_timeout=10)
            driver.verify_connectivity()
        except Exception as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            raw_uri, uri_password = _uri_secrets(uri)
            reason = _scrub(f"{type(exc).__name__}: {first_line}".replace(raw_uri, shown), password, uri_password)
            logger.warning("cannot reach Neo4j at %s: %s", shown, reason)
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"cannot reach Neo4j at {shown} ({reason[:200]}); check NEO4J_URI and the credentials.",
            ) from None
        return cls(driver, os.environ.get("NEO4J_DATABASE") or None, secret=password or None)

    def close(self) -> None:
        self._driver.close()

    # ---- plumbing -------------------------------------------------------------------------------
    def _session(self, read: bool) -> Any:
        import neo4j

        mode = neo4j.READ_ACCESS if read else neo4j.WRITE_ACCESS
        return self._driver.session(database=self._database, default_access_mode=mode)

    def _read(self, statement: str, **params: Any) -> list[dict[str, Any]]:
        def work(tx: Any) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(statement, params)]

        with self._session(read=True) as session:
            return session.execute_read(work)

    def _write(self, statement: str, **params: Any) -> list[dict[str, Any]]:
        def work(tx: Any) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(statement, params)]

        with self._session(read=False) as session:
            return session.execute_write(work)

    def _write_many(self, steps: list[tuple[str, dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """Several statements in ONE transaction (atomic)."""

        def work(tx: Any) -> list[list[dict[str, Any]]]:
            return [[record.data() for record in tx.run(statement, params)] for statement, params in steps]

        with self._session(read=False) as session:
            return session.execute_write(work)

    # ---- projects ---------------------------------------------------------------------------------
    def upsert_project(self, project: Project) -> None:
        self._write(
            UPSERT_PROJECT,
            node_id=project_node_id(project.id),
            id=project.id,
            name=project.name,
            root=project.root,
            type=project.type,
            created_at=project.created_at,
            last_accessed=project.last_accessed,
            last_ingest=project.last_ingest,
            auto_cleanup=project.auto_cleanup,
            retention_days=project.retention_days,
            status=project.status,
            props_json=json.dumps({"type": project.type, "root": project.root}),
        )

    def get_project(self, project_id: str) -> Project | None:
        rows = self._read(GET_PROJECT, id=project_id)
        return project_from(rows[0]["p"]) if rows else None

    def list_projects(self) -> list[Project]:
        return [project_from(row["p"]) for row in self._read(LIST_PROJECTS)]

    def update_project(self, project_id: str, **fields: Any) -> None:
        check_project_fields(fields)
        if fields:
            self._write(UPDATE_PROJECT, id=project_id, fields=fields)

    def delete_project(self, project_id: str) -> int:
        total = 0
        while True:
            removed = self._write(DELETE_PROJECT_BATCH, id=project_id, batch=DELETE_BATCH)[0]["removed"]
            total += removed
            if removed < DELETE_BATCH:
                return total

    # ---- files ----------------------------------------------------------------------------------
    def file_records(self, project_id: str, prefix: str = "") -> dict[str, FileRecord]:
        rows = self._read(FILE_RECORDS, project=project_id, prefix=prefix)
        return {
            r["path"]: FileRecord(r["path"], r["hash"], int(r["size"]), int(r["mtime_ns"]), r["node_id"]) for r in rows
        }

    def update_file_stats(self, project_id: str, items: Sequence[tuple[str, int, int]]) -> None:
        rows = [{"path": rel, "size": size, "mtime": mtime} for rel, size, mtime in items]
        for start in range(0, len(rows), BATCH):
            self._write(UPDATE_FILE_STATS, project=project_id, rows=rows[start : start + BATCH])

    def replace_file(self, project_id: str, parsed: ParsedFile) -> None:
        self.replace_files(project_id, [parsed])

    def replace_files(self, project_id: str, parsed: Sequence[ParsedFile]) -> None:
        if not parsed:
            return
        previous = self._read(PREVIOUS_FILE_IDS, project=project_id, paths=[p.record.path for p in parsed])
        file_ids = sorted({row["id"] for row in previous} | {p.record.node_id for p in parsed})
        keep = [node.id for item in parsed for node in item.nodes]
        steps: list[tuple[str, dict[str, Any]]] = [
            (DELETE_STALE_NODES, {"file_ids": file_ids, "keep": keep}),
            (DELETE_FILE_EDGES, {"file_ids": file_ids}),
        ]
        for label, rows in node_rows_by_label(project_id, parsed).items():
            steps += _batches(upsert_nodes_statement(label), rows)
        for rel_type, rows in edge_rows_by_type(parsed).items():
            steps += _batches(merge_edges_statement(rel_type), rows, project=project_id)
        steps.append((MARK_RELINK, {"project": project_id}))
        self._write_many(steps)

    def remove_paths(self, project_id: str, paths: Iterable[str], *, prefixes: Iterable[str] = ()) -> int:
        paths, prefixes = list(paths), [p for p in prefixes if p]
        if not paths and not prefixes:
            return 0
        removed = self._write(REMOVE_PATHS, project=project_id, paths=paths, prefixes=prefixes)[0]["removed"]
        if removed:
            self._write(MARK_RELINK, project=project_id)
        return int(removed)

    def relink(self, project_id: str) -> int:
        from mcp_sections.shared.brain.sqlite_rows import resolve_module

        modules: dict[str, str] = {}
        paths: dict[str, str] = {}
        for row in self._read(MODULES, project=project_id):
            paths[row["path"]] = row["id"]
            if row["module"]:
                modules.setdefault(row["module"], row["id"])
        imports, links = [], []
        for row in self._read(REFERENCES, project=project_id):
            for target in row["imports"] or []:
                dst = resolve_module(target, modules)
                if dst and dst != row["id"]:
                    imports.append({"src": row["id"], "dst": dst, "derived": True})
            for target in row["links"] or []:
                dst = paths.get(target)
                if dst and dst != row["id"]:
                    links.append({"src": row["id"], "dst": dst, "derived": True})
        steps: list[tuple[str, dict[str, Any]]] = [
            (DELETE_DERIVED, {"project": project_id}),
            (LINK_CALLS, {"project": project_id}),
            (merge_edges_statement("IMPORTS"), {"rows": imports, "project": project_id}),
            (merge_edges_statement("LINKS_TO"), {"rows": links, "project": project_id}),
            (RELINK_DONE, {"project": project_id}),
            (COUNT_DERIVED, {"project": project_id}),
        ]
        return int(self._write_many(steps)[-1][0]["c"])

    def refresh_counts(self, project_id: str) -> int:
        rows = self._write(REFRESH_COUNTS, project=project_id)
        return int(rows[0]["c"]) if rows else 0

    # ---- reading ----------------------------------------------------------------------------------
    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        found = {}
        for start in range(0, len(ids), BATCH):
            for row in self._read(GET_NODES, ids=list(ids[start : start + BATCH])):
                node = node_from(row["n"])
                found[node.id] = node
        return [found[i] for i in ids if i in found]

    def query_entities(self, flt: EntityFilter) -> tuple[list[Node], int]:
        statement, params = query_entities_statement(flt, count=False)
        count_statement, count_params = query_entities_statement(flt, count=True)
        nodes = [node_from(row["n"]) for row in self._read(statement, **params)]
        total = self._read(count_statement, **count_params)[0]["total"]
        return nodes, int(total)

    def neighbors(
        self, node_id: str, types: Sequence[str], direction: str, depth: int, limit: int
    ) -> tuple[list[tuple[Node, int]], list[Edge]]:
        types = [t for t in types if t in RELATIONSHIPS] or list(RELATIONSHIPS)
        rows = self._read(neighbors_statement(types, direction, depth), id=node_id, limit=limit + 1)
        start = self.get_nodes([node_id])
        found = [(start[0], 0)] if start else []
        found += [(node_from(row["n"]), int(row["depth"])) for row in rows if row["n"]["id"] != node_id]
        ids = [n.id for n, _ in found]
        edges = [Edge(r["src"], r["type"], r["dst"]) for r in self._read(EDGES_AMONG, ids=ids, types=types)]
        return found, edges

    def schema(self, project_ids: Sequence[str] | None = None) -> dict[str, Any]:
        scope = {"all": project_ids is None, "projects": list(project_ids or [])}
        labels = {r["name"]: r["c"] for r in self._read(SCHEMA_LABELS, **scope)}
        rels = {r["name"]: r["c"] for r in self._read(SCHEMA_RELATIONSHIPS, **scope)}
        vectors = self._read(SCHEMA_VECTORS, **scope)[0]
        return schema_answer(labels, rels, vectors["vectors"], vectors["embeddable"])

    # ---- search -----------------------------------------------------------------------------------
    def text_search(
        self, query: str, project_ids: Sequence[str] | None, labels: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        from mcp_sections.shared.brain.sqlite_rows import fts_query

        match = fts_query(query)
        if match is None:
            return []
        lucene = match.replace('"', "")  # quoted \w+ terms OR-ed: safe Lucene syntax without quotes
        rows = self._read(
            TEXT_SEARCH,
            query=lucene,
            all=project_ids is None,
            projects=list(project_ids or []),
            labels=list(labels or []),
            limit=limit,
        )
        return [(row["id"], float(row["score"])) for row in rows]

    def scopes_named(self, names: Sequence[str], project_ids: Sequence[str] | None, limit: int) -> list[Node]:
        lowered = list(dict.fromkeys(name.lower() for name in names))
        if not lowered or project_ids == []:
            return []
        rows = self._read(
            SCOPES_NAMED, names=lowered, all=project_ids is None, projects=list(project_ids or []), limit=limit
        )
        return [node_from(row["n"]) for row in rows]

    def filter_text_match(self, ids: Sequence[str], text: str) -> set[str]:
        return {row["id"] for row in self._read(FILTER_TEXT_MATCH, ids=list(ids), needle=text.lower())}

    # ---- embeddings -------------------------------------------------------------------------------
    def pending_embeddings(
        self, model: str, limit: int, project_ids: Sequence[str] | None = None
    ) -> list[tuple[str, str, str]]:
        rows = self._read(PENDING, model=model, limit=limit, all=project_ids is None, projects=list(project_ids or []))
        return [(r["id"], r["text"], r["hash"]) for r in rows]

    def count_pending(self, model: str, project_ids: Sequence[str] | None = None) -> int:
        rows = self._read(COUNT_PENDING, model=model, all=project_ids is None, projects=list(project_ids or []))
        return int(rows[0]["c"])

    def put_vectors(self, model: str, items: Sequence[tuple[str, str, np.ndarray]]) -> int:
        if not items:
            return 0
        dims = len(items[0][2])
        if self._vector_dims != dims:
            self._write(vector_index_statement(dims))
            self._vector_dims = dims
        rows = [{"id": nid, "hash": digest, "vector": [float(x) for x in vector]} for nid, digest, vector in items]
        return int(self._write(PUT_VECTORS, rows=rows, model=model)[0]["written"])

    def vector_search(
        self,
        model: str,
        query: np.ndarray,
        project_ids: Sequence[str] | None,
        labels: Sequence[str] | None,
        limit: int,
    ) -> list[tuple[str, float]]:
        try:
            rows = self._read(
                VECTOR_SEARCH,
                k=min(max(limit * 10, 50), 1000),
                vector=[float(x) for x in query],
                model=model,
                all=project_ids is None,
                projects=list(project_ids or []),
                labels=list(labels or []),
                limit=limit,
            )
        except Exception as exc:  # no vector index yet (nothing embedded): no semantic hits
            if "brain_vectors" in str(exc) or "index" in str(exc).lower():
                return []
            raise
        # Neo4j's cosine score is (1 + cos) / 2; report the cosine like the SQLite backend
        return [(row["id"], 2.0 * float(row["score"]) - 1.0) for row in rows]

    # ---- maintenance ------------------------------------------------------------------------------
    def gc(self) -> dict[str, int]:
        stats = {"nodes": 0, "edges": 0, "refs": 0, "vectors": 0, "files": 0, "cached_embeddings": 0}
        for statement in (GC_FOREIGN_NODES, GC_ORPHAN_NODES):
            while True:
                removed = int(self._write(statement, batch=DELETE_BATCH)[0]["removed"])
                stats["nodes"] += removed
                if removed < DELETE_BATCH:
                    break
        return stats

    def reset_for_tests(self) -> None:
        while int(self._write(RESET, batch=DELETE_BATCH)[0]["removed"]) >= DELETE_BATCH:
            pass

    # ---- run_cypher -------------------------------------------------------------------------------
    def run_read_query(
        self, query: str, parameters: dict[str, Any], *, timeout: float, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """Run a caller's Cypher strictly read-only; returns (rows, truncated)."""
        import neo4j
        from neo4j.exceptions import ClientError, Neo4jError, ServiceUnavailable

        check_read_query(query)
        try:
            with self._session(read=True) as session:
                summary = session.run(neo4j.Query(EXPLAIN_PREFIX + query, timeout=timeout), parameters).consume()
                if summary.query_type != "r":
                    raise ToolFailure(
                        ErrorCode.PERMISSION_DENIED,
                        f"run_cypher only runs read queries; this one is of type {summary.query_type!r} "
                        "(it would write or change the schema).",
                    )

                def work(tx: Any) -> tuple[list[dict[str, Any]], bool]:
                    result = tx.run(neo4j.Query(query, timeout=timeout), parameters)
                    rows: list[dict[str, Any]] = []
                    for record in result:
                        if len(rows) == limit:
                            return rows, True
                        rows.append({key: jsonable(value) for key, value in record.items()})
                    return rows, False

                return session.execute_read(work)
        except ToolFailure:
            raise
        except ServiceUnavailable:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "Neo4j is unavailable; retry later.") from None
        except ClientError as exc:
            message = _scrub(exc.message or str(exc), self._secret)
            if "timeout" in (exc.code or "").lower() or "Terminated" in (exc.code or ""):
                raise ToolFailure(ErrorCode.TIMEOUT, f"the query ran longer than {timeout}s; narrow it.") from None
            raise ToolFailure(ErrorCode.INVALID_INPUT, f"Neo4j refused the query: {message[:500]}") from None
        except Neo4jError as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED, f"Neo4j error: {_scrub(str(exc), self._secret)[:300]}"
            ) from None
