"""The brain on an external Neo4j server (official `neo4j` driver, imported lazily).

- Every node carries the `BrainNode` label plus its own (`File`, `Scope`, ...); ids are the deterministic
  ids of `model.node_id`, written with MERGE in UNWIND batches; one write transaction per batch of files.
- A uniqueness constraint, property indexes, a full-text index (`brain_text`) and a vector index
  (`brain_vectors`, created once the dimension is known) are created idempotently (`IF NOT EXISTS`).
- Reads go through read transactions (`execute_read`); `run_read_query` (the `run_cypher` tool) is
  strictly read-only: deny-list, EXPLAIN query type must be "r", READ access mode, timeout, row cap.
- Labels and relationship types cannot be query parameters, so they are inlined from the allow-lists of
  `model` only; every value is a parameter. `all_statements()` lists every statement this module can
  send (each template expanded), so tests can check them with Neo4j's own Cypher parser.
- Configuration: NEO4J_URI, NEO4J_USERNAME, NEO4J_PASSWORD or NEO4J_PASSWORD_FILE (never logged, never in an
  error), NEO4J_DATABASE.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mcp_sections.shared.brain.cypher_guard import check_read_query
from mcp_sections.shared.brain.model import (
    ALL_PROPERTIES,
    LABELS,
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
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

logger = logging.getLogger("mcp_sections.brain.neo4j")

BATCH = 500
DELETE_BATCH = 5_000
MAX_WALK_DEPTH = 5
_FLAT_PROPERTIES = tuple(sorted(p for p in ALL_PROPERTIES if p not in ("imports",)))

# ---- schema ---------------------------------------------------------------------------------------

SCHEMA_STATEMENTS: tuple[str, ...] = (
    "CREATE CONSTRAINT brain_node_id IF NOT EXISTS FOR (n:BrainNode) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX brain_node_project IF NOT EXISTS FOR (n:BrainNode) ON (n.project_id, n.label)",
    "CREATE INDEX brain_node_name IF NOT EXISTS FOR (n:BrainNode) ON (n.name)",
    "CREATE INDEX brain_node_path IF NOT EXISTS FOR (n:BrainNode) ON (n.project_id, n.path)",
    "CREATE INDEX brain_node_file IF NOT EXISTS FOR (n:BrainNode) ON (n.file_id)",
    "CREATE INDEX brain_project_id IF NOT EXISTS FOR (p:Project) ON (p.project_id)",
    "CREATE FULLTEXT INDEX brain_text IF NOT EXISTS FOR (n:BrainNode) ON EACH [n.name, n.keywords, n.path, n.content]",
)


def vector_index_statement(dimensions: int) -> str:
    if not 1 <= int(dimensions) <= 4096:
        raise ValueError("vector dimensions out of range")
    return (
        "CREATE VECTOR INDEX brain_vectors IF NOT EXISTS FOR (n:BrainNode) ON (n.embedding) "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimensions)}, `vector.similarity_function`: 'cosine'}}}}"
    )


# ---- projects -------------------------------------------------------------------------------------

UPSERT_PROJECT = (
    "MERGE (p:BrainNode:Project {id: $node_id}) "
    "SET p.project_id = $id, p.label = 'Project', p.name = $name, p.root = $root, p.type = $type, "
    "p.created_at = coalesce(p.created_at, $created_at), p.last_accessed = $last_accessed, "
    "p.last_ingest = coalesce(p.last_ingest, $last_ingest), p.auto_cleanup = $auto_cleanup, "
    "p.retention_days = $retention_days, p.status = coalesce(p.status, $status), "
    "p.node_count = coalesce(p.node_count, 0), p.needs_relink = coalesce(p.needs_relink, false), "
    "p.vectors_version = coalesce(p.vectors_version, 0), p.path = '', p.keywords = '', "
    "p.content = $name + ' ' + $root, p.props_json = $props_json"
)
GET_PROJECT = "MATCH (p:Project {project_id: $id}) RETURN p"
LIST_PROJECTS = "MATCH (p:Project) RETURN p ORDER BY p.last_accessed DESC"
UPDATE_PROJECT = "MATCH (p:Project {project_id: $id}) SET p += $fields"
DELETE_PROJECT_BATCH = (
    "MATCH (n:BrainNode {project_id: $id}) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS removed"
)

# ---- files and nodes ------------------------------------------------------------------------------

FILE_RECORDS = (
    "MATCH (f:BrainNode {project_id: $project}) WHERE f.record_hash IS NOT NULL "
    "AND ($prefix = '' OR f.path = $prefix OR f.path STARTS WITH $prefix + '/') "
    "RETURN f.path AS path, f.record_hash AS hash, f.record_size AS size, f.record_mtime AS mtime_ns, f.id AS node_id"
)
UPDATE_FILE_STATS = (
    "UNWIND $rows AS row MATCH (f:BrainNode {project_id: $project, path: row.path}) "
    "WHERE f.record_hash IS NOT NULL SET f.record_size = row.size, f.record_mtime = row.mtime"
)
PREVIOUS_FILE_IDS = (
    "MATCH (f:BrainNode {project_id: $project}) WHERE f.record_hash IS NOT NULL AND f.path IN $paths RETURN f.id AS id"
)
DELETE_STALE_NODES = (
    "MATCH (n:BrainNode) WHERE n.file_id IN $file_ids AND NOT n.id IN $keep DETACH DELETE n RETURN count(*) AS removed"
)
DELETE_FILE_EDGES = "MATCH (n:BrainNode)-[r]->() WHERE n.file_id IN $file_ids DELETE r"


def upsert_nodes_statement(label: str) -> str:
    """MERGE a batch of nodes of one label; an embedding survives only if its text did not change."""
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}")
    return (
        f"UNWIND $rows AS row MERGE (n:BrainNode:{label} {{id: row.id}}) "
        "WITH n, row, n.embedding AS vector, n.embedding_hash AS vector_hash, n.embedding_model AS vector_model "
        "SET n = row.props "
        "SET n.embedding = CASE WHEN vector_hash = row.props.embed_hash THEN vector END, "
        "n.embedding_hash = CASE WHEN vector_hash = row.props.embed_hash THEN vector_hash END, "
        "n.embedding_model = CASE WHEN vector_hash = row.props.embed_hash THEN vector_model END"
    )


def merge_edges_statement(rel_type: str) -> str:
    if rel_type not in RELATIONSHIPS:
        raise ValueError(f"unknown relationship type {rel_type!r}")
    return (
        "UNWIND $rows AS row MATCH (a:BrainNode {id: row.src}) MATCH (b:BrainNode {id: row.dst}) "
        f"MERGE (a)-[r:{rel_type}]->(b) SET r.project_id = $project, r.derived = row.derived"
    )


MARK_RELINK = (
    "MATCH (p:Project {project_id: $project}) SET p.needs_relink = true, p.vectors_version = p.vectors_version + 1"
)
REMOVE_PATHS = (
    "MATCH (n:BrainNode {project_id: $project}) WHERE n.label <> 'Project' AND "
    "(n.path IN $paths OR any(prefix IN $prefixes WHERE n.path = prefix OR n.path STARTS WITH prefix + '/')) "
    "DETACH DELETE n RETURN count(*) AS removed"
)
DELETE_DERIVED = "MATCH (a:BrainNode {project_id: $project})-[r]->() WHERE r.derived = true DELETE r"
LINK_CALLS = (
    "MATCH (s:BrainNode {project_id: $project}) WHERE s.refs_call IS NOT NULL "
    "UNWIND s.refs_call AS name "
    "MATCH (t:Scope {project_id: $project, name: name}) WHERE t.id <> s.id "
    "WITH s, name, collect(t) AS candidates "
    "WITH s, candidates, [c IN candidates WHERE c.file_id = s.file_id] AS local "
    "UNWIND CASE WHEN size(local) > 0 THEN local WHEN size(candidates) <= 3 THEN candidates ELSE [] END AS target "
    "MERGE (s)-[r:CALLS]->(target) SET r.project_id = $project, r.derived = true"
)
MODULES = (
    "MATCH (f:BrainNode {project_id: $project}) WHERE f.label IN ['File', 'WebPage'] "
    "RETURN f.id AS id, f.path AS path, f.module AS module"
)
REFERENCES = (
    "MATCH (n:BrainNode {project_id: $project}) WHERE n.refs_import IS NOT NULL OR n.refs_link IS NOT NULL "
    "RETURN n.id AS id, n.refs_import AS imports, n.refs_link AS links"
)
COUNT_DERIVED = "MATCH (a:BrainNode {project_id: $project})-[r]->() WHERE r.derived = true RETURN count(r) AS c"
RELINK_DONE = "MATCH (p:Project {project_id: $project}) SET p.needs_relink = false"
REFRESH_COUNTS = (
    "MATCH (n:BrainNode {project_id: $project}) WITH count(n) AS c "
    "MATCH (p:Project {project_id: $project}) SET p.node_count = c RETURN c"
)
GET_NODES = "UNWIND $ids AS id MATCH (n:BrainNode {id: id}) RETURN n"

# ---- queries ----------------------------------------------------------------------------------------


def query_entities_statement(flt: EntityFilter, count: bool) -> tuple[str, dict[str, Any]]:
    where = ["true"]
    params: dict[str, Any] = {}
    if flt.label is not None:
        if flt.label not in LABELS:
            raise ValueError(f"unknown label {flt.label!r}")
        where.append("n.label = $label")
        params["label"] = flt.label
    if flt.name:
        if flt.name_match == "exact":
            where.append("n.name = $name")
            params["name"] = flt.name
        elif flt.name_match == "prefix":
            where.append("toLower(n.name) STARTS WITH $name")
            params["name"] = flt.name.lower()
        else:
            where.append("toLower(n.name) CONTAINS $name")
            params["name"] = flt.name.lower()
    if flt.path_prefix:
        where.append("(n.path = $path OR n.path STARTS WITH $path + '/')")
        params["path"] = flt.path_prefix
    if flt.project_ids is not None:
        where.append("n.project_id IN $projects")
        params["projects"] = list(flt.project_ids)
    for index, (key, value) in enumerate(flt.properties.items()):
        if key not in ALL_PROPERTIES:
            raise ValueError(f"unknown property {key!r}")
        where.append(f"n[$key{index}] = $value{index}")
        params[f"key{index}"] = key
        params[f"value{index}"] = value
    clause = " AND ".join(where)
    if count:
        return f"MATCH (n:BrainNode) WHERE {clause} RETURN count(n) AS total", params
    params.update(skip=flt.offset, limit=flt.limit)
    return (
        f"MATCH (n:BrainNode) WHERE {clause} RETURN n "
        "ORDER BY n.project_id, n.path, n.start_line, n.id SKIP $skip LIMIT $limit",
        params,
    )


def neighbors_statement(types: Sequence[str], direction: str, depth: int) -> str:
    types = [t for t in types if t in RELATIONSHIPS] or list(RELATIONSHIPS)
    depth = max(1, min(int(depth), MAX_WALK_DEPTH))
    pattern = f"[:{'|'.join(types)}*1..{depth}]"
    left, right = {"out": ("-", "->"), "in": ("<-", "-"), "both": ("-", "-")}[direction]
    return (
        f"MATCH path = (s:BrainNode {{id: $id}}){left}{pattern}{right}(n:BrainNode) "
        "WITH n, min(length(path)) AS depth RETURN n, depth ORDER BY depth, n.id LIMIT $limit"
    )


EDGES_AMONG = (
    "MATCH (a:BrainNode)-[r]->(b:BrainNode) WHERE a.id IN $ids AND b.id IN $ids AND type(r) IN $types "
    "RETURN a.id AS src, type(r) AS type, b.id AS dst"
)
SCHEMA_LABELS = "MATCH (n:BrainNode) WHERE $all OR n.project_id IN $projects RETURN n.label AS name, count(*) AS c"
SCHEMA_RELATIONSHIPS = (
    "MATCH (a:BrainNode)-[r]->() WHERE $all OR a.project_id IN $projects RETURN type(r) AS name, count(*) AS c"
)
SCHEMA_VECTORS = (
    "MATCH (n:BrainNode) WHERE ($all OR n.project_id IN $projects) "
    "RETURN count(n.embedding) AS vectors, count(n.embed_hash) AS embeddable"
)
TEXT_SEARCH = (
    "CALL db.index.fulltext.queryNodes('brain_text', $query) YIELD node, score "
    "WHERE ($all OR node.project_id IN $projects) "
    "AND ((size($labels) = 0 AND node.label <> 'Project') OR node.label IN $labels) "
    "RETURN node.id AS id, score ORDER BY score DESC LIMIT $limit"
)
FILTER_TEXT_MATCH = (
    "MATCH (n:BrainNode) WHERE n.id IN $ids AND (toLower(n.name) CONTAINS $needle "
    "OR toLower(n.path) CONTAINS $needle OR toLower(n.content) CONTAINS $needle) RETURN n.id AS id"
)
PENDING = (
    "MATCH (n:BrainNode) WHERE n.embed_hash IS NOT NULL AND ($all OR n.project_id IN $projects) "
    "AND (n.embedding IS NULL OR n.embedding_model <> $model OR n.embedding_hash <> n.embed_hash) "
    "RETURN n.id AS id, n.embed_text AS text, n.embed_hash AS hash "
    "ORDER BY CASE n.label WHEN 'Scope' THEN 0 WHEN 'DocumentSection' THEN 1 ELSE 2 END, n.id LIMIT $limit"
)
COUNT_PENDING = (
    "MATCH (n:BrainNode) WHERE n.embed_hash IS NOT NULL AND ($all OR n.project_id IN $projects) "
    "AND (n.embedding IS NULL OR n.embedding_model <> $model OR n.embedding_hash <> n.embed_hash) "
    "RETURN count(n) AS c"
)
PUT_VECTORS = (
    "UNWIND $rows AS row MATCH (n:BrainNode {id: row.id}) WHERE n.embed_hash = row.hash "
    "SET n.embedding = row.vector, n.embedding_model = $model, n.embedding_hash = row.hash "
    "RETURN count(n) AS written"
)
VECTOR_SEARCH = (
    "CALL db.index.vector.queryNodes('brain_vectors', $k, $vector) YIELD node, score "
    "WHERE node.embedding_model = $model AND ($all OR node.project_id IN $projects) "
    "AND (size($labels) = 0 OR node.label IN $labels) "
    "RETURN node.id AS id, score ORDER BY score DESC LIMIT $limit"
)
GC_FOREIGN_NODES = (
    "MATCH (n:BrainNode) WHERE NOT n:Project AND NOT EXISTS { MATCH (p:Project {project_id: n.project_id}) } "
    "WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS removed"
)
GC_ORPHAN_NODES = (
    "MATCH (n:BrainNode) WHERE n.file_id IS NOT NULL AND n.file_id <> n.id "
    "AND NOT EXISTS { MATCH (f:BrainNode {id: n.file_id}) } "
    "WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS removed"
)
RESET = "MATCH (n:BrainNode) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS removed"


def all_statements() -> list[str]:
    """Every statement this backend can send (templates expanded over their allow-lists)."""
    statements = [*SCHEMA_STATEMENTS, vector_index_statement(384)]
    statements += [
        UPSERT_PROJECT,
        GET_PROJECT,
        LIST_PROJECTS,
        UPDATE_PROJECT,
        DELETE_PROJECT_BATCH,
        FILE_RECORDS,
        UPDATE_FILE_STATS,
        PREVIOUS_FILE_IDS,
        DELETE_STALE_NODES,
        DELETE_FILE_EDGES,
        MARK_RELINK,
        REMOVE_PATHS,
        DELETE_DERIVED,
        LINK_CALLS,
        MODULES,
        REFERENCES,
        COUNT_DERIVED,
        RELINK_DONE,
        REFRESH_COUNTS,
        GET_NODES,
        EDGES_AMONG,
        SCHEMA_LABELS,
        SCHEMA_RELATIONSHIPS,
        SCHEMA_VECTORS,
        TEXT_SEARCH,
        FILTER_TEXT_MATCH,
        PENDING,
        COUNT_PENDING,
        PUT_VECTORS,
        VECTOR_SEARCH,
        GC_FOREIGN_NODES,
        GC_ORPHAN_NODES,
        RESET,
        EXPLAIN_PREFIX + "MATCH (n) RETURN n",
    ]
    statements += [upsert_nodes_statement(label) for label in LABELS]
    statements += [merge_edges_statement(rel) for rel in RELATIONSHIPS]
    for direction in ("out", "in", "both"):
        for depth in (1, MAX_WALK_DEPTH):
            statements.append(neighbors_statement([], direction, depth))
            statements.append(neighbors_statement(["CALLS", "DEFINES"], direction, depth))
    full = EntityFilter(
        label="Scope",
        name="x",
        name_match="contains",
        path_prefix="a",
        project_ids=["p"],
        properties={"kind": "method", "language": "go"},
    )
    for flt in (EntityFilter(), full, EntityFilter(name="x", name_match="prefix"), EntityFilter(name="x")):
        for count in (False, True):
            statements.append(query_entities_statement(flt, count)[0])
    return statements


# ---- run_cypher guard -------------------------------------------------------------------------------

EXPLAIN_PREFIX = "EXPLAIN "


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
        return _project(rows[0]["p"]) if rows else None

    def list_projects(self) -> list[Project]:
        return [_project(row["p"]) for row in self._read(LIST_PROJECTS)]

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
        by_label: dict[str, list[dict[str, Any]]] = {}
        for item in parsed:
            refs: dict[str, dict[str, list[str]]] = {}
            for ref in item.refs:
                refs.setdefault(ref.src, {}).setdefault(f"refs_{ref.kind}", []).append(ref.target)
            for node in item.nodes:
                props = _node_properties(node, project_id, refs.get(node.id, {}))
                if node.id == item.record.node_id:
                    props.update(
                        record_hash=item.record.hash, record_size=item.record.size, record_mtime=item.record.mtime_ns
                    )
                by_label.setdefault(node.label, []).append({"id": node.id, "props": props})
        for label, rows in by_label.items():
            for start in range(0, len(rows), BATCH):
                steps.append((upsert_nodes_statement(label), {"rows": rows[start : start + BATCH]}))
        by_type: dict[str, list[dict[str, Any]]] = {}
        for item in parsed:
            for edge in item.edges:
                by_type.setdefault(edge.type, []).append({"src": edge.src, "dst": edge.dst, "derived": False})
        for rel_type, rows in by_type.items():
            for start in range(0, len(rows), BATCH):
                steps.append(
                    (merge_edges_statement(rel_type), {"rows": rows[start : start + BATCH], "project": project_id})
                )
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
                node = _node(row["n"])
                found[node.id] = node
        return [found[i] for i in ids if i in found]

    def query_entities(self, flt: EntityFilter) -> tuple[list[Node], int]:
        statement, params = query_entities_statement(flt, count=False)
        count_statement, count_params = query_entities_statement(flt, count=True)
        nodes = [_node(row["n"]) for row in self._read(statement, **params)]
        total = self._read(count_statement, **count_params)[0]["total"]
        return nodes, int(total)

    def neighbors(
        self, node_id: str, types: Sequence[str], direction: str, depth: int, limit: int
    ) -> tuple[list[tuple[Node, int]], list[Edge]]:
        types = [t for t in types if t in RELATIONSHIPS] or list(RELATIONSHIPS)
        rows = self._read(neighbors_statement(types, direction, depth), id=node_id, limit=limit + 1)
        start = self.get_nodes([node_id])
        found = [(start[0], 0)] if start else []
        found += [(_node(row["n"]), int(row["depth"])) for row in rows if row["n"]["id"] != node_id]
        ids = [n.id for n, _ in found]
        edges = [Edge(r["src"], r["type"], r["dst"]) for r in self._read(EDGES_AMONG, ids=ids, types=types)]
        return found, edges

    def schema(self, project_ids: Sequence[str] | None = None) -> dict[str, Any]:
        from mcp_sections.shared.brain.model import LABEL_PROPERTIES

        scope = {"all": project_ids is None, "projects": list(project_ids or [])}
        labels = {r["name"]: r["c"] for r in self._read(SCHEMA_LABELS, **scope)}
        rels = {r["name"]: r["c"] for r in self._read(SCHEMA_RELATIONSHIPS, **scope)}
        vectors = self._read(SCHEMA_VECTORS, **scope)[0]
        return {
            "labels": {label: int(labels.get(label, 0)) for label in LABELS},
            "relationships": {rel: int(rels.get(rel, 0)) for rel in RELATIONSHIPS},
            "properties": {label: list(LABEL_PROPERTIES[label]) for label in LABELS},
            "vectors": int(vectors["vectors"]),
            "embeddable": int(vectors["embeddable"]),
        }

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
                        rows.append({key: _jsonable(value) for key, value in record.items()})
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


# ---- conversions -------------------------------------------------------------------------------------


def _node_properties(node: Node, project_id: str, refs: dict[str, list[str]]) -> dict[str, Any]:
    props: dict[str, Any] = {
        "id": node.id,
        "label": node.label,
        "project_id": project_id,
        "name": node.name,
        "path": node.path,
        "file_id": node.file_id,
        "start_line": node.start_line,
        "end_line": node.end_line,
        "content": node.content,
        "keywords": node.keywords,
        "embed_text": node.embed_text,
        "embed_hash": node.embed_hash,
        "props_json": json.dumps(node.props, ensure_ascii=False, default=str),
        **refs,
    }
    for key in _FLAT_PROPERTIES:
        value = node.props.get(key)
        if isinstance(value, str | int | float | bool):
            props[key] = value
    return {key: value for key, value in props.items() if value is not None}


def _node(data: Any) -> Node:
    props = dict(data)
    return Node(
        id=props["id"],
        label=props.get("label", ""),
        project_id=props.get("project_id", ""),
        name=props.get("name", ""),
        path=props.get("path", ""),
        file_id=props.get("file_id"),
        start_line=props.get("start_line"),
        end_line=props.get("end_line"),
        content=props.get("content", ""),
        keywords=props.get("keywords", ""),
        embed_text=props.get("embed_text"),
        props=json.loads(props.get("props_json") or "{}"),
    )


def _project(data: Any) -> Project:
    props = dict(data)
    return Project(
        id=props["project_id"],
        name=str(props.get("name") or props["project_id"]),
        root=props.get("root", ""),
        type=props.get("type", "project"),
        created_at=float(props.get("created_at") or time.time()),
        last_accessed=float(props.get("last_accessed") or 0),
        last_ingest=props.get("last_ingest"),
        auto_cleanup=bool(props.get("auto_cleanup")),
        retention_days=float(props.get("retention_days") or 30),
        node_count=int(props.get("node_count") or 0),
        status=props.get("status") or "new",
        needs_relink=bool(props.get("needs_relink")),
    )


def _jsonable(value: Any) -> Any:
    """Driver values → JSON: nodes/relationships as dicts (without embeddings), paths as lists."""
    kind = type(value).__name__
    if kind == "Node":
        props = {k: v for k, v in dict(value).items() if k not in ("embedding", "props_json", "embed_text")}
        return {"labels": sorted(value.labels), "properties": {k: _jsonable(v) for k, v in props.items()}}
    if kind == "Relationship":
        return {"type": value.type, "properties": {k: _jsonable(v) for k, v in dict(value).items()}}
    if kind == "Path":
        return {
            "nodes": [_jsonable(n) for n in value.nodes],
            "relationships": [_jsonable(r) for r in value.relationships],
        }
    if isinstance(value, list):
        return [_jsonable(v) for v in value[:1000]]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
