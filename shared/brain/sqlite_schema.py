"""The brain's SQLite schema: projects, files, nodes, edges, FTS5 over nodes, vectors, the embedding cache."""

from __future__ import annotations

from mcp_sections.shared.embeddings import EMBEDDING_CACHE_SCHEMA

MIGRATIONS: tuple[str, ...] = (
    """
CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    root TEXT NOT NULL,
    type TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_accessed REAL NOT NULL,
    last_ingest REAL,
    auto_cleanup INTEGER NOT NULL DEFAULT 0,
    retention_days REAL NOT NULL DEFAULT 30,
    node_count INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'new',
    needs_relink INTEGER NOT NULL DEFAULT 0,
    vectors_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    project_id TEXT NOT NULL,
    name TEXT NOT NULL,
    path TEXT NOT NULL DEFAULT '',
    file_id TEXT,
    start_line INTEGER,
    end_line INTEGER,
    content TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '',
    embed_text TEXT,
    embed_hash TEXT,
    props TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX nodes_project_label_name ON nodes(project_id, label, name);
CREATE INDEX nodes_project_path ON nodes(project_id, path);
CREATE INDEX nodes_file ON nodes(file_id);
CREATE INDEX nodes_label_name ON nodes(label, name);
CREATE TABLE edges (
    src TEXT NOT NULL,
    type TEXT NOT NULL,
    dst TEXT NOT NULL,
    project_id TEXT NOT NULL,
    file_id TEXT,
    derived INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX edges_dst ON edges(dst, type);
CREATE INDEX edges_project ON edges(project_id, derived);
CREATE INDEX edges_file ON edges(file_id);
CREATE TABLE refs (
    src TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    project_id TEXT NOT NULL,
    file_id TEXT NOT NULL
);
CREATE INDEX refs_project ON refs(project_id, kind);
CREATE INDEX refs_file ON refs(file_id);
CREATE TABLE files (
    project_id TEXT NOT NULL,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    PRIMARY KEY (project_id, path)
) WITHOUT ROWID;
CREATE TABLE vectors (
    node_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    label TEXT NOT NULL,
    model TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX vectors_project ON vectors(project_id, model);
CREATE VIRTUAL TABLE nodes_fts USING fts5(
    name, keywords, path, content, content='nodes', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER nodes_ai AFTER INSERT ON nodes BEGIN
    INSERT INTO nodes_fts(rowid, name, keywords, path, content)
    VALUES (new.rowid, new.name, new.keywords, new.path, new.content);
END;
CREATE TRIGGER nodes_ad AFTER DELETE ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, name, keywords, path, content)
    VALUES ('delete', old.rowid, old.name, old.keywords, old.path, old.content);
END;
CREATE TRIGGER nodes_au AFTER UPDATE ON nodes BEGIN
    INSERT INTO nodes_fts(nodes_fts, rowid, name, keywords, path, content)
    VALUES ('delete', old.rowid, old.name, old.keywords, old.path, old.content);
    INSERT INTO nodes_fts(rowid, name, keywords, path, content)
    VALUES (new.rowid, new.name, new.keywords, new.path, new.content);
END;
"""
    + EMBEDDING_CACHE_SCHEMA,
)
