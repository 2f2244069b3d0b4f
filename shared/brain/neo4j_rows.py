"""The Neo4j brain's rows: a parsed file's nodes and edges as statement parameters, records back as the model.

- A node is stored with its model fields, its flat properties (str, int, float or bool) as properties of their own,
  all its properties as JSON (`props_json`), and its references as `refs_<kind>` lists (what `relink` resolves).
- A file's node also carries the file's record (hash, size, mtime), written in the same transaction as its nodes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from mcp_sections.shared.brain.model import ALL_PROPERTIES, Node, ParsedFile, Project

_FLAT_PROPERTIES = tuple(sorted(p for p in ALL_PROPERTIES if p not in ("imports",)))


def node_rows_by_label(project_id: str, parsed: Sequence[ParsedFile]) -> dict[str, list[dict[str, Any]]]:
    """The `{id, props}` rows of the files' nodes, by label (one MERGE statement per label)."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for item in parsed:
        refs: dict[str, dict[str, list[str]]] = {}
        for ref in item.refs:
            refs.setdefault(ref.src, {}).setdefault(f"refs_{ref.kind}", []).append(ref.target)
        for node in item.nodes:
            props = node_properties(node, project_id, refs.get(node.id, {}))
            if node.id == item.record.node_id:
                props.update(
                    record_hash=item.record.hash, record_size=item.record.size, record_mtime=item.record.mtime_ns
                )
            by_label.setdefault(node.label, []).append({"id": node.id, "props": props})
    return by_label


def edge_rows_by_type(parsed: Sequence[ParsedFile]) -> dict[str, list[dict[str, Any]]]:
    """The `{src, dst, derived}` rows of the files' own edges (never derived), by relationship type."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for item in parsed:
        for edge in item.edges:
            by_type.setdefault(edge.type, []).append({"src": edge.src, "dst": edge.dst, "derived": False})
    return by_type


def node_properties(node: Node, project_id: str, refs: dict[str, list[str]]) -> dict[str, Any]:
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


def node_from(data: Any) -> Node:
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


def project_from(data: Any) -> Project:
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


def jsonable(value: Any) -> Any:
    """Driver values → JSON: nodes/relationships as dicts (without embeddings), paths as lists."""
    kind = type(value).__name__
    if kind == "Node":
        props = {k: v for k, v in dict(value).items() if k not in ("embedding", "props_json", "embed_text")}
        return {"labels": sorted(value.labels), "properties": {k: jsonable(v) for k, v in props.items()}}
    if kind == "Relationship":
        return {"type": value.type, "properties": {k: jsonable(v) for k, v in dict(value).items()}}
    if kind == "Path":
        return {
            "nodes": [jsonable(n) for n in value.nodes],
            "relationships": [jsonable(r) for r in value.relationships],
        }
    if isinstance(value, list):
        return [jsonable(v) for v in value[:1000]]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
