"""Inputs and outputs of the rag_ops tools."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from mcp_sections.shared.brain.model import LABELS, PROJECT_ID_PATTERN, PROJECT_TYPES, RELATIONSHIPS, SCOPE_KINDS
from mcp_sections.shared.framework.tools import ToolInput, ToolResult

MAX_CODE_CHARS = 1_000_000
MAX_QUERY_CHARS = 1_000
MAX_PROJECTS = 1000  # projects one search may name: far more than a brain holds in practice
MAX_PARAMETER_CHARS = 100_000  # the values' JSON size (the schema cannot bound nested values)

ProjectId = Annotated[
    str,
    Field(
        description="Project id as shown by list_projects (lowercase letters, digits, '.', '_', '-'); a project's "
        "name, or the name its manifest declares (as get_project_info reports it), also works when one project has it.",
        min_length=1,
        max_length=64,
        pattern=PROJECT_ID_PATTERN,
    ),
]
PathText = Annotated[
    str,
    Field(
        description="A directory or file path inside the allowed roots (absolute, or relative to the first root).",
        min_length=1,
        max_length=4096,
    ),
]
Label = Literal["Project", "File", "Scope", "DocumentSection", "WebPage", "Chunk"]
Relationship = Literal["CONTAINS", "DEFINES", "IMPORTS", "CALLS", "LINKS_TO", "IN_PROJECT"]
ProjectType = Literal["project", "quick-ingest", "web-crawl"]
Query = Annotated[
    str,
    Field(description="What to look for, in natural language or keywords.", min_length=1, max_length=MAX_QUERY_CHARS),
]
NodeType = Annotated[
    str,
    Field(
        description=(
            f"A label ({', '.join(LABELS)}) or a scope kind ({', '.join(SCOPE_KINDS)}; route: an HTTP route "
            "registration such as app.get('/api/items', ...); block: top-level code outside any definition)."
        ),
        min_length=1,
        max_length=32,
    ),
]

assert set(LABELS) == set(Label.__args__) and set(RELATIONSHIPS) == set(Relationship.__args__)  # type: ignore[attr-defined]
assert set(PROJECT_TYPES) == set(ProjectType.__args__)  # type: ignore[attr-defined]


# ---- shared output pieces -------------------------------------------------------------------------

SCORE_DESCRIPTION = (
    "Searches only, higher is better. Mode semantic: cosine similarity (-1..1, above ~0.3 is related). Mode hybrid: "
    "the reranker's, 1.0 = first of this answer. Mode text: rank fusion of the rankings in matched_by, 1.0 = first "
    "in each. Hybrid and text scores order one answer only."
)


class NodeOut(ToolResult):
    id: str = Field(description="Node id (deterministic); pass it to explore_relationships.")
    label: str
    name: str
    project_id: str
    project_type: str | None = None
    project_root: str | None = None
    path: str = Field(description="Absolute path of the file (or URL of the page) the node comes from.")
    relative_path: str
    start_line: int | None = None
    end_line: int | None = None
    kind: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    score: float | None = Field(default=None, description=SCORE_DESCRIPTION)
    depth: int | None = None
    matched_by: list[str] | None = Field(
        default=None, description="Searches: the rankings that found it (semantic, text)."
    )
    snippet: str | None = None


class SearchableOut(ToolResult):
    """What a search finds of a project now (the answer of an ingest, and each project of list_projects)."""

    ingest: Literal["complete", "ingesting", "interrupted"] = Field(
        description="complete: every file is searchable by text; interrupted: it resumes at the next start."
    )
    meaning: Literal["complete", "partial", "disabled", "unavailable"] = Field(
        description="Search by meaning: complete, partial (the rest is being embedded), disabled, unavailable."
    )
    embeddable: int = Field(description="Nodes with a text to embed (functions, classes, sections, prose chunks).")
    embedded: int
    pending: int = Field(description="Nodes only text search finds until the background worker embeds them.")
    complete: bool = Field(description="Everything the ingest promised is searchable by text and by meaning.")
    message: str = Field(description='E.g. "text only for 696 of 1,240 nodes (544 embedded)".')


class ProjectOut(ToolResult):
    id: str
    name: str
    root: str
    type: str
    created_at: float
    last_accessed: float
    last_ingest: float | None = None
    auto_cleanup: bool
    retention_days: float
    node_count: int
    status: str
    loaded: bool = False
    active: bool = False
    embeddings_pending: int | None = None
    searchable: SearchableOut | None = None


# ---- ingest ---------------------------------------------------------------------------------------


EMBED_SECONDS_DESCRIPTION = (
    "Embed what was ingested for at most this long before answering (0: leave it to the background worker). "
    "Default: until everything is searchable by meaning when the call runs as an MCP task, else 30 s. What is left "
    "is embedded in the background; the answer says exactly what is searchable."
)


class IngestDirectoryInput(ToolInput):
    path: PathText
    project_name: str | None = Field(
        default=None,
        description=(
            "Register the directory as a named project (id = slug of the name). Omit to resolve automatically: "
            "inside a known project → that project (incremental); otherwise a quick-ingest namespace."
        ),
        min_length=1,
        max_length=64,
    )
    embed_seconds: float | None = Field(default=None, ge=0, le=3600, description=EMBED_SECONDS_DESCRIPTION)


class IngestDirectoryResult(ToolResult):
    project_id: str
    project_type: str
    context: str = Field(
        description="new-project, named-project, already-ingested (refresh), subdir-of-project or quick-ingest."
    )
    root: str
    path: str
    files_scanned: int
    files_unchanged: int
    files_added: int
    files_changed: int
    files_removed: int
    changed_paths: list[str] = Field(description="Added, changed and removed files (first 50), relative to root.")
    nodes_written: int
    node_count: int
    excluded_projects: list[str]
    skipped: dict[str, int]
    embeddings_pending: int
    seconds: float = Field(description="The ingest's own time, embedding before the answer included.")
    searchable: SearchableOut | None = Field(default=None, description="What a search finds of it now.")

    def render_text(self) -> str:
        found = self.searchable.message if self.searchable is not None else "searchable by text"
        return (
            f"{self.context}: {self.project_id} ({self.project_type}) at {self.root} — {self.files_scanned} files, "
            f"{self.files_added} added, {self.files_changed} changed, {self.files_removed} removed, "
            f"{self.files_unchanged} unchanged; {self.node_count} nodes ({self.seconds:.2f}s). Now {found}"
        )


class IngestCodeInput(ToolInput):
    content: str = Field(description="Source code or text to ingest.", min_length=1, max_length=MAX_CODE_CHARS)
    file_path: str = Field(
        description="Relative path the content is filed under, e.g. 'src/auth.py' (its extension picks the parser).",
        min_length=1,
        max_length=300,
    )
    project: ProjectId | None = Field(
        default=None, description="Target project; default: the active project, else the 'snippets' quick-ingest."
    )
    language: Literal["python", "javascript", "typescript", "tsx", "go", "rust", "java", "markdown"] | None = Field(
        default=None, description="Parser to use when file_path has no telling extension."
    )


class ScopeOut(ToolResult):
    id: str
    name: str
    kind: str | None
    start_line: int | None
    end_line: int | None


class IngestCodeResult(ToolResult):
    project_id: str
    file_path: str
    nodes: int
    scopes: list[ScopeOut]
    embeddings_pending: int | None
    searchable: SearchableOut | None = Field(default=None, description="What a search finds of its project now.")


class GenerateEmbeddingsInput(ToolInput):
    project: ProjectId | None = Field(default=None, description="Only this project (default: all projects).")
    max_seconds: float = Field(
        default=60.0, ge=1, le=600, description="Stop after this long; call again to continue (~12-30 texts/s)."
    )


class GenerateEmbeddingsResult(ToolResult):
    embedded: int = Field(description="Vectors written by this call.")
    computed_by_model: int = Field(description="Of those, texts the model actually ran on (the rest: cache hits).")
    pending: int
    complete: bool
    model: str | None


# ---- projects -------------------------------------------------------------------------------------


class CreateProjectInput(ToolInput):
    name: str = Field(description="Project name; its slug becomes the id.", min_length=1, max_length=64)
    path: PathText
    auto_cleanup: bool = Field(default=False, description="Let gc remove it after the retention period unused.")


class ProjectResult(ToolResult):
    project: ProjectOut
    created: bool | None = None
    message: str | None = None


class SetupProjectInput(ToolInput):
    path: PathText
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="Project name, its id being the name's slug (default: the name it already has; else the name its "
        "manifest declares, e.g. pyproject.toml's, as get_project_info reports it, unless another project has that "
        "id; else the directory's name).",
    )
    embed_seconds: float | None = Field(default=None, ge=0, le=3600, description=EMBED_SECONDS_DESCRIPTION)


class SetupProjectResult(ToolResult):
    project: ProjectOut
    created: bool = Field(description="False when the directory was already a project (it is refreshed).")
    ingest: IngestDirectoryResult
    embeddings: GenerateEmbeddingsResult | None = Field(description="What was embedded before answering.")
    embeddings_note: str | None = None
    message: str


class ProjectInput(ToolInput):
    project: ProjectId


class LoadProjectResult(ToolResult):
    project: ProjectOut
    vectors_loaded: int
    stale_files: int | None = Field(
        description="Files changed on disk since the last ingest (re-run ingest_directory)."
    )


class ListProjectsInput(ToolInput):
    project_type: ProjectType | None = Field(default=None, description="Only projects of this type.")


class ListProjectsResult(ToolResult):
    projects: list[ProjectOut]
    active: str | None
    loaded: list[str]


class ForgetPathInput(ToolInput):
    path: str = Field(
        description=(
            "A file or directory inside the roots (or a page URL) whose nodes are removed; a project root forgets the "
            "whole project. Literal paths only: no globs, never a root itself."
        ),
        min_length=1,
        max_length=4096,
    )


class ForgetPathResult(ToolResult):
    removed_nodes: int
    projects_changed: list[str]
    projects_deleted: list[str]


class GcInput(ToolInput):
    dry_run: bool = Field(default=False, description="Only report what would be removed.")
    remove_missing: bool = Field(
        default=False, description="Also remove projects whose root directory no longer exists."
    )


class GcResult(ToolResult):
    expired_projects: list[str]
    missing_root_projects: list[str]
    dry_run: bool
    removed_nodes: int = 0
    orphans_removed: dict[str, int] = Field(default_factory=dict)


# ---- graph queries --------------------------------------------------------------------------------


class SchemaInput(ToolInput):
    project: ProjectId | None = Field(default=None, description="Counts for this project only (default: all).")


class SchemaResult(ToolResult):
    labels: dict[str, int]
    relationships: dict[str, int]
    relationship_descriptions: dict[str, str]
    properties: dict[str, list[str]]
    projects: int
    vectors: int
    embeddable: int
    embeddings_pending: int | None
    backend: str
    embedding_model: str | None
    embedding_status: str


MAX_PROPERTY_VALUE_CHARS = 4096  # the longest stored property is a path (PATH_MAX)
PropertyName = Annotated[str, Field(max_length=100)]  # property names are short identifiers (see get_schema)
PropertyValue = Annotated[str, Field(max_length=MAX_PROPERTY_VALUE_CHARS)] | int | float | bool


class QueryEntitiesInput(ToolInput):
    label: Label | None = Field(default=None, description="Node label to return.")
    name: str | None = Field(
        default=None,
        description="Name to match (see name_match). Exact: a plain name ('process') or, when no node has it as "
        "its name, a qualified one: 'Class.method', 'module.function' (the module or its tail), "
        "'path/file.py::Class.method' (the path or its tail), or a file's path.",
        min_length=1,
        max_length=200,
    )
    name_match: Literal["exact", "prefix", "contains"] = Field(
        default="exact", description="How `name` matches (prefix/contains are case-insensitive)."
    )
    path: str | None = Field(
        default=None,
        description="Only nodes of this file or under this directory: absolute, or relative to the project root.",
        min_length=1,
        max_length=4096,
    )
    project: ProjectId | None = Field(default=None, description="Only this project.")
    properties: dict[PropertyName, PropertyValue] = Field(
        default_factory=dict,
        description='Exact property values, e.g. {"kind": "method", "language": "go"} (see get_schema).',
        max_length=8,
    )
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=1_000_000)


class EntitiesResult(ToolResult):
    entities: list[NodeOut]
    total_count: int

    def render_text(self) -> str:
        lines = [f"{self.total_count} matching; showing {len(self.entities)}"]
        lines += [
            f"- [{e.label}] {e.name} {e.path}{f':{e.start_line}' if e.start_line else ''} id={e.id}"
            for e in self.entities
        ]
        return "\n".join(lines)


class ExploreInput(ToolInput):
    node_id: str = Field(
        description=(
            "The start node: its id (24 hex characters, from brain_search, semantic_search or query_entities) or its "
            "name, matched as query_entities matches an exact `name`: plain ('process') or qualified "
            "('StatementSplitter.process', 'sqlparse.engine.statement_splitter.StatementSplitter.process', "
            "'engine/statement_splitter.py::StatementSplitter.process'). A name several nodes share fails listing, "
            "for each, the qualified name (or path::qualname, or id) to pass instead."
        ),
        min_length=1,
        max_length=200,
    )
    project: ProjectId | None = Field(default=None, description="With a name: only nodes of this project.")
    label: Label | None = Field(default=None, description="With a name: only nodes with this label.")
    types: list[Relationship] | None = Field(
        default=None, max_length=len(RELATIONSHIPS), description="Relationship types to follow (default all)."
    )
    direction: Literal["out", "in", "both"] = Field(default="both")
    depth: int = Field(default=1, ge=1, le=5)
    limit: int = Field(default=100, ge=1, le=500, description="Most nodes returned.")


class EdgeOut(ToolResult):
    src: str
    type: str
    dst: str


class ExploreResult(ToolResult):
    start: NodeOut
    nodes: list[NodeOut]
    edges: list[EdgeOut]
    truncated: bool

    def render_text(self) -> str:
        lines = [f"{self.start.label} {self.start.name}: {len(self.nodes)} related nodes, {len(self.edges)} edges"]
        lines += [f"- d{n.depth} [{n.label}] {n.name} {n.path} id={n.id}" for n in self.nodes[:50]]
        return "\n".join(lines)


class SemanticSearchInput(ToolInput):
    query: Query
    project: ProjectId | None = Field(
        default=None,
        description="Project to search (default: the project you work in: the active one, else the one holding your "
        "root, else those inside it, else every project; the answer's scope says which).",
    )
    all_projects: bool = Field(
        default=False, description="Search every project, quick-ingest and web page in the brain (ignores project)."
    )
    node_types: list[NodeType] | None = Field(default=None, max_length=10)
    limit: int = Field(default=10, ge=1, le=50)
    min_score: float | None = Field(
        default=None, ge=-1, le=1, description="Drop results whose score (cosine similarity) is below this."
    )


class BrainSearchInput(ToolInput):
    query: Query
    projects: list[ProjectId] | None = Field(
        default=None,
        max_length=MAX_PROJECTS,
        description="Search these projects. Default: the project you work in (the active one, else the one holding "
        "your root, else those inside it, else every project; the answer's scope says which).",
    )
    all_projects: bool = Field(
        default=False, description="Search every project, quick-ingest and web page in the brain (ignores projects)."
    )
    project_types: list[ProjectType] | None = Field(
        default=None, max_length=len(PROJECT_TYPES), description="Limit to these project types."
    )
    types: list[NodeType] | None = Field(default=None, max_length=10, description="Limit to these node types.")
    semantic: bool = Field(default=True, description="Use embeddings (fused with full-text ranking).")
    text_match: str | None = Field(
        default=None, description="Keep only results whose name, path or text contains this.", max_length=200
    )
    limit: int = Field(default=10, ge=1, le=50)
    offset: int = Field(default=0, ge=0, le=1000)


class SearchResult(ToolResult):
    results: list[NodeOut]
    total_count: int
    searched_projects: list[str]
    scope: str = Field(
        description="Which projects were searched and why (the ones asked for, the active one, the one holding your "
        "root, or every one), and the argument that widens or narrows the search (all_projects, project(s))."
    )
    intent: str | None = Field(
        default=None, description="What the question was read as wanting first: code, docs, changes or mixed."
    )
    mode: str = Field(description="hybrid, semantic or text (text when no embedding model could answer).")
    note: str | None = None

    def render_text(self) -> str:
        lines = [
            f"{len(self.results)} of {self.total_count} results ({self.mode})"
            + (f" — {self.note}" if self.note else "")
            + f"\n{self.scope}"
        ]
        for r in self.results:
            where = f"{r.path}:{r.start_line}" if r.start_line else r.path
            lines.append(
                f"- [{r.project_id}] {r.label}/{r.kind or '-'} {r.name} {where} id={r.id}\n  {r.snippet or ''}"
            )
        return "\n".join(lines)


class RunCypherInput(ToolInput):
    query: str = Field(description="A read-only Cypher query (MATCH ... RETURN ...).", min_length=1, max_length=10_000)
    parameters: dict[Annotated[str, Field(max_length=100)], Any] = Field(
        default_factory=dict,
        max_length=100,
        description=f"Query parameters ($name in the query); at most {MAX_PARAMETER_CHARS} characters as JSON.",
    )
    limit: int = Field(default=100, ge=1, le=1000, description="Most rows returned.")
    timeout_seconds: float = Field(default=15.0, ge=1, le=60)

    @field_validator("parameters")
    @classmethod
    def _small_parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(value, ensure_ascii=False, default=str)) > MAX_PARAMETER_CHARS:
            raise ValueError(f"parameters must serialise to at most {MAX_PARAMETER_CHARS} JSON characters")
        return value


class RunCypherResult(ToolResult):
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool
