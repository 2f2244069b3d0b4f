"""Inputs and outputs of the memory tools."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from mcp_sections.servers.memory.store import (
    DEFAULT_LIMIT,
    MAX_CONTENT_LENGTH,
    MAX_LIMIT,
    MAX_METADATA_CHARS,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    MEMORY_ID_PATTERN,
    Memory,
    MemoryType,
    ScopeName,
    SearchMode,
)
from mcp_sections.shared.framework.tools import ToolInput, ToolResult
from mcp_sections.shared.ground.workflows import WORKFLOW_ID_RULE, WorkflowId

PREVIEW_CHARS = 1_000
MAX_QUERY_LENGTH = 2_000

TYPE_HELP = (
    "Memory type: 'user_pref' (user preferences), 'context' (facts about the current work), "
    "'knowledge' (domain facts and expertise), 'decision' (a decision and its rationale)."
)
WorkflowField = Annotated[
    WorkflowId | None,
    Field(
        default=None,
        description=(
            "Workflow whose memories this call works on; overrides the scope activated with "
            "memory_activate_workflow / memory_activate_general for this call only. Omit to use the activated "
            f"scope (per server process; general when nothing was activated). {WORKFLOW_ID_RULE[0].upper()}"
            f"{WORKFLOW_ID_RULE[1:]} (the same workflow ids as todo's)."
        ),
    ),
]
MemoryId = Annotated[
    str,
    Field(
        description="Memory id as returned by memory_add, memory_list or memory_search ('mem_' + 32 hex digits).",
        min_length=36,
        max_length=36,
        pattern=MEMORY_ID_PATTERN,
    ),
]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_LENGTH, pattern=r"\S")]
# Metadata's real bound is its serialised size (MAX_METADATA_CHARS, checked below); these make the schema say so too.
MAX_METADATA_FIELDS = 100
MAX_METADATA_NAME_CHARS = 200
Metadata = Annotated[
    dict[Annotated[str, Field(max_length=MAX_METADATA_NAME_CHARS)], Any], Field(max_length=MAX_METADATA_FIELDS)
]
Limit = Annotated[int, Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=f"Maximum results, 1-{MAX_LIMIT}.")]
ScopeField = Annotated[
    ScopeName,
    Field(
        default="both",
        description=(
            "'both' (default): the workflow's memories plus the general ones; 'workflow': only the workflow's "
            "(needs a workflow); 'general': only general memories (those stored outside any workflow)."
        ),
    ),
]


def _check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and len(json.dumps(value, ensure_ascii=False)) > MAX_METADATA_CHARS:
        raise ValueError(f"metadata must serialise to at most {MAX_METADATA_CHARS} JSON characters")
    return value


def _check_content(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("content must contain non-whitespace text")
    return value


# ---- inputs -----------------------------------------------------------------------------------
class ActivateWorkflowInput(ToolInput):
    workflow_id: WorkflowId = Field(
        description=f"Workflow to scope memories to from now on in this server process; {WORKFLOW_ID_RULE}."
    )


class ActivateGeneralInput(ToolInput):
    pass


class AddInput(ToolInput):
    type: MemoryType = Field(description=TYPE_HELP)
    content: str = Field(
        description=f"The memory itself, as a self-contained statement; 1-{MAX_CONTENT_LENGTH} characters.",
        min_length=1,
        max_length=MAX_CONTENT_LENGTH,
    )
    metadata: Metadata | None = Field(
        default=None,
        description=f"Optional JSON object stored with the memory (e.g. source, confidence); ≤ {MAX_METADATA_CHARS} "
        "characters once serialised.",
    )
    tags: list[Tag] | None = Field(
        default=None,
        description=f"Optional classification tags (≤ {MAX_TAGS}, each 1-{MAX_TAG_LENGTH} characters; stored "
        "lower-cased).",
        max_length=MAX_TAGS,
    )
    force: bool = Field(
        default=False,
        description="Store even if a near-identical memory already exists in the same scope (default false: the "
        "existing memory's id is returned as duplicate_of instead).",
    )
    workflow_id: WorkflowField

    _metadata = field_validator("metadata")(_check_metadata)
    _content = field_validator("content")(_check_content)


class GetInput(ToolInput):
    memory_id: MemoryId
    workflow_id: WorkflowField


class ListInput(ToolInput):
    type_filter: MemoryType | None = Field(default=None, description="Only memories of this type.")
    tags: list[Tag] | None = Field(
        default=None, description="Only memories carrying all of these tags (case-insensitive).", max_length=MAX_TAGS
    )
    limit: Limit
    scope: ScopeField
    workflow_id: WorkflowField


class SearchInput(ToolInput):
    query: str = Field(
        description=f"What to look for, in natural language (matched by meaning); 1-{MAX_QUERY_LENGTH} characters.",
        min_length=1,
        max_length=MAX_QUERY_LENGTH,
    )
    limit: Limit
    type_filter: MemoryType | None = Field(default=None, description="Only memories of this type.")
    tags: list[Tag] | None = Field(
        default=None, description="Only memories carrying all of these tags (case-insensitive).", max_length=MAX_TAGS
    )
    threshold: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Minimum cosine similarity (0-1) of a vector match (hybrid: score). Default: none; results "
        "are kept by their calibrated confidence (≥ 0.5), which reads the similarity, what is left of it without "
        "the words a memory shares with the query, and how many of the query's words it holds. When fewer than 3 "
        "memories clear it, the nearest others are added, marked below_threshold. Not applied to text matches.",
    )
    scope: ScopeField
    mode: SearchMode = Field(
        default="vector",
        description="'vector' (default): by meaning only. 'hybrid': meaning plus a bonus for memories holding "
        "the query's words (most when they hold all of them); better for names, ids and rare words.",
    )
    workflow_id: WorkflowField

    _query = field_validator("query")(_check_content)


class UpdateInput(ToolInput):
    memory_id: MemoryId
    content: str | None = Field(
        default=None,
        description=f"New content (1-{MAX_CONTENT_LENGTH} characters); the memory is re-embedded.",
        min_length=1,
        max_length=MAX_CONTENT_LENGTH,
    )
    metadata: Metadata | None = Field(default=None, description="New metadata object; replaces the old one entirely.")
    tags: list[Tag] | None = Field(
        default=None,
        description=f"New tags (≤ {MAX_TAGS}); replace the old ones entirely ([] removes all).",
        max_length=MAX_TAGS,
    )
    workflow_id: WorkflowField

    _metadata = field_validator("metadata")(_check_metadata)
    _content = field_validator("content")(_check_content)


class DeleteInput(ToolInput):
    memory_id: MemoryId
    workflow_id: WorkflowField


class ClearByTypeInput(ToolInput):
    type: MemoryType = Field(description="Type of the memories to delete. " + TYPE_HELP)
    workflow_id: WorkflowField


# ---- outputs ----------------------------------------------------------------------------------
class MemoryView(ToolResult):
    id: str
    type: MemoryType
    content: str = Field(description="The content (a preview when content_truncated is true).")
    content_length: int
    content_truncated: bool = False
    metadata: dict[str, Any]
    tags: list[str]
    scope: Literal["workflow", "general"]
    workflow_id: str | None
    created_at: str
    updated_at: str
    embedded: bool = Field(description="Whether the memory has a vector of the current model (semantic search).")

    @classmethod
    def of(cls, memory: Memory, preview: int | None = None) -> MemoryView:
        truncated = preview is not None and len(memory.content) > preview
        return cls(
            id=memory.id,
            type=memory.type,  # type: ignore[arg-type]
            content=memory.content[:preview] + "…" if truncated and preview else memory.content,
            content_length=len(memory.content),
            content_truncated=truncated,
            metadata=memory.metadata,
            tags=memory.tags,
            scope="workflow" if memory.workflow_id else "general",
            workflow_id=memory.workflow_id,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            embedded=memory.embedded,
        )

    def line(self) -> str:
        where = f"workflow {self.workflow_id}" if self.workflow_id else "general"
        tags = f" #{' #'.join(self.tags)}" if self.tags else ""
        text = self.content.replace("\n", " ")
        return f"{self.id} [{self.type}, {where}]{tags}: {text[:200]}{'…' if len(text) > 200 else ''}"


class ActivateResult(ToolResult):
    success: bool = True
    message: str
    scope: Literal["workflow", "general"]
    workflow_id: str | None
    memory_count: int = Field(description="Memories visible in this scope (workflow + general, or general only).")

    def render_text(self) -> str:
        return f"{self.message} ({self.memory_count} memories visible)."


class AddResult(ToolResult):
    success: bool = True
    memory_id: str = Field(description="Id of the stored memory, or of the existing one when duplicate_of is set.")
    stored: bool = Field(description="False when a near-identical memory already existed (see duplicate_of).")
    duplicate_of: str | None = None
    duplicate_similarity: float | None = None
    embedding_generated: bool
    scope: Literal["workflow", "general"]
    workflow_id: str | None
    message: str
    note: str | None = None

    def render_text(self) -> str:
        return self.message + (f" Note: {self.note}." if self.note else "")


class GetResult(ToolResult):
    success: bool = True
    memory: MemoryView

    def render_text(self) -> str:
        m = self.memory
        lines = [
            f"{m.id} [{m.type}, {'workflow ' + m.workflow_id if m.workflow_id else 'general'}]"
            f" created {m.created_at}, updated {m.updated_at}, {'embedded' if m.embedded else 'not embedded yet'}",
        ]
        if m.tags:
            lines.append("tags: " + ", ".join(m.tags))
        if m.metadata:
            lines.append("metadata: " + json.dumps(m.metadata, ensure_ascii=False))
        lines.append(m.content)
        return "\n".join(lines)


class ListResult(ToolResult):
    success: bool = True
    memories: list[MemoryView]
    count: int
    total: int = Field(description="Memories matching the filters (count is capped by limit).")
    scope: ScopeName
    workflow_id: str | None

    def render_text(self) -> str:
        if not self.memories:
            return f"No memories (scope {self.scope})."
        head = f"{self.count} of {self.total} memories, newest first:"
        return "\n".join([head, *(m.line() for m in self.memories)])


class SearchHit(ToolResult):
    memory: MemoryView
    similarity: float | None = Field(description="Cosine similarity to the query (null: no vector yet).")
    score: float | None = Field(
        description="Rank score: similarity plus the keyword bonus in hybrid mode, BM25 in text mode, else null."
    )
    matched_by: list[Literal["vector", "text"]]
    below_threshold: bool = Field(
        default=False, description="Nearest memory offered although it is below the threshold (confidence 0.5)."
    )
    confidence: float | None = Field(
        default=None,
        description="Calibrated probability that this memory answers the query (null: no vector, or a model not "
        "calibrated).",
    )
    verdict: Literal["match", "possible", "unrelated"] | None = Field(
        default=None,
        description="match (confidence ≥ 0.7, right ~9 times in 10): use it; possible (0.3-0.7, about half): "
        "check it; unrelated (< 0.3): treat it as no answer. A word a memory shares with the query counts only as "
        "far as the rest of the question agrees with the memory.",
    )


class SearchResult(ToolResult):
    success: bool = True
    results: list[SearchHit]
    count: int
    search_type: Literal["vector", "hybrid", "text"] = Field(
        description="How results were found: 'text' means embeddings were unavailable (see notes)."
    )
    threshold: float = Field(
        description="The similarity threshold in force: yours, else the similarity a result needs for confidence 0.5 "
        "when it shares no word with the query (the default decides by confidence)."
    )
    pending_embeddings: int = Field(description="Memories in scope still waiting for a vector (not in vector results).")
    notes: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        lines = [f"{self.count} results ({self.search_type} search)."]
        for hit in self.results:
            sim = f"{hit.similarity:.3f}" if hit.similarity is not None else "  -  "
            marker = " (below threshold)" if hit.below_threshold else ""
            judged = f" {hit.verdict} {hit.confidence:.2f}" if hit.verdict and hit.confidence is not None else ""
            lines.append(f"[{sim}{judged}]{marker} {hit.memory.line()}")
        lines += [f"Note: {note}." for note in self.notes]
        return "\n".join(lines)


class UpdateResult(ToolResult):
    success: bool = True
    memory_id: str
    updated_fields: list[str]
    embedding_generated: bool | None = Field(
        description="When content changed: whether the new content was embedded now (false: embedded later)."
    )
    message: str
    memory: MemoryView

    def render_text(self) -> str:
        return self.message


class DeleteResult(ToolResult):
    success: bool = True
    memory_id: str
    message: str

    def render_text(self) -> str:
        return self.message


class ClearResult(ToolResult):
    success: bool = True
    type: MemoryType
    count: int
    scope: Literal["workflow", "general"]
    workflow_id: str | None
    message: str

    def render_text(self) -> str:
        return self.message
