"""`[sections.orchestration]` settings (environment: `MCP_SECTIONS_ORCHESTRATION_<KEY>`).

The model the sub-agents run on is the gateway's: `[gateway.model]` (or `MCP_SECTIONS_GATEWAY_MODEL_*`), and
third-party sections they may use are the gateway's `[gateway.sections.<id>]` — one place to configure both.

```toml
[sections.orchestration]
max_subagents = 3            # live sub-agents at once, shared by spawn_agent, delegate_task, parallel_tasks
max_depth = 1                # 1: sub-agents get no orchestration tools (one level, as in the seed contract)
default_sections = []        # sections spawn_agent gives when `sections` is omitted by the client
ask_timeout_seconds = 300    # ask_user: how long the user has to answer
ask_breaker_threshold = 3    # consecutive unanswered questions that open the circuit breaker
ask_cooldown_seconds = 60    # how long ask_user then refuses to ask

[sections.orchestration.agents.db_agent]     # a permanent agent, for delegate_task / parallel_tasks
name = "Database Agent"
description = "SQL and schema work."
system_prompt = "You are a database expert..."
sections = ["calculator", "todo"]
tools = []                   # optional: only these tools of those sections
model = "qwen2.5:32b"        # optional: another model on the same endpoint
capabilities = ["database", "sql"]
```
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_sections.shared.framework.sections import SECTION_ID
from mcp_sections.shared.settings.config import SectionSettings, split_commas

AGENT_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


class PermanentAgent(BaseModel):
    """`[sections.orchestration.agents.<id>]`: an agent delegate_task and parallel_tasks can hand work to."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    system_prompt: str = Field(default="", max_length=20_000)
    sections: list[str] = Field(default_factory=list)
    tools: list[str] | None = Field(default=None, description="Only these tools of its sections (default: all).")
    model: str | None = Field(default=None, description="Model name on the configured endpoint (default: the same).")
    capabilities: list[str] = Field(default_factory=list)


class OrchestrationSettings(SectionSettings):
    env_prefix: ClassVar[str] = "MCP_SECTIONS_ORCHESTRATION_"

    max_subagents: int = Field(default=3, ge=1, le=32, description="Live sub-agents at once (MAX_SUB_AGENTS).")
    max_depth: int = Field(default=1, ge=1, le=5, description="Deepest sub-agent; orchestration tools stop there.")
    max_batch: int = Field(default=3, ge=1, le=10, description="Tasks per parallel_tasks call.")
    default_sections: list[str] = Field(default_factory=list)
    agent_max_turns: int = Field(default=20, ge=1, le=500)
    agent_max_tool_calls: int = Field(default=50, ge=0, le=5000)
    agent_max_tokens: int = Field(default=200_000, ge=100)
    agent_max_seconds: float = Field(default=900, gt=0)
    ask_timeout_seconds: float = Field(default=300, gt=0, le=86_400)
    ask_breaker_threshold: int = Field(default=3, ge=1, le=100)
    ask_cooldown_seconds: float = Field(default=60, ge=0, le=86_400)
    agents: dict[str, PermanentAgent] = Field(default_factory=dict)

    _split_sections = field_validator("default_sections", mode="before")(split_commas)

    @field_validator("agents", mode="after")
    @classmethod
    def _valid_agent_ids(cls, value: dict[str, PermanentAgent]) -> dict[str, PermanentAgent]:
        import re

        for agent_id, agent in value.items():
            if not re.match(AGENT_ID_PATTERN, agent_id):
                raise ValueError(f"[sections.orchestration.agents.{agent_id}]: ids must match {AGENT_ID_PATTERN}")
            for section_id in agent.sections:
                if not SECTION_ID.match(section_id):
                    raise ValueError(f"agent {agent_id}: {section_id!r} is not a section id")
        return value
