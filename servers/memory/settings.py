"""The settings of memory: `[sections.memory]` in the config file, `MCP_SECTIONS_MEMORY_*` in the environment."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcp_sections.servers.memory.store import DEFAULT_DUPLICATE_THRESHOLD
from mcp_sections.shared.embeddings import EmbeddingSettings
from mcp_sections.shared.settings.config import SectionSettings
from mcp_sections.shared.store.postgres import StoreBackendSettings


class MemorySettings(SectionSettings, EmbeddingSettings, StoreBackendSettings):
    """`[sections.memory]` in the config file, or `MCP_SECTIONS_MEMORY_*` (e.g. `..._EMBEDDING_MODEL`; `..._STORE` and
    `..._POSTGRES_URL` for a team's replicas sharing one PostgreSQL store)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_MEMORY_"

    embeddings_enabled: bool = Field(default=True, description="Off: text search only, the model is never loaded.")
    duplicate_threshold: float = Field(
        default=DEFAULT_DUPLICATE_THRESHOLD,
        gt=0.5,
        le=1.0,
        description="Cosine similarity from which a new memory counts as a duplicate of one in the same scope.",
    )
    vector_cache: bool = Field(
        default=True, description="Keep the vectors in an in-process matrix (off: reload them from SQLite per search)."
    )
