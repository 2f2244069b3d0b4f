"""The embedded brain: one SQLite file with FTS5 text search, float32 vectors and recursive-CTE traversal.

- `shared.store.sqlite.Database` gives WAL, `synchronous=FULL` and `BEGIN IMMEDIATE` writers, so several
  processes can ingest and search the same brain; every file is replaced in one transaction together
  with its `files` row (hash), so a killed ingest leaves whole files and resumes where it stopped.
- Text search: an external-content FTS5 table over (name, keywords, path, content), kept in sync by
  triggers, ranked with bm25.
- Vectors: one float32 BLOB per node, tagged with the hash of the text it embeds and the model. Search
  is a numpy brute-force dot product over per-project matrices cached in memory and reloaded only
  when that project's `vectors_version` (bumped in the same transaction as any vector change) moved,
  which keeps other processes' writes visible.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

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
from mcp_sections.shared.brain.schema_answer import schema_answer
from mcp_sections.shared.brain.sqlite_rows import (
    BM25_WEIGHTS,
    MAX_WALK_ROWS,
    chunks,
    fts_query,
    node_from_row,
    placeholders,
    project_from_row,
    resolve_module,
    under,
)
from mcp_sections.shared.brain.sqlite_schema import MIGRATIONS
from mcp_sections.shared.brain.sqlite_vectors import SQLiteVectors
from mcp_sections.shared.store.sqlite import Database


class SQLiteBrainStore(SQLiteVectors):
    """`BrainStore` over one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: Path) -> None:
        self.database = Database(path, MIGRATIONS)
        self._vector_caches = {}
        self._vector_caches_lock = threading.Lock()

    def close(self) -> None:
        self.database.close()

    # ---- projects ---------------------------------------------------------------------------------
    def upsert_project(self, project: Project) -> None:
        with self.database.write() as db:
            db.execute(
                "INSERT INTO projects(id, name, root, type, created_at, last_accessed, last_ingest, auto_cleanup, "
                "retention_days, node_count, status) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                "name=excluded.name, root=excluded.root, type=excluded.type, last_accessed=excluded.last_accessed, "
                "auto_cleanup=excluded.auto_cleanup, retention_days=excluded.retention_days",
                (
                    project.id,
                    project.name,
                    project.root,
                    project.type,
                    project.created_at,
                    project.last_accessed,
                    project.last_ingest,
                    int(project.auto_cleanup),
                    project.retention_days,
                    project.node_count,
                    project.status,
                ),
            )
            pid = project_node_id(project.id)
            props = json.dumps({"type": project.type, "root": project.root})
            db.execute(
                "INSERT INTO nodes(id, label, project_id, name, path, content, props) VALUES (?,?,?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET name=excluded.name, content=excluded.content, props=excluded.props",
                (pid, "Project", project.id, project.name, "", f"{project.name} {project.root}", props),
            )

    def get_project(self, project_id: str) -> Project | None:
        with self.database.read() as db:
            row = db.execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
        return project_from_row(row) if row else None

    def list_projects(self) -> list[Project]:
        with self.database.read() as db:
            rows = db.execute("SELECT * FROM projects ORDER BY last_accessed DESC").fetchall()
        return [project_from_row(row) for row in rows]

    def update_project(self, project_id: str, **fields: Any) -> None:
        check_project_fields(fields)
        if not fields:
            return
        assignments = ", ".join(f"{key} = ?" for key in fields)
        values = [int(v) if isinstance(v, bool) else v for v in fields.values()]
        with self.database.write() as db:
            db.execute(f"UPDATE projects SET {assignments} WHERE id = ?", [*values, project_id])

    def delete_project(self, project_id: str) -> int:
        with self.database.write() as db:
            removed = db.execute("DELETE FROM nodes WHERE project_id = ?", (project_id,)).rowcount
            for table in ("edges", "refs", "files", "vectors"):
                db.execute(f"DELETE FROM {table} WHERE project_id = ?", (project_id,))
            db.execute("DELETE FROM projects WHERE id = ?", (project_id,))
        self._drop_matrices(project_id)
        return removed

    # ---- files --------------------------------------------------------------------------------------
    def file_records(self, project_id: str, prefix: str = "") -> dict[str, FileRecord]:
        with self.database.read() as db:
            if prefix:
                rows = db.execute(
                    f"SELECT * FROM files WHERE project_id = ? AND {under('path')}",
                    (project_id, prefix, prefix, prefix),
                ).fetchall()
            else:
                rows = db.execute("SELECT * FROM files WHERE project_id = ?", (project_id,)).fetchall()
        return {
            row["path"]: FileRecord(row["path"], row["hash"], row["size"], row["mtime_ns"], row["node_id"])
            for row in rows
        }

    def update_file_stats(self, project_id: str, items: Sequence[tuple[str, int, int]]) -> None:
        """Remember the new (size, mtime) of files whose content did not change (touched, copied back)."""
        with self.database.write() as db:
            db.executemany(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE project_id = ? AND path = ?",
                [(size, mtime, project_id, rel) for rel, size, mtime in items],
            )

    def replace_file(self, project_id: str, parsed: ParsedFile) -> None:
        self.replace_files(project_id, [parsed])

    def replace_files(self, project_id: str, parsed: Sequence[ParsedFile]) -> None:
        """Replace each file's nodes, edges, refs and record, all files in one transaction."""
        if not parsed:
            return
        vectors_dropped = 0
        with self.database.write() as db:
            for item in parsed:
                vectors_dropped += self._replace_one(db, project_id, item)
            db.execute("UPDATE projects SET needs_relink = 1 WHERE id = ?", (project_id,))
            if vectors_dropped:
                db.execute("UPDATE projects SET vectors_version = vectors_version + 1 WHERE id = ?", (project_id,))

    def _replace_one(self, db: sqlite3.Connection, project_id: str, item: ParsedFile) -> int:
        record = item.record
        previous = db.execute(
            "SELECT node_id FROM files WHERE project_id = ? AND path = ?", (project_id, record.path)
        ).fetchone()
        file_ids = {record.node_id} | ({previous["node_id"]} if previous else set())
        old_ids: list[str] = []
        for file_id in file_ids:
            old_ids += [r[0] for r in db.execute("SELECT id FROM nodes WHERE file_id = ?", (file_id,))]
        self._delete_nodes(db, old_ids, file_ids, keep_vectors=True)
        db.executemany(
            "INSERT INTO nodes(id, label, project_id, name, path, file_id, start_line, end_line, content, keywords, "
            "embed_text, embed_hash, props) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
            "label=excluded.label, name=excluded.name, path=excluded.path, file_id=excluded.file_id, "
            "start_line=excluded.start_line, end_line=excluded.end_line, content=excluded.content, "
            "keywords=excluded.keywords, embed_text=excluded.embed_text, embed_hash=excluded.embed_hash, "
            "props=excluded.props",
            [
                (
                    n.id,
                    n.label,
                    project_id,
                    n.name,
                    n.path,
                    n.file_id,
                    n.start_line,
                    n.end_line,
                    n.content,
                    n.keywords,
                    n.embed_text,
                    n.embed_hash,
                    json.dumps(n.props, ensure_ascii=False, default=str),
                )
                for n in item.nodes
            ],
        )
        db.executemany(
            "INSERT OR IGNORE INTO edges(src, type, dst, project_id, file_id, derived) VALUES (?,?,?,?,?,0)",
            [(e.src, e.type, e.dst, project_id, record.node_id) for e in item.edges],
        )
        db.executemany(
            "INSERT INTO refs(src, kind, target, project_id, file_id) VALUES (?,?,?,?,?)",
            [(r.src, r.kind, r.target, project_id, record.node_id) for r in item.refs],
        )
        db.execute(
            "INSERT INTO files(project_id, path, hash, size, mtime_ns, node_id) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(project_id, path) DO UPDATE SET hash=excluded.hash, size=excluded.size, "
            "mtime_ns=excluded.mtime_ns, node_id=excluded.node_id",
            (project_id, record.path, record.hash, record.size, record.mtime_ns, record.node_id),
        )
        # Vectors stay valid only for nodes that still exist with the same embedded text.
        dropped = 0
        for chunk in chunks(old_ids):
            dropped += db.execute(
                f"DELETE FROM vectors WHERE node_id IN ({placeholders(len(chunk))}) AND NOT EXISTS "
                "(SELECT 1 FROM nodes n WHERE n.id = vectors.node_id AND n.embed_hash = vectors.embed_hash)",
                list(chunk),
            ).rowcount
        return dropped

    def _delete_nodes(
        self, db: sqlite3.Connection, ids: Sequence[str], file_ids: Iterable[str], *, keep_vectors: bool
    ) -> int:
        removed = 0
        for file_id in file_ids:
            db.execute("DELETE FROM edges WHERE file_id = ?", (file_id,))
            db.execute("DELETE FROM refs WHERE file_id = ?", (file_id,))
        for chunk in chunks(ids):
            marks = placeholders(len(chunk))
            db.execute(f"DELETE FROM edges WHERE src IN ({marks})", list(chunk))
            db.execute(f"DELETE FROM edges WHERE dst IN ({marks})", list(chunk))
            removed += db.execute(f"DELETE FROM nodes WHERE id IN ({marks})", list(chunk)).rowcount
            if not keep_vectors:
                db.execute(f"DELETE FROM vectors WHERE node_id IN ({marks})", list(chunk))
        return removed

    def remove_paths(self, project_id: str, paths: Iterable[str], *, prefixes: Iterable[str] = ()) -> int:
        """Remove files (exact relative paths) and everything under directory prefixes; returns nodes removed."""
        paths, prefixes = list(paths), [p for p in prefixes if p]
        removed = 0
        with self.database.write() as db:
            records: list[tuple[str, str]] = []
            for chunk in chunks(paths):
                records += db.execute(
                    f"SELECT path, node_id FROM files WHERE project_id = ? AND path IN ({placeholders(len(chunk))})",
                    [project_id, *chunk],
                ).fetchall()
            for prefix in prefixes:
                records += db.execute(
                    f"SELECT path, node_id FROM files WHERE project_id = ? AND {under('path')}",
                    (project_id, prefix, prefix, prefix),
                ).fetchall()
            # Nodes without a file record (inline snippets, web pages) are matched by their path too.
            extra = [(p, None) for p in paths]
            for path, file_id in [*records, *extra]:
                if file_id is not None:
                    ids = [r[0] for r in db.execute("SELECT id FROM nodes WHERE file_id = ?", (file_id,))]
                    removed += self._delete_nodes(db, ids, [file_id], keep_vectors=False)
                    db.execute("DELETE FROM files WHERE project_id = ? AND path = ?", (project_id, path))
                else:
                    ids = [
                        r[0]
                        for r in db.execute(
                            "SELECT id FROM nodes WHERE project_id = ? AND path = ? AND label != 'Project'",
                            (project_id, path),
                        )
                    ]
                    removed += self._delete_nodes(db, ids, [], keep_vectors=False)
            for prefix in prefixes:
                ids = [
                    r[0]
                    for r in db.execute(
                        f"SELECT id FROM nodes WHERE project_id = ? AND label != 'Project' AND {under('path')}",
                        (project_id, prefix, prefix, prefix),
                    )
                ]
                removed += self._delete_nodes(db, ids, ids, keep_vectors=False)
            if removed:
                db.execute(
                    "UPDATE projects SET needs_relink = 1, vectors_version = vectors_version + 1 WHERE id = ?",
                    (project_id,),
                )
        return removed

    def relink(self, project_id: str) -> int:
        """Recompute the derived edges (CALLS, IMPORTS, LINKS_TO) of a project from its references."""
        with self.database.write() as db:
            db.execute("DELETE FROM edges WHERE project_id = ? AND derived = 1", (project_id,))
            db.execute(
                "INSERT OR IGNORE INTO edges(src, type, dst, project_id, file_id, derived) "
                "SELECT DISTINCT r.src, 'CALLS', n.id, r.project_id, NULL, 1 FROM refs r "
                "JOIN nodes n ON n.project_id = r.project_id AND n.label = 'Scope' AND n.name = r.target "
                "WHERE r.project_id = ? AND r.kind = 'call' AND n.id != r.src AND ("
                " n.file_id = r.file_id OR ("
                "  NOT EXISTS (SELECT 1 FROM nodes s WHERE s.project_id = r.project_id AND s.label = 'Scope' "
                "   AND s.name = r.target AND s.file_id = r.file_id)"
                "  AND (SELECT count(*) FROM nodes m WHERE m.project_id = r.project_id AND m.label = 'Scope' "
                "   AND m.name = r.target) <= 3))",
                (project_id,),
            )
            modules: dict[str, str] = {}
            paths: dict[str, str] = {}
            for row in db.execute(
                "SELECT id, path, json_extract(props, '$.module') AS module FROM nodes "
                "WHERE project_id = ? AND label IN ('File', 'WebPage')",
                (project_id,),
            ):
                paths[row["path"]] = row["id"]
                if row["module"]:
                    modules.setdefault(row["module"], row["id"])
            rows: list[tuple[str, str, str, str]] = []
            for ref in db.execute(
                "SELECT src, kind, target FROM refs WHERE project_id = ? AND kind IN ('import', 'link')",
                (project_id,),
            ):
                if ref["kind"] == "link":
                    target = paths.get(ref["target"])
                    kind = "LINKS_TO"
                else:
                    target = resolve_module(ref["target"], modules)
                    kind = "IMPORTS"
                if target and target != ref["src"]:
                    rows.append((ref["src"], kind, target, project_id))
            db.executemany(
                "INSERT OR IGNORE INTO edges(src, type, dst, project_id, file_id, derived) VALUES (?,?,?,?,NULL,1)",
                rows,
            )
            count = db.execute(
                "SELECT count(*) FROM edges WHERE project_id = ? AND derived = 1", (project_id,)
            ).fetchone()[0]
            db.execute("UPDATE projects SET needs_relink = 0 WHERE id = ?", (project_id,))
        return count

    def refresh_counts(self, project_id: str) -> int:
        with self.database.write() as db:
            count = db.execute("SELECT count(*) FROM nodes WHERE project_id = ?", (project_id,)).fetchone()[0]
            db.execute("UPDATE projects SET node_count = ? WHERE id = ?", (count, project_id))
        return count

    # ---- reading ------------------------------------------------------------------------------------
    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        found: dict[str, Node] = {}
        with self.database.read() as db:
            for chunk in chunks(list(ids)):
                for row in db.execute(f"SELECT * FROM nodes WHERE id IN ({placeholders(len(chunk))})", list(chunk)):
                    found[row["id"]] = node_from_row(row)
        return [found[i] for i in ids if i in found]

    def query_entities(self, flt: EntityFilter) -> tuple[list[Node], int]:
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if flt.label is not None:
            if flt.label not in LABELS:
                raise ValueError(f"unknown label {flt.label!r}")
            where.append("label = ?")
            params.append(flt.label)
        if flt.name:
            if flt.name_match == "exact":
                where.append("name = ?")
                params.append(flt.name)
            else:
                needle = flt.name.lower()
                where.append(
                    "substr(lower(name), 1, length(?)) = ?"
                    if flt.name_match == "prefix"
                    else "instr(lower(name), ?) > 0"
                )
                params += [needle, needle] if flt.name_match == "prefix" else [needle]
        if flt.path_prefix:
            where.append(under("path"))
            params += [flt.path_prefix] * 3
        if flt.project_ids is not None:
            where.append(f"project_id IN ({placeholders(len(flt.project_ids))})" if flt.project_ids else "0")
            params += list(flt.project_ids)
        for key, value in flt.properties.items():
            if key not in ALL_PROPERTIES:
                raise ValueError(f"unknown property {key!r}")
            where.append("json_extract(props, ?) = ?")
            params += [f"$.{key}", int(value) if isinstance(value, bool) else value]
        clause = " AND ".join(where)
        with self.database.read() as db:
            total = db.execute(f"SELECT count(*) FROM nodes WHERE {clause}", params).fetchone()[0]
            rows = db.execute(
                f"SELECT * FROM nodes WHERE {clause} ORDER BY project_id, path, start_line, id LIMIT ? OFFSET ?",
                [*params, flt.limit, flt.offset],
            ).fetchall()
        return [node_from_row(row) for row in rows], total

    def neighbors(
        self, node_id: str, types: Sequence[str], direction: str, depth: int, limit: int
    ) -> tuple[list[tuple[Node, int]], list[Edge]]:
        types = [t for t in types if t in RELATIONSHIPS] or list(RELATIONSHIPS)
        tmarks = placeholders(len(types))
        steps = []
        params: list[Any] = [node_id]
        if direction in ("out", "both"):
            steps.append(
                f"SELECT e.dst, w.depth + 1 FROM walk w JOIN edges e ON e.src = w.id "
                f"WHERE w.depth < ? AND e.type IN ({tmarks})"
            )
            params += [depth, *types]
        if direction in ("in", "both"):
            steps.append(
                f"SELECT e.src, w.depth + 1 FROM walk w JOIN edges e ON e.dst = w.id "
                f"WHERE w.depth < ? AND e.type IN ({tmarks})"
            )
            params += [depth, *types]
        sql = (
            "WITH RECURSIVE walk(id, depth) AS (SELECT ?, 0 UNION "
            + " UNION ".join(steps)
            + f" LIMIT {MAX_WALK_ROWS}) "
            "SELECT id, min(depth) AS depth FROM walk GROUP BY id ORDER BY depth, id LIMIT ?"
        )
        with self.database.read() as db:
            found = db.execute(sql, [*params, limit + 1]).fetchall()
            depths = {row["id"]: row["depth"] for row in found}
            ids = list(depths)
            rows = {}
            for chunk in chunks(ids):
                for row in db.execute(f"SELECT * FROM nodes WHERE id IN ({placeholders(len(chunk))})", list(chunk)):
                    rows[row["id"]] = node_from_row(row)
            edges: list[Edge] = []
            for chunk in chunks(ids):
                marks = placeholders(len(chunk))
                for row in db.execute(
                    f"SELECT src, type, dst FROM edges WHERE src IN ({marks}) AND type IN ({tmarks})",
                    [*chunk, *types],
                ):
                    if row["dst"] in depths:
                        edges.append(Edge(row["src"], row["type"], row["dst"]))
        nodes = [(rows[i], depths[i]) for i in ids if i in rows]
        return nodes, edges

    def schema(self, project_ids: Sequence[str] | None = None) -> dict[str, Any]:
        where, params = "", []
        if project_ids is not None:
            where = f"WHERE project_id IN ({placeholders(len(project_ids))})" if project_ids else "WHERE 0"
            params = list(project_ids)
        with self.database.read() as db:
            labels = {
                r[0]: r[1] for r in db.execute(f"SELECT label, count(*) FROM nodes {where} GROUP BY label", params)
            }
            rels = {r[0]: r[1] for r in db.execute(f"SELECT type, count(*) FROM edges {where} GROUP BY type", params)}
            vectors = db.execute(f"SELECT count(*) FROM vectors {where}", params).fetchone()[0]
            embeddable = db.execute(
                f"SELECT count(*) FROM nodes {where} {'AND' if where else 'WHERE'} embed_hash IS NOT NULL", params
            ).fetchone()[0]
        return schema_answer(labels, rels, vectors, embeddable)

    # ---- text search --------------------------------------------------------------------------------
    def text_search(
        self, query: str, project_ids: Sequence[str] | None, labels: Sequence[str] | None, limit: int
    ) -> list[tuple[str, float]]:
        match = fts_query(query)
        if match is None:
            return []
        where: list[str] = []
        params: list[Any] = []
        if project_ids is not None:
            where.append(f"n.project_id IN ({placeholders(len(project_ids))})" if project_ids else "0")
            params += list(project_ids)
        if labels:
            where.append(f"n.label IN ({placeholders(len(labels))})")
            params += list(labels)
        else:
            where.append("n.label != 'Project'")
        clause = " AND ".join(where)
        selective = project_ids is not None or bool(labels)
        # Rank inside FTS5 first (cheapest), then join and filter an over-fetched top; fall back to ranking
        # every match joined with its node only when the filters left too few.
        fetch = limit * 8 + 50 if selective else limit + 10
        ranked = (
            f"SELECT n.id, r.rank FROM (SELECT rowid, bm25(nodes_fts, {BM25_WEIGHTS}) AS rank FROM nodes_fts "
            "WHERE nodes_fts MATCH ? ORDER BY rank LIMIT ?) r "
            f"JOIN nodes n ON n.rowid = r.rowid WHERE {clause} ORDER BY r.rank LIMIT ?"
        )
        with self.database.read() as db:
            rows = db.execute(ranked, [match, fetch, *params, limit]).fetchall()
            if len(rows) < limit and (selective or len(rows) == fetch):
                rows = db.execute(
                    f"SELECT n.id, bm25(nodes_fts, {BM25_WEIGHTS}) AS rank FROM nodes_fts "
                    f"JOIN nodes n ON n.rowid = nodes_fts.rowid WHERE nodes_fts MATCH ? AND {clause} "
                    "ORDER BY rank LIMIT ?",
                    [match, *params, limit],
                ).fetchall()
        return [(row[0], -float(row[1])) for row in rows]

    def scopes_named(self, names: Sequence[str], project_ids: Sequence[str] | None, limit: int) -> list[Node]:
        lowered = list(dict.fromkeys(name.lower() for name in names))
        if not lowered or project_ids == []:
            return []
        where = f"label = 'Scope' AND lower(name) IN ({placeholders(len(lowered))})"
        params: list[Any] = list(lowered)
        if project_ids is not None:
            where += f" AND project_id IN ({placeholders(len(project_ids))})"
            params += list(project_ids)
        with self.database.read() as db:
            rows = db.execute(f"SELECT * FROM nodes WHERE {where} ORDER BY rowid LIMIT ?", [*params, limit]).fetchall()
        return [node_from_row(row) for row in rows]

    def filter_text_match(self, ids: Sequence[str], text: str) -> set[str]:
        needle = text.lower()
        kept: set[str] = set()
        with self.database.read() as db:
            for chunk in chunks(list(ids)):
                kept.update(
                    row[0]
                    for row in db.execute(
                        f"SELECT id FROM nodes WHERE id IN ({placeholders(len(chunk))}) AND (instr(lower(name), ?) > 0 "
                        "OR instr(lower(path), ?) > 0 OR instr(lower(content), ?) > 0)",
                        [*chunk, needle, needle, needle],
                    )
                )
        return kept

    # ---- embeddings ---------------------------------------------------------------------------------

    def gc(self) -> dict[str, int]:
        """Remove rows that point at nothing: nodes of unknown projects, dangling edges/refs/vectors/files,
        and cached embeddings no current node uses."""
        stats: dict[str, int] = {}
        with self.database.write() as db:
            stats["nodes"] = db.execute("DELETE FROM nodes WHERE project_id NOT IN (SELECT id FROM projects)").rowcount
            stats["nodes"] += db.execute(
                "DELETE FROM nodes WHERE file_id IS NOT NULL AND label != 'File' AND file_id NOT IN "
                "(SELECT id FROM nodes WHERE label = 'File')"
            ).rowcount
            stats["edges"] = db.execute(
                "DELETE FROM edges WHERE src NOT IN (SELECT id FROM nodes) OR dst NOT IN (SELECT id FROM nodes)"
            ).rowcount
            stats["refs"] = db.execute("DELETE FROM refs WHERE src NOT IN (SELECT id FROM nodes)").rowcount
            stats["vectors"] = db.execute("DELETE FROM vectors WHERE node_id NOT IN (SELECT id FROM nodes)").rowcount
            stats["files"] = db.execute("DELETE FROM files WHERE node_id NOT IN (SELECT id FROM nodes)").rowcount
            stats["cached_embeddings"] = db.execute(
                "DELETE FROM embedding_cache WHERE content_hash NOT IN "
                "(SELECT embed_hash FROM nodes WHERE embed_hash IS NOT NULL)"
            ).rowcount
            if stats["vectors"]:
                db.execute("UPDATE projects SET vectors_version = vectors_version + 1")
        return stats

    def disk_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            path = Path(str(self.database.path) + suffix)
            if path.exists():
                total += path.stat().st_size
        return total
