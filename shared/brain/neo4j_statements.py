"""Every Cypher statement the Neo4j brain sends, and the templates that make them.

- Labels and relationship types cannot be query parameters, so they are inlined from the allow-lists of
  `model` only; every value is a parameter.
- Schema: a uniqueness constraint, property indexes, a full-text index (`brain_text`) and a vector index
  (`brain_vectors`, created once the dimension is known), all idempotent (`IF NOT EXISTS`).
- `all_statements()` lists every statement the backend can send (each template expanded over its allow-list),
  so tests can check them with Neo4j's own Cypher parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.brain.model import ALL_PROPERTIES, LABELS, RELATIONSHIPS, EntityFilter

MAX_WALK_DEPTH = 5
EXPLAIN_PREFIX = "EXPLAIN "  # run_cypher asks the server's plan for the query type first

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
        condition, params["name"] = _name_condition(flt.name, flt.name_match)
        where.append(condition)
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


def _name_condition(name: str, name_match: str) -> tuple[str, str]:
    """The condition on `n.name` for `query_entities`' name filter and the value of its `$name`."""
    if name_match == "exact":
        return "n.name = $name", name
    if name_match == "prefix":
        return "toLower(n.name) STARTS WITH $name", name.lower()
    return "toLower(n.name) CONTAINS $name", name.lower()


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
SCOPES_NAMED = (
    "MATCH (n:BrainNode) WHERE n.label = 'Scope' AND toLower(n.name) IN $names "
    "AND ($all OR n.project_id IN $projects) RETURN n LIMIT $limit"
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
        SCOPES_NAMED,
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
