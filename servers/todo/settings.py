"""The settings of todo: `[sections.todo]` in the config file, `MCP_SECTIONS_TODO_*` in the environment."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcp_sections.servers.todo.board import MAX_TASKS_PER_WORKFLOW
from mcp_sections.shared.settings.config import SectionSettings
from mcp_sections.shared.store.postgres import StoreBackendSettings


class TodoSettings(SectionSettings, StoreBackendSettings):
    """`[sections.todo]` in the config file, or `MCP_SECTIONS_TODO_*`: the board's cap, and where it is kept
    (`store = "postgres"` and `postgres_url` for a team's replicas; the SQLite file of the data directory else)."""

    env_prefix: ClassVar[str] = "MCP_SECTIONS_TODO_"

    max_tasks_per_workflow: int = Field(
        default=MAX_TASKS_PER_WORKFLOW, ge=1, le=1_000_000, description="Cap on the number of tasks of one workflow."
    )
