"""The memory section: persistent memories searched by meaning, scoped per workflow."""

from __future__ import annotations

import threading
from typing import Any

from mcp_sections.servers.memory.confidence import verdict
from mcp_sections.servers.memory.models import (
    PREVIEW_CHARS,
    ActivateGeneralInput,
    ActivateResult,
    ActivateWorkflowInput,
    AddInput,
    AddResult,
    ClearByTypeInput,
    ClearResult,
    DeleteInput,
    DeleteResult,
    GetInput,
    GetResult,
    ListInput,
    ListResult,
    MemoryView,
    SearchHit,
    SearchInput,
    SearchResult,
    UpdateInput,
    UpdateResult,
)
from mcp_sections.servers.memory.settings import MemorySettings
from mcp_sections.servers.memory.store import MemoryStore
from mcp_sections.shared.embeddings import EmbeddingService, get_embedder
from mcp_sections.shared.embeddings.requirements import embedding_requirements
from mcp_sections.shared.framework.requirements import degrading
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime
from mcp_sections.shared.framework.tools import CREATE, OVERWRITE, READ_ONLY, WRITE, tool
from mcp_sections.shared.ground.errors import invalid_input


class MemoryState:
    """The store plus the activated scope. The activation is per server process (shared by its clients)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.active_workflow: str | None = None
        self._lock = threading.Lock()

    def workflow(self, explicit: str | None) -> str | None:
        if explicit is not None:
            return explicit
        with self._lock:
            return self.active_workflow

    def activate(self, workflow_id: str | None) -> None:
        with self._lock:
            self.active_workflow = workflow_id

    def close(self) -> None:
        self.store.close()


def open_memory(runtime: SectionRuntime) -> MemoryState:
    settings = runtime.settings_of(MemorySettings)
    store = MemoryStore.in_data_dir(
        runtime.data_dir,
        None,
        settings,
        wait_seconds=settings.embedding_wait_seconds,
        duplicate_threshold=settings.duplicate_threshold,
        vector_cache=settings.vector_cache,
    )
    if settings.embeddings_enabled:
        store.attach_embeddings(
            EmbeddingService(get_embedder(settings, runtime.settings.cache_dir), store.embedding_cache())
        )
    return MemoryState(store)


def warm_up(state: Any) -> None:
    """Import and load the model in the background, then embed whatever is pending."""
    if isinstance(state, MemoryState) and state.store.embeddings is not None:
        embedder = state.store.embeddings.embedder
        if embedder.load():
            state.store.kick_pending()


def _scope_of(workflow_id: str | None) -> str:
    return "workflow" if workflow_id else "general"


@tool(
    name="memory_activate_workflow",
    title="Scope memory to a workflow",
    annotations=WRITE,
    examples=(
        "scope my memories to a specific workflow",
        "switch memory to the workflow of project X",
        "set the active workflow for memories",
        "work inside one workflow's memory",
        "from now on, keep memories in this workflow",
        "activate a workflow scope for memory",
    ),
)
def memory_activate_workflow(params: ActivateWorkflowInput, state: MemoryState) -> ActivateResult:
    """Make a workflow the active memory scope for the following calls of this server process.

    Afterwards memory_add stores into this workflow, and list/search see its memories plus the general ones;
    other workflows' memories stay invisible. The activation lives in the server process (shared by everything
    connected to it); stateless clients should rather pass workflow_id on each call.
    """
    state.activate(params.workflow_id)
    _, total = state.store.list(workflow_id=params.workflow_id, scope="both", limit=1)
    return ActivateResult(
        message=f"Workflow scope activated: {params.workflow_id}",
        scope="workflow",
        workflow_id=params.workflow_id,
        memory_count=total,
    )


@tool(
    name="memory_activate_general",
    title="Use general memory scope",
    annotations=WRITE,
    examples=(
        "use the global memories again",
        "leave the workflow memory scope",
        "go back to general memory",
        "stop using a workflow for memory",
        "switch back to the shared general scope",
        "use memories from all workflows",
    ),
)
def memory_activate_general(params: ActivateGeneralInput, state: MemoryState) -> ActivateResult:
    """Leave any workflow scope: following calls of this server process use general (cross-workflow) memories.

    memory_add then stores general memories, visible from every workflow with scope='both'. Calls that pass
    workflow_id explicitly are not affected.
    """
    state.activate(None)
    _, total = state.store.list(workflow_id=None, scope="general", limit=1)
    return ActivateResult(message="General mode activated", scope="general", workflow_id=None, memory_count=total)


@tool(
    name="memory_add",
    title="Store a memory",
    annotations=CREATE,
    examples=(
        "remember this fact for later",
        "save the user's preference for tabs over spaces",
        "record a decision and why we made it",
        "store a note about the project",
        "remember that the API uses OAuth",
        "store a piece of knowledge for later",
    ),
)
def memory_add(params: AddInput, state: MemoryState) -> AddResult:
    """Store a memory (a preference, context fact, piece of knowledge or decision) for later retrieval by meaning.

    It goes to the workflow given by workflow_id, else the activated workflow, else the general scope. The
    content is embedded for semantic search (embedding_generated=true); while the embedding model is still
    loading the memory is stored at once and embedded in the background shortly after (embedding_generated=false).
    If a near-identical memory (same text, or cosine ≥ 0.97) already exists in the same scope, nothing is stored
    and its id is returned with duplicate_of; pass force=true to store a twin anyway. Search before adding.
    """
    workflow_id = state.workflow(params.workflow_id)
    outcome = state.store.add(
        params.type,
        params.content,
        workflow_id=workflow_id,
        metadata=params.metadata,
        tags=params.tags,
        force=params.force,
    )
    where = f"workflow {workflow_id}" if workflow_id else "general scope"
    if outcome.stored:
        message = f"Memory stored successfully in {where}: {outcome.memory.id}."
    else:
        message = (
            f"Not stored: near-identical to existing memory {outcome.duplicate_of} in {where} "
            f"(similarity {outcome.duplicate_similarity}); pass force=true to store it anyway."
        )
    return AddResult(
        memory_id=outcome.memory.id,
        stored=outcome.stored,
        duplicate_of=outcome.duplicate_of,
        duplicate_similarity=outcome.duplicate_similarity,
        embedding_generated=outcome.embedding_generated,
        scope=_scope_of(workflow_id),  # type: ignore[arg-type]
        workflow_id=workflow_id,
        message=message,
        note=outcome.note,
    )


@tool(
    name="memory_get",
    title="Read a memory",
    annotations=READ_ONLY,
    examples=(
        "read one stored memory by its id",
        "look at a memory's content, tags and metadata",
        "fetch a memory by id",
        "show a memory's full text",
        "open a memory from its mem_ id",
        "get the full content of one memory",
    ),
)
def memory_get(params: GetInput, state: MemoryState) -> GetResult:
    """Return one memory in full (content, metadata, tags, scope, timestamps) by its id.

    Only memories of the current workflow and general ones are visible; another workflow's memory is NOT_FOUND.
    """
    memory = state.store.get(params.memory_id, workflow_id=state.workflow(params.workflow_id))
    return GetResult(memory=MemoryView.of(memory))


@tool(
    name="memory_list",
    title="List memories",
    annotations=READ_ONLY,
    examples=(
        "show my latest memories",
        "list the stored knowledge entries with a given tag",
        "list memories of a type",
        "browse what's stored in memory",
        "show the ten most recent memories",
        "list the memories tagged deployment",
    ),
)
def memory_list(params: ListInput, state: MemoryState) -> ListResult:
    """List memories newest first, optionally filtered by type and tags (all given tags must match).

    scope 'both' (default) = the workflow's memories plus general ones, 'workflow' = only the workflow's,
    'general' = only general ones. limit 1-100 (default 10); content longer than 1000 characters is shown as
    a preview (use memory_get for the full text). To find memories by topic, use memory_search instead.
    """
    workflow_id = state.workflow(params.workflow_id)
    memories, total = state.store.list(
        workflow_id=workflow_id,
        scope=params.scope,
        type_filter=params.type_filter,
        tags=params.tags,
        limit=params.limit,
    )
    views = [MemoryView.of(memory, PREVIEW_CHARS) for memory in memories]
    return ListResult(memories=views, count=len(views), total=total, scope=params.scope, workflow_id=workflow_id)


@tool(
    name="memory_search",
    title="Search memories by meaning",
    annotations=READ_ONLY,
    examples=(
        "search my notes by meaning",
        "what do I remember about the deployment setup",
        "find memories related to a topic",
        "look up something I saved before",
        "recall what we decided about the database",
        "retrieve stored preferences, facts or decisions related to a question",
    ),
)
def memory_search(params: SearchInput, state: MemoryState) -> SearchResult:
    """Find memories similar in meaning to a natural-language query, best first, with their cosine similarity.

    Each result has a confidence, the calibrated probability that it answers the query, and a verdict: match
    (≥ 0.7: use it), possible (0.3-0.7: check it), unrelated (< 0.3: no answer). By default results with
    confidence ≥ 0.5 come first; with `threshold`, those whose similarity (hybrid: score) reaches it. When fewer
    than 3 clear it, the nearest other memories complete the answer, marked below_threshold, so a question in
    other words is never left empty while memories exist.
    mode='hybrid' adds a bonus for memories holding the query's words (ids, names). If the embedding model
    is unavailable the search falls back to keyword search and says so (search_type='text', threshold not
    applied); right after the server starts a search may wait a few seconds for the model to load.
    Same scope rules as memory_list; limit 1-100 (default 10).
    """
    workflow_id = state.workflow(params.workflow_id)
    outcome = state.store.search(
        params.query,
        workflow_id=workflow_id,
        scope=params.scope,
        type_filter=params.type_filter,
        tags=params.tags,
        limit=params.limit,
        threshold=params.threshold,
        mode=params.mode,
    )
    hits = [
        SearchHit(
            memory=MemoryView.of(found.memory, PREVIEW_CHARS),
            similarity=found.similarity,
            score=found.score,
            matched_by=list(found.matched_by),  # type: ignore[arg-type]
            below_threshold=found.below_threshold,
            confidence=found.confidence,
            verdict=None if found.confidence is None else verdict(found.confidence),
        )
        for found in outcome.results
    ]
    return SearchResult(
        results=hits,
        count=len(hits),
        search_type=outcome.search_type,
        threshold=state.store.threshold_for(params.threshold),
        pending_embeddings=outcome.pending_embeddings,
        notes=outcome.notes,
    )


@tool(
    name="memory_update",
    title="Update a memory",
    annotations=OVERWRITE,
    examples=(
        "edit a stored memory's text",
        "add tags to an existing memory",
        "correct an existing memory",
        "change what a memory says",
        "refresh a stored fact that is no longer true",
        "update a saved note with new information",
    ),
)
def memory_update(params: UpdateInput, state: MemoryState) -> UpdateResult:
    """Change a memory's content, metadata and/or tags (each given field replaces the old value).

    New content is re-embedded (in the background if the model is still loading). At least one of content,
    metadata, tags is required. Same visibility rules as memory_get.
    """
    if params.content is None and params.metadata is None and params.tags is None:
        raise invalid_input("nothing to update: pass at least one of content, metadata, tags.")
    memory, changed, embedded = state.store.update(
        params.memory_id,
        workflow_id=state.workflow(params.workflow_id),
        content=params.content,
        metadata=params.metadata,
        tags=params.tags,
    )
    what = ", ".join(changed) if changed else "nothing (content identical)"
    return UpdateResult(
        memory_id=memory.id,
        updated_fields=changed,
        embedding_generated=embedded,
        message=f"Memory {memory.id} updated: {what}.",
        memory=MemoryView.of(memory, PREVIEW_CHARS),
    )


@tool(
    name="memory_delete",
    title="Delete a memory",
    annotations=OVERWRITE,
    examples=(
        "delete one memory",
        "remove a wrong note from memory",
        "forget a specific memory",
        "remove a memory permanently by id",
        "delete the memory with this id",
        "get rid of a stored memory",
    ),
)
def memory_delete(params: DeleteInput, state: MemoryState) -> DeleteResult:
    """Delete one memory by id, permanently. Same visibility rules as memory_get (NOT_FOUND otherwise). For a
    memory already deleted (a call repeated after its answer was lost) the NOT_FOUND says when (details
    deleted_at): that delete is done."""
    memory = state.store.delete(params.memory_id, workflow_id=state.workflow(params.workflow_id))
    return DeleteResult(memory_id=memory.id, message=f"Memory {memory.id} deleted successfully.")


@tool(
    name="memory_clear_by_type",
    title="Delete all memories of a type",
    annotations=OVERWRITE,
    examples=(
        "delete all memories of one kind",
        "clear every decision memory of this workflow",
        "bulk delete memories by type",
        "empty one category of memories",
        "wipe all user_pref memories",
        "remove every context memory in this workflow",
    ),
)
def memory_clear_by_type(params: ClearByTypeInput, state: MemoryState) -> ClearResult:
    """Permanently delete every memory of one type in the active scope only.

    With a workflow (workflow_id or the activated one) only that workflow's memories of the type are deleted;
    in general mode only the general ones. Other workflows are never touched. Returns how many were deleted.
    """
    workflow_id = state.workflow(params.workflow_id)
    count = state.store.clear_by_type(params.type, workflow_id=workflow_id)
    where = f"workflow {workflow_id}" if workflow_id else "the general scope"
    return ClearResult(
        type=params.type,
        count=count,
        scope=_scope_of(workflow_id),  # type: ignore[arg-type]
        workflow_id=workflow_id,
        message=f"Cleared {count} memories of type '{params.type}' from {where}.",
    )


SECTION = Section(
    id="memory",
    requirements=degrading(
        embedding_requirements("memory"), without="text search only (memories kept without vectors)"
    ),
    heavy="ONNX Runtime and the embedding model (about 160 MB of memory)",
    embeds=True,
    output_source="memory",
    container=Container(build="build-ml"),
    name="Memory",
    description="Persistent memories (preferences, context, knowledge, decisions) searched by meaning, per workflow.",
    instructions=(
        "Long-term memory. Search (memory_search) before adding to avoid duplicates; store self-contained "
        "statements with memory_add. Memories are isolated per workflow: pass workflow_id on each call, or "
        "activate one with memory_activate_workflow (per server process). General memories are visible from "
        "every workflow."
    ),
    tools=(
        memory_activate_workflow,
        memory_activate_general,
        memory_add,
        memory_get,
        memory_list,
        memory_search,
        memory_update,
        memory_delete,
        memory_clear_by_type,
    ),
    settings_model=MemorySettings,
    open_state=open_memory,
    warm_up=warm_up,
    extra="memory",
)
