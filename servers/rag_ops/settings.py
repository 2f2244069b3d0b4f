"""The settings of rag_ops: `[sections.rag_ops]` in the config file, `MCP_SECTIONS_RAG_OPS_*` in the environment."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from mcp_sections.shared.embeddings import EmbeddingSettings
from mcp_sections.shared.settings.config import SectionSettings


class RagOpsSettings(SectionSettings, EmbeddingSettings):
    """`[sections.rag_ops]` / `MCP_SECTIONS_RAG_OPS_*`."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_RAG_OPS_"

    backend: Literal["sqlite", "neo4j"] = Field(
        default="sqlite", description="sqlite: embedded <data_dir>/brain.sqlite3; neo4j: NEO4J_URI/USERNAME/PASSWORD."
    )
    max_file_bytes: int = Field(default=1_000_000, ge=1_000, le=50_000_000, description="Larger files are skipped.")
    max_files: int = Field(default=20_000, ge=1, le=1_000_000, description="Most files one ingest may hold.")
    quick_ingest_retention_days: float = Field(
        default=30.0, gt=0, le=3650, description="Quick-ingests not accessed for this long are removed by gc."
    )
    background_embeddings: bool = Field(
        default=True, description="Embed new nodes in a background thread after each ingest."
    )
    embeddings: bool = Field(default=True, description="Use an embedding model at all (off: text search only).")
