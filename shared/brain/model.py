"""The brain's data model: labels, relationship types, records and deterministic ids.

Everything here is plain data shared by every backend (SQLite, Neo4j) and by the ingestion code;
no backend or MCP import.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

# --- vocabulary (the allow-lists every query is checked against) ----------------------------------

LABELS: tuple[str, ...] = ("Project", "File", "Scope", "DocumentSection", "WebPage", "Chunk")
RELATIONSHIPS: tuple[str, ...] = ("CONTAINS", "DEFINES", "IMPORTS", "CALLS", "LINKS_TO", "IN_PROJECT")
DERIVED_RELATIONSHIPS: tuple[str, ...] = ("IMPORTS", "CALLS", "LINKS_TO")
"""Edges recomputed from recorded references after an ingest (they may cross files)."""

SCOPE_KINDS: tuple[str, ...] = (
    "function",
    "method",
    "class",
    "interface",
    "struct",
    "enum",
    "trait",
    "impl",
    "type",
    "module",
    "record",
    "constructor",
    "route",  # an HTTP route registration such as app.get('/api/items', ...)
    "block",  # top-level code outside any definition
)
"""The kinds of a Scope the parsers make (`shared.brain.parsing`): what search and query `types` accept."""

PROJECT_TYPES: tuple[str, ...] = ("project", "quick-ingest", "web-crawl")
ProjectType = Literal["project", "quick-ingest", "web-crawl"]
Direction = Literal["out", "in", "both"]

# Properties each label may carry (besides the common columns); `query_entities` accepts only these.
COMMON_PROPERTIES: tuple[str, ...] = ("id", "label", "name", "path", "project_id", "start_line", "end_line")
LABEL_PROPERTIES: dict[str, tuple[str, ...]] = {
    "Project": ("type", "root", "last_accessed", "node_count", "auto_cleanup"),
    "File": ("language", "hash", "size", "module", "imports"),
    "Scope": ("kind", "qualname", "signature", "docstring", "language", "parent"),
    "DocumentSection": ("level", "heading_path"),
    "WebPage": ("url", "title", "fetched_at"),
    "Chunk": ("index",),
}
ALL_PROPERTIES: frozenset[str] = frozenset(p for props in LABEL_PROPERTIES.values() for p in props)

RELATIONSHIP_DESCRIPTIONS: dict[str, str] = {
    "CONTAINS": "File → DocumentSection/Chunk, DocumentSection → sub-section",
    "DEFINES": "File → top-level Scope, Scope → nested Scope (methods of a class)",
    "IMPORTS": "File → File of the same project (best effort resolution of import statements)",
    "CALLS": "Scope → Scope of the same project called by name (best effort)",
    "LINKS_TO": "DocumentSection/WebPage → File/WebPage it links to",
    "IN_PROJECT": "File/WebPage → its Project",
}

PROJECT_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
NODE_ID_PATTERN = r"^[0-9a-f]{24}$"
_PROJECT_ID = re.compile(PROJECT_ID_PATTERN)


def node_id(project_id: str, label: str, path: str, qualname: str = "") -> str:
    """Deterministic id: the same project, label, path and qualified name always give the same node."""
    key = "\x00".join((project_id, label, path, qualname))
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def project_node_id(project_id: str) -> str:
    return node_id(project_id, "Project", "", "")


def text_hash(text: str | bytes) -> str:
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def slugify(text: str, max_length: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:max_length].strip("-")
    return slug or "project"


def valid_project_id(value: str) -> bool:
    return bool(_PROJECT_ID.match(value))


# --- records ----------------------------------------------------------------------------------------


@dataclass
class Project:
    id: str
    name: str
    root: str  # absolute directory path, or a URL for web crawls
    type: str = "project"
    created_at: float = field(default_factory=time.time)
    last_accessed: float = field(default_factory=time.time)
    last_ingest: float | None = None
    auto_cleanup: bool = False
    retention_days: float = 30.0
    node_count: int = 0
    status: str = "new"  # new | ingesting | ready
    needs_relink: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "root": self.root,
            "type": self.type,
            "created_at": self.created_at,
            "last_accessed": self.last_accessed,
            "last_ingest": self.last_ingest,
            "auto_cleanup": self.auto_cleanup,
            "retention_days": self.retention_days,
            "node_count": self.node_count,
            "status": self.status,
        }


PROJECT_FIELDS = frozenset(
    {
        "name",
        "root",
        "type",
        "last_accessed",
        "last_ingest",
        "auto_cleanup",
        "retention_days",
        "node_count",
        "status",
        "needs_relink",
    }
)
"""The project fields `update_project` may set (all but `id` and `created_at`)."""


def check_project_fields(fields: Iterable[str]) -> None:
    """Refuse (ValueError) field names `update_project` does not know."""
    unknown = set(fields) - PROJECT_FIELDS
    if unknown:
        raise ValueError(f"unknown project fields {sorted(unknown)}")


@dataclass
class Node:
    """One node. `path` is relative to the project root (posix), or a URL for web pages."""

    id: str
    label: str
    project_id: str
    name: str
    path: str = ""
    file_id: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    content: str = ""
    keywords: str = ""  # extra searchable words (split identifiers, signature)
    embed_text: str | None = None  # what the embedding model sees (None: not embedded)
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def embed_hash(self) -> str | None:
        return text_hash(self.embed_text) if self.embed_text else None


@dataclass(frozen=True)
class Edge:
    src: str
    type: str
    dst: str


@dataclass(frozen=True)
class Ref:
    """An unresolved reference (a call or an import by name), turned into edges at relink time."""

    src: str
    kind: Literal["call", "import", "link"]
    target: str


@dataclass
class FileRecord:
    """What incremental ingestion remembers about one file."""

    path: str  # relative, posix
    hash: str
    size: int
    mtime_ns: int
    node_id: str


@dataclass
class ParsedFile:
    """The nodes, edges and references extracted from one file (the File node first)."""

    record: FileRecord
    nodes: list[Node]
    edges: list[Edge]
    refs: list[Ref]


@dataclass
class SearchHit:
    node_id: str
    score: float
    source: str  # "semantic" | "text"


@dataclass
class EntityFilter:
    """Typed filters of `query_entities`; identifiers are checked against the allow-lists above."""

    label: str | None = None
    name: str | None = None
    name_match: Literal["exact", "prefix", "contains"] = "exact"
    path_prefix: str | None = None
    project_ids: list[str] | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    limit: int = 50
    offset: int = 0


_IDENTIFIER_CHUNK = re.compile(r"[A-Za-z0-9]+")
_IDENTIFIER_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")


def split_identifier(name: str) -> list[str]:
    """The words of an identifier or a heading, lower-cased, whatever its case: `getUserName` / `get_user_name` →
    get, user, name; `_make_repr_script` → make, repr, script; `HTTPServer` → http, server; `base64_decode` → base64,
    decode; "Why marshmallow?" → why, marshmallow. One split for the text index's keywords and the ranking's names."""
    return [word.lower() for chunk in _IDENTIFIER_CHUNK.findall(name) for word in _IDENTIFIER_WORD.findall(chunk)]
