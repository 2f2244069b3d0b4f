"""rag_ops: the brain — a code/document knowledge graph across projects, searchable by text and by meaning."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from mcp_sections.servers.rag_ops.models import (
    BrainSearchInput,
    CreateProjectInput,
    EdgeOut,
    EntitiesResult,
    ExploreInput,
    ExploreResult,
    ForgetPathInput,
    ForgetPathResult,
    GcInput,
    GcResult,
    GenerateEmbeddingsInput,
    GenerateEmbeddingsResult,
    IngestCodeInput,
    IngestCodeResult,
    IngestDirectoryInput,
    IngestDirectoryResult,
    ListProjectsInput,
    ListProjectsResult,
    LoadProjectResult,
    NodeOut,
    ProjectInput,
    ProjectOut,
    ProjectResult,
    QueryEntitiesInput,
    RunCypherInput,
    RunCypherResult,
    SchemaInput,
    SchemaResult,
    ScopeOut,
    SearchableOut,
    SearchResult,
    SemanticSearchInput,
    SetupProjectInput,
    SetupProjectResult,
)
from mcp_sections.servers.rag_ops.paths import relative
from mcp_sections.servers.rag_ops.settings import RagOpsSettings
from mcp_sections.shared.embeddings.requirements import embedding_requirements
from mcp_sections.shared.framework.requirements import InstallExtra, Requirement, degrading, module
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime
from mcp_sections.shared.framework.tools import OVERWRITE, READ_ONLY, WRITE, ToolContext, tool


def open_brain(runtime: SectionRuntime) -> Any:
    from mcp_sections.servers.rag_ops.brain import Brain

    settings = runtime.settings_of(RagOpsSettings)
    from mcp_sections.shared.brain.opening import open_brain_store, open_embedding_service

    data_dir = runtime.settings.data_dir
    store = open_brain_store(settings.backend, data_dir)
    service = None
    if settings.embeddings:
        service = open_embedding_service(settings, store, data_dir, runtime.settings.cache_dir)
    brain = Brain(
        store,
        runtime.settings.roots,
        embedding_service=service,
        max_file_bytes=settings.max_file_bytes,
        max_files=settings.max_files,
        retention_days=settings.quick_ingest_retention_days,
        background_embeddings=settings.background_embeddings,
        embedding_wait_seconds=settings.embedding_wait_seconds,
        private=runtime.settings.own_state_paths(),
    )
    brain.resume_in_background()  # an ingest the last process did not finish (its client gone, stopped)
    return brain


def neo4j_reachable(runtime: SectionRuntime) -> str | None:
    """Only with `backend = "neo4j"` (config file or environment): the backend's own connection (credentials from the
    environment or NEO4J_PASSWORD_FILE) reaches the Bolt server."""
    import importlib.util

    if runtime.settings_of(RagOpsSettings).backend != "neo4j":
        return None
    if not os.environ.get("NEO4J_URI"):
        return "backend = neo4j but NEO4J_URI is not set"
    if importlib.util.find_spec("neo4j") is None:
        return "backend = neo4j but the neo4j driver is not installed"
    from mcp_sections.shared.brain.neo4j_backend import Neo4jBrainStore
    from mcp_sections.shared.ground.errors import ToolFailure

    try:
        Neo4jBrainStore.from_env().close()
    except ToolFailure as failure:
        return failure.message
    return None


def warm_up(brain: Any) -> None:
    """Load the embedding model in the background when the brain holds something to embed or search by meaning
    (an empty brain loads it at its first ingest instead: no model cost for sessions that never use it)."""
    if brain.embeddings is not None and brain.store.schema()["embeddable"] > 0:
        brain.embeddings.embedder.start_loading()
        brain.embeddings.embedder.on_ready(brain.wake)


def _progress(ctx: ToolContext | None) -> Callable[[int, int, str], None] | None:
    """A callback usable from the worker thread that posts MCP progress notifications, and where the work stops
    when the call was cancelled (an ingest keeps what it parsed so far: the next one goes on from there)."""
    if ctx is None:
        return None
    import anyio.from_thread

    def report(done: int, total: int, message: str) -> None:
        anyio.from_thread.check_cancelled()  # a cancelled call (tasks/cancel, notifications/cancelled) stops here
        with contextlib.suppress(Exception):  # progress is best effort
            anyio.from_thread.run(ctx.report_progress, float(done), float(total), message)

    return report


PLAIN_CALL_EMBED_SECONDS = 30.0  # a plain call answers within a client's usual ~60 s wait
TASK_MARGIN_SECONDS = 10.0  # a task answers this long before its deadline, saying what is left
INLINE_EMBED_SECONDS = 10.0  # a snippet (ingest_code) is embedded before the answer


def _embed_budget(requested: float | None) -> float:
    """How long an ingest embeds before it answers: as asked; else, as an MCP task, until everything is searchable
    by meaning (up to shortly before the task's deadline); else `PLAIN_CALL_EMBED_SECONDS`. Call from the event loop."""
    if requested is not None:
        return requested
    import anyio

    from mcp_sections.shared.serving.tasks import CURRENT

    task = CURRENT.get()
    if task is None:
        return PLAIN_CALL_EMBED_SECONDS
    return max(0.0, task.scope.deadline - anyio.current_time() - TASK_MARGIN_SECONDS)


def _searchable(brain: Any, project_id: str) -> SearchableOut:
    return SearchableOut(**brain.searchable(project_id).as_dict())


def _project_out(brain: Any, project: Any) -> ProjectOut:
    from mcp_sections.servers.rag_ops.brain import project_summary

    return ProjectOut(**project_summary(project, brain))


# ---- ingest ---------------------------------------------------------------------------------------


@tool(
    name="ingest_directory",
    title="Ingest a directory into the brain",
    annotations=WRITE,
    examples=(
        "parse a source tree into the knowledge graph",
        "parse my repo so I can search it",
        "re-index the files that changed",
        "index a directory into the brain",
        "ingest a documentation folder so the brain can answer from it",
        "refresh the brain after files changed on disk",
    ),
    long=True,
)
async def ingest_directory(params: IngestDirectoryInput, state: Any, ctx: ToolContext) -> IngestDirectoryResult:
    """Parse a directory (code: Python, JS/TS, Go, Rust, Java into functions/classes/methods; Markdown and
    reStructuredText into sections; other text into chunks) into the brain, incrementally: only files whose content
    hash changed are re-parsed, removed files leave the graph. Context is resolved from the path: inside a known
    project → that project; otherwise a quick-ingest namespace (or a named project with project_name). Honours
    .gitignore; skips secrets (.env*, keys, *.pem), binaries and vendored/build directories. Then embeds what it
    wrote (embed_seconds; as an MCP task, until done) and answers with what is searchable now (`searchable`: all of
    it by text; by meaning, how many nodes are embedded). What is left is embedded in the background, after the
    call and after a restart; list_projects shows it. Sends progress notifications."""
    import anyio.to_thread

    budget = _embed_budget(params.embed_seconds)
    progress = _progress(ctx)

    def run() -> Any:
        from mcp_sections.servers.rag_ops.ingest import after_files

        report = state.ingest_directory(params.path, params.project_name, progress)
        state.embed_for([report.project_id], budget, after_files(progress, report.files_scanned))
        return report

    started = time.perf_counter()
    report = await anyio.to_thread.run_sync(run)
    return _ingest_result(report, state, seconds=time.perf_counter() - started)


def _ingest_result(report: Any, state: Any, seconds: float | None = None) -> IngestDirectoryResult:
    changed = [*report.files_added, *report.files_changed, *report.files_removed]
    searchable = _searchable(state, report.project_id)
    return IngestDirectoryResult(
        project_id=report.project_id,
        project_type=report.project_type,
        context=report.context,
        root=report.root,
        path=report.path,
        files_scanned=report.files_scanned,
        files_unchanged=report.files_unchanged,
        files_added=len(report.files_added),
        files_changed=len(report.files_changed),
        files_removed=len(report.files_removed),
        changed_paths=changed[:50],
        nodes_written=report.nodes_written,
        node_count=report.node_count,
        excluded_projects=report.excluded_projects,
        skipped=report.skipped,
        embeddings_pending=searchable.pending,
        seconds=round(seconds if seconds is not None else report.seconds, 3),
        searchable=searchable,
    )


@tool(
    name="setup_project",
    title="Set up a project in one call",
    annotations=WRITE,
    examples=(
        "register, index and embed a project in one call",
        "quickstart: make this directory searchable",
        "get a codebase ready for search in one step",
        "set up a new project end to end",
        "index and embed this repo so I can ask questions about it",
        "one-step setup of a code project for semantic search",
    ),
    long=True,
)
async def setup_project(params: SetupProjectInput, state: Any, ctx: ToolContext) -> SetupProjectResult:
    """Quickstart: register a directory as a named project, ingest it (incrementally if it already is one),
    make it the active project, and embed it before answering (embed_seconds; as an MCP task, until everything is
    searchable by meaning) with progress notifications. Answers with what is searchable now; what is left is
    embedded in the background, after the call and after a restart. Same rules as create_project +
    ingest_directory + generate_embeddings."""
    import anyio.to_thread

    budget = _embed_budget(params.embed_seconds)
    started = time.perf_counter()
    setup = await anyio.to_thread.run_sync(
        lambda: state.setup_project(params.path, params.name, budget, _progress(ctx))
    )
    embedded = GenerateEmbeddingsResult(**setup.embeddings) if setup.embeddings is not None else None
    ingest = _ingest_result(setup.report, state, seconds=time.perf_counter() - started)
    assert ingest.searchable is not None
    return SetupProjectResult(
        project=_project_out(state, state.project(setup.project.id)),
        created=setup.created,
        ingest=ingest,
        embeddings=embedded,
        embeddings_note=setup.embeddings_note,
        message=f"Project {setup.project.id} is set up and active: {ingest.searchable.message}",
    )


@tool(
    name="ingest_code",
    title="Ingest a code snippet",
    annotations=WRITE,
    examples=(
        "put code given inline into the graph under a file name",
        "index some code that isn't on disk",
        "ingest a code snippet",
        "index source text I give you directly",
        "ingest code from the conversation, not from disk",
        "add a pasted class to the knowledge graph",
    ),
)
def ingest_code(params: IngestCodeInput, state: Any) -> IngestCodeResult:
    """Ingest source code given inline (not read from disk) as a file of a project: parsed like a file of that
    extension (functions, classes, sections), replacing an earlier snippet filed under the same path. Goes to
    `project`, else the active project, else the 'snippets' quick-ingest project."""
    project, parsed = state.ingest_code(params.content, params.file_path, params.project, params.language)
    state.embed_for([project.id], INLINE_EMBED_SECONDS)
    scopes = [
        ScopeOut(id=n.id, name=n.name, kind=n.props.get("kind"), start_line=n.start_line, end_line=n.end_line)
        for n in parsed.nodes
        if n.label == "Scope"
    ]
    searchable = _searchable(state, project.id)
    return IngestCodeResult(
        project_id=project.id,
        file_path=parsed.record.path,
        nodes=len(parsed.nodes),
        scopes=scopes[:200],
        embeddings_pending=searchable.pending if state.model_key else None,
        searchable=searchable,
    )


@tool(
    name="generate_embeddings",
    title="Complete pending embeddings",
    annotations=WRITE,
    examples=(
        "compute the missing embeddings now",
        "finish vectorizing the project for semantic search",
        "generate embeddings for pending nodes",
        "make semantic search work on the new files",
        "embed the pending nodes",
        "vectors are missing, compute them",
    ),
    long=True,
)
async def generate_embeddings(
    params: GenerateEmbeddingsInput, state: Any, ctx: ToolContext
) -> GenerateEmbeddingsResult:
    """Compute the embeddings still pending (new or changed functions, sections, chunks) now, with progress,
    for one project or all, for at most max_seconds. Unchanged text is never re-embedded (content-hash
    cache). Fails with DEPENDENCY_ERROR when no embedding model is available (text search still works)."""
    import anyio.to_thread

    ids = state.project_ids([params.project] if params.project else None)
    result = await anyio.to_thread.run_sync(lambda: state.generate_embeddings(ids, params.max_seconds, _progress(ctx)))
    return GenerateEmbeddingsResult(**result)


# ---- projects -------------------------------------------------------------------------------------


@tool(
    name="create_project",
    title="Register a project",
    annotations=WRITE,
    examples=(
        "declare a folder as a long-lived project",
        "create a new project entry in the brain",
        "create a project",
        "name a project root in the brain",
        "register a directory as a named project",
        "make a project that gc never cleans up",
    ),
)
def create_project(params: CreateProjectInput, state: Any) -> ProjectResult:
    """Register a directory as a named project (kept until forgotten, unlike quick-ingests). A directory inside
    another project becomes its own project and leaves the parent. Does not parse anything: call
    ingest_directory next."""
    project, created = state.create_project(params.name, params.path, auto_cleanup=params.auto_cleanup)
    return ProjectResult(
        project=_project_out(state, project),
        created=created,
        message=f"call ingest_directory with path {project.root!r} to parse it",
    )


@tool(
    name="load_project",
    title="Load a project",
    annotations=WRITE,
    examples=(
        "load a project's vectors for this session",
        "reopen an indexed project",
        "load a project",
        "bring a project into this session",
        "open a project I indexed earlier",
        "load the vectors of project X into memory",
    ),
)
def load_project(params: ProjectInput, state: Any) -> LoadProjectResult:
    """Load a project for this session: its vectors go into memory, it becomes active if none is, its last
    access is refreshed (which postpones auto-cleanup), and the files changed on disk since its last
    ingest are counted."""
    loaded = state.load_project(params.project)
    project = state.project(params.project)
    return LoadProjectResult(
        project=_project_out(state, project), vectors_loaded=loaded["vectors_loaded"], stale_files=loaded["stale_files"]
    )


@tool(
    name="switch_project",
    title="Switch the active project",
    annotations=WRITE,
    examples=(
        "change the active project",
        "search in a different project by default",
        "switch to another project",
        "make a project active",
        "set the default project for semantic search",
        "work on project backend instead",
    ),
)
def switch_project(params: ProjectInput, state: Any) -> ProjectResult:
    """Make a project the active one: semantic_search and ingest_code default to it in this session."""
    project = state.switch_project(params.project)
    return ProjectResult(project=_project_out(state, project), message=f"active project: {project.id}")


@tool(
    name="unload_project",
    title="Unload a project",
    annotations=WRITE,
    examples=(
        "release a loaded project, its data stays",
        "stop using a loaded project without deleting it",
        "unload a project",
        "close a project in the session",
        "free the memory used by a loaded project",
        "unload project X from this session",
    ),
)
def unload_project(params: ProjectInput, state: Any) -> ProjectResult:
    """Unload a project from this session: it is no longer loaded or active (no data is deleted)."""
    project = state.unload_project(params.project)
    return ProjectResult(project=_project_out(state, project), message=f"unloaded {project.id}")


@tool(
    name="list_projects",
    title="List the brain's projects",
    annotations=READ_ONLY,
    examples=(
        "which projects are indexed",
        "list the brain's projects and their sizes",
        "list projects",
        "show the brain's known projects and their types",
        "which projects are loaded or active",
        "list web crawls and quick-ingests",
    ),
)
def list_projects(params: ListProjectsInput, state: Any) -> ListProjectsResult:
    """List the projects in the brain: id, root path or URL, type (project / quick-ingest / web-crawl), last
    access, node count, auto-cleanup policy, pending embeddings, and which are loaded/active."""
    projects = [p for p in state.store.list_projects() if params.project_type in (None, p.type)]
    return ListProjectsResult(
        projects=[_project_out(state, p) for p in projects], active=state.active, loaded=sorted(state.loaded)
    )


@tool(
    name="forget_path",
    title="Forget a path",
    annotations=OVERWRITE,
    examples=(
        "the brain should no longer know about a path",
        "forget a web page I ingested",
        "forget a file in the brain",
        "remove a directory from the knowledge graph",
        "drop a deleted file's nodes from the graph",
        "forget a whole project",
    ),
)
def forget_path(params: ForgetPathInput, state: Any) -> ForgetPathResult:
    """Remove from the brain exactly the nodes of one file or directory (or a whole project when given its
    root, or a web page by URL). Files on disk are never touched. Refuses empty paths, globs and the
    allowed roots themselves."""
    return ForgetPathResult(**state.forget_path(params.path))


@tool(
    name="gc",
    title="Garbage-collect the brain",
    annotations=OVERWRITE,
    examples=(
        "garbage collect the knowledge graph",
        "clean up expired quick ingests and orphans",
        "delete old quick-ingest data",
        "tidy up the brain's storage",
        "purge stale web crawls from the brain",
        "preview what garbage collection would remove",
    ),
)
def gc(params: GcInput, state: Any) -> GcResult:
    """Remove quick-ingests and web crawls not accessed within their retention period, then orphaned rows
    (edges, vectors, cached embeddings nothing uses). dry_run only reports; remove_missing also removes
    projects whose directory is gone."""
    return GcResult(**state.gc(dry_run=params.dry_run, remove_missing=params.remove_missing))


# ---- graph ----------------------------------------------------------------------------------------


@tool(
    name="get_schema",
    title="Brain schema and counts",
    annotations=READ_ONLY,
    examples=(
        "what node types and relationships does the graph have",
        "show counts of nodes and pending vectors",
        "describe the graph schema",
        "which properties can I query on",
        "which labels and relationship types exist",
        "is the embedding model ready and how many vectors are pending",
    ),
)
def get_schema(params: SchemaInput, state: Any) -> SchemaResult:
    """The graph schema: node labels and relationship types with counts, the properties each label carries
    (usable in query_entities), vectors stored and pending, backend and embedding model status."""
    from mcp_sections.shared.brain.model import RELATIONSHIP_DESCRIPTIONS

    schema = state.schema(params.project)
    return SchemaResult(relationship_descriptions=RELATIONSHIP_DESCRIPTIONS, **schema)


@tool(
    name="query_entities",
    title="Query entities",
    annotations=READ_ONLY,
    examples=(
        "find nodes named X in the code graph",
        "list the classes in a given file",
        "look up functions by name prefix",
        "search nodes by label and property",
        "list all methods in the Go files",
        "find the class called UserService",
    ),
)
def query_entities(params: QueryEntitiesInput, state: Any) -> EntitiesResult:
    """Find nodes by typed filters: label, name (exact / prefix / contains), file or directory path, project,
    property values (see get_schema), with limit/offset. An exact name may be qualified: 'StatementSplitter.process',
    'module.function', 'path/to/file.py::Class.method', or a file's path. Returns ids for explore_relationships."""
    from mcp_sections.shared.brain.model import ALL_PROPERTIES, EntityFilter
    from mcp_sections.shared.ground.errors import invalid_input

    unknown = sorted(set(params.properties) - ALL_PROPERTIES)
    if unknown:
        raise invalid_input(f"unknown properties {unknown}; allowed: {sorted(ALL_PROPERTIES)} (see get_schema).")
    project_ids = state.project_ids([params.project] if params.project else None)
    prefix = None
    if params.path:
        prefix, project_ids = _path_filter(state, params.path, project_ids)
    flt = EntityFilter(
        label=params.label,
        name=params.name,
        name_match=params.name_match,
        path_prefix=prefix,
        project_ids=project_ids,
        properties=dict(params.properties),
        limit=params.limit,
        offset=params.offset,
    )
    nodes, total = state.entities(flt)
    projects = {p.id: p for p in state.store.list_projects()}
    return EntitiesResult(entities=[NodeOut(**state.describe(n, projects)) for n in nodes], total_count=total)


def _path_filter(state: Any, path: str, project_ids: list[str] | None) -> tuple[str, list[str] | None]:
    if os.path.isabs(path):
        real = os.path.realpath(path)
        owner = state.owner_of(real)
        if owner is None:
            return path.strip("/"), []
        rel = relative(real, owner.root)
        ids = [owner.id] if project_ids is None or owner.id in project_ids else []
        return rel, ids
    return path.strip("/").removeprefix("./"), project_ids


@tool(
    name="explore_relationships",
    title="Explore relationships",
    annotations=READ_ONLY,
    examples=(
        "what calls this function",
        "show what a file imports and defines",
        "walk the call graph from a node",
        "who imports this module",
        "follow the imports of a file two levels deep",
        "which nodes link to this one in the graph",
    ),
)
def explore_relationships(params: ExploreInput, state: Any) -> ExploreResult:
    """Walk the graph from a node, given by id or by name (plain, or qualified: 'Class.method', 'module.function',
    'path/file.py::Class.method'; an ambiguous name lists the qualified names that tell its nodes apart): follow
    the given relationship types (CONTAINS,
    DEFINES, IMPORTS, CALLS, LINKS_TO, IN_PROJECT; default all) out, in or both ways, up to depth 5; returns
    the nodes reached (with their depth) and the edges among them."""
    start = state.resolve_node(params.node_id, params.project, params.label)
    found, edges = state.store.neighbors(start.id, params.types or [], params.direction, params.depth, params.limit)
    projects = {p.id: p for p in state.store.list_projects()}
    nodes = [NodeOut(**state.describe(n, projects), depth=d) for n, d in found if n.id != start.id]
    truncated = len(found) > params.limit
    return ExploreResult(
        start=NodeOut(**state.describe(start, projects)),
        nodes=nodes[: params.limit],
        edges=[EdgeOut(src=e.src, type=e.type, dst=e.dst) for e in edges][:2000],
        truncated=truncated,
    )


# ---- search ---------------------------------------------------------------------------------------


@tool(
    name="semantic_search",
    title="Semantic search",
    annotations=READ_ONLY,
    examples=(
        "search the current project by meaning",
        "where is the login handled in this code",
        "natural-language code search in this project",
        "find functions by what they do",
        "find the code responsible for caching",
        "search code by concept, not exact text",
    ),
)
async def semantic_search(params: SemanticSearchInput, state: Any, ctx: ToolContext) -> SearchResult:
    """Search by meaning (sentence embeddings) in the project you work in (the active project, else the one holding
    your root), in `project`, or with all_projects=true in every project, quick-ingest and web page: best for
    natural-language questions such as "where are passwords hashed". `scope` says which projects were searched, why,
    and the argument that widens or narrows it. Returns functions/classes/sections with file, lines and score: the
    cosine similarity of query and node (-1..1, above about 0.3 is related; min_score drops what is below), ordered
    for the question's intent (definitions first for "where is X done", docs first for "how do I"). Falls back to
    text search, and says so (mode text, score a rank score), when no model is available."""
    import anyio.to_thread

    roots = await _caller_roots(ctx)

    def run() -> SearchResult:
        requested = [params.project] if params.project else None
        scope = state.scope_of_search(requested, all_projects=params.all_projects, roots=roots, argument="project")
        found = state.search(
            params.query,
            project_ids=scope.project_ids,
            types=params.node_types,
            semantic=True,
            text=False,
            limit=params.limit,
            min_score=params.min_score,
        )
        return _search_result(found, scope.note)

    return await anyio.to_thread.run_sync(run)


@tool(
    name="brain_search",
    title="Search the whole brain",
    annotations=READ_ONLY,
    examples=(
        "search across every project and web page I've ingested",
        "find something anywhere in the brain",
        "search all knowledge including crawled web pages",
        "hybrid search over everything indexed",
        "search the documentation pages I ingested",
        "search all projects at once for an error",
    ),
)
async def brain_search(params: BrainSearchInput, state: Any, ctx: ToolContext) -> SearchResult:
    """Search the brain by meaning and by text at once, fused into one ranking (reciprocal-rank fusion of the
    embeddings, full-text and symbol-name rankings, then the callers of the best definitions), ordered for what the
    question wants: definitions first (then their callers, then tests and docs) for "where / which function / how
    is X implemented", docs first for "how do I use / configure X". Searches the project you work in (the active
    one, else the one holding your root) unless projects names others or all_projects=true asks for every project,
    quick-ingest and web page; `scope` says which projects were searched, why, and the argument that widens or
    narrows it. Each result names its project (id, type, root), file path, lines and type, which rankings found it
    (matched_by) and its score (1.0 when first in every ranking; orders this answer only). Filter by project types,
    node types (labels or scope kinds like 'function', 'class') and a substring (text_match); paginate with
    limit/offset."""
    import anyio.to_thread

    roots = await _caller_roots(ctx)

    def run() -> SearchResult:
        scope = state.scope_of_search(
            params.projects, all_projects=params.all_projects, roots=roots, project_types=params.project_types
        )
        found = state.search(
            params.query,
            project_ids=scope.project_ids,
            types=params.types,
            semantic=params.semantic,
            text_match=params.text_match,
            limit=params.limit,
            offset=params.offset,
        )
        return _search_result(found, scope.note)

    return await anyio.to_thread.run_sync(run)


async def _caller_roots(ctx: ToolContext | None) -> list[str] | None:
    """The directories of the client's MCP roots (None: it offers none; the server's roots stand in)."""
    from urllib.parse import unquote, urlparse

    if ctx is None:
        return None
    with contextlib.suppress(Exception):
        uris = await ctx.client_roots()
        if uris:
            return [unquote(urlparse(uri).path) for uri in uris if uri.startswith("file://")] or None
    return None


@tool(
    name="run_cypher",
    title="Run a read-only Cypher query",
    annotations=READ_ONLY,
    examples=(
        "run a read-only Cypher query on Neo4j",
        "query the graph with Cypher",
        "MATCH query on the graph database",
        "count nodes with a Cypher statement",
        "MATCH (n) RETURN count(n)",
        "neo4j cypher query",
    ),
)
def run_cypher(params: RunCypherInput, state: Any) -> RunCypherResult:
    """Neo4j backend only: run a read-only Cypher query on the brain (nodes carry the BrainNode label plus
    File/Scope/...; see get_schema). The query is read as Cypher tokens (quoting and comments do not hide
    anything): every CALL must name a read procedure (db.labels, db.relationshipTypes, db.propertyKeys,
    db.schema.*, db.index.fulltext/vector query procedures), namespaced functions only the temporal, spatial and
    vector built-ins; LOAD CSV, CALL {...} IN TRANSACTIONS, USE and a second statement are refused; then Neo4j's
    EXPLAIN must say it only reads, and it runs in a READ transaction with a timeout and at most `limit` rows.
    On the embedded SQLite backend (the default) it fails with DEPENDENCY_ERROR saying how to switch; there,
    query_entities, explore_relationships and get_schema answer the same questions."""
    from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

    if state.store.backend != "neo4j":
        raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, NEEDS_NEO4J)
    rows, truncated = state.store.run_read_query(
        params.query, params.parameters, timeout=params.timeout_seconds, limit=params.limit
    )
    return RunCypherResult(rows=rows, row_count=len(rows), truncated=truncated)


NEEDS_NEO4J = (
    "run_cypher needs the Neo4j backend, and this brain is on the embedded SQLite backend. On SQLite, use "
    "query_entities (nodes by label, name, path or property), explore_relationships (CALLS, IMPORTS, DEFINES... from a "
    "node given by id or name) and get_schema (labels, relationships, counts) instead. To switch to Neo4j 5: set "
    "backend = 'neo4j' in [sections.rag_ops] of the config file (or MCP_SECTIONS_RAG_OPS_BACKEND=neo4j) and "
    "NEO4J_URI, NEO4J_USERNAME and NEO4J_PASSWORD (or NEO4J_PASSWORD_FILE) in the server's environment, restart the "
    "server, then ingest again: the Neo4j brain starts empty."
)


def _search_result(result: dict[str, Any], scope: str) -> SearchResult:
    return SearchResult(
        results=[NodeOut(**item) for item in result["results"]],
        total_count=result["total_count"],
        searched_projects=result["searched_projects"],
        scope=scope,
        intent=result.get("intent"),
        mode=result["mode"],
        note=result["note"],
    )


SECTION = Section(
    id="rag_ops",
    name="Brain (knowledge graph)",
    description=(
        "A persistent knowledge graph of code and documents across projects: ingest directories or snippets, "
        "search by meaning and by text across projects, explore calls/imports/definitions, forget paths."
    ),
    instructions=(
        "Ingest a directory with ingest_directory or setup_project (incremental; re-run after edits; the answer says "
        "what is searchable), then use brain_search (the project you work in; all_projects=true for everything) or "
        "semantic_search (by meaning; all_projects=true too) and explore_relationships on the ids returned."
    ),
    tools=(
        ingest_directory,
        setup_project,
        ingest_code,
        generate_embeddings,
        create_project,
        load_project,
        switch_project,
        unload_project,
        list_projects,
        forget_path,
        gc,
        get_schema,
        query_entities,
        explore_relationships,
        semantic_search,
        brain_search,
        run_cypher,
    ),
    settings_model=RagOpsSettings,
    open_state=open_brain,
    warm_up=warm_up,
    extra="rag",
    masks_secrets=True,
    requirements=(
        *degrading(embedding_requirements("memory"), without="text search only (no search by meaning)"),
        Requirement(
            "tree-sitter grammars",
            module(
                "tree_sitter", *(f"tree_sitter_{lang}" for lang in ("javascript", "typescript", "go", "rust", "java"))
            ),
            InstallExtra("rag"),
            optional=True,
            without="Python and Markdown parsed; JavaScript, TypeScript, Go, Rust and Java kept as plain text",
        ),
        Requirement("Neo4j (backend = neo4j)", neo4j_reachable, "start Neo4j 5 and set NEO4J_URI/USERNAME/PASSWORD"),
    ),
    heavy="ONNX Runtime, the embedding model (about 160 MB of memory), tree-sitter and neo4j",
    embeds=True,
    output_source="knowledge graph (ingested files and pages)",
    container=Container(stage="runtime-tools", build="build-ml", workspace="read"),
)
