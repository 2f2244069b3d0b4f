"""The one agent host: what runs sub-agents over a section pool — the gateway's `plan_actions` and the orchestration
section's `spawn_agent`, `delegate_task` and `parallel_tasks` alike.

An agent host holds the section pool its sub-agents use, the gate every call passes (grant, approval, audit:
`gate.py`), the agent runtime (slots, depth, budgets: `shared.agents.runtime`), and its own tools — those of them a
sub-agent may get, and which of those delegate further (offered only below `max_depth`). The object that implements
the host's own tools (the gateway, or the orchestrator) is its `owner`: a host tool receives `ScopedState(owner,
scope)`. The gateway builds one host; a section that runs sub-agents and is hosted by the gateway (`hosted.py`) builds
its owner on the gateway's pool and shares the gateway's slots, so `max_subagents` bounds every sub-agent together and
no section process runs twice; served on its own, it builds a host of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from mcp_sections.shared.agents.runtime import AgentRuntime, SlotPool
from mcp_sections.shared.agents.scope import AgentLimits, AgentScope, ScopedState
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec
from mcp_sections.shared.serving.audit import audit_log
from mcp_sections.shared.serving.sdk_tools import definition
from mcp_sections.shared.settings.config import Settings

from .gate import Gate
from .pool import Route, SectionPool


class AgentHost:
    """A pool, a gate, a runtime and the host's own tools (see the module docstring); the runtime's `ToolHost`."""

    def __init__(
        self,
        owner: Any,
        settings: Settings,
        pool: SectionPool,
        specs: Mapping[str, ToolSpec],
        limits: AgentLimits,
        *,
        audit_name: str,
        offered: tuple[str, ...],
        delegating: frozenset[str],
        untrusted_own: Mapping[str, str],
        slots: SlotPool | None = None,
    ) -> None:
        """`offered`: the host tools a sub-agent gets; `delegating`: those offered only below `max_depth`;
        `untrusted_own`: host tools whose results carry what an agent or a file wrote (their provenance source);
        `slots`: a slot pool to share (the hosting gateway's)."""
        self.owner = owner
        self.pool = pool
        self.specs = dict(specs)
        self.limits = limits
        self._offered = offered
        self._delegating = delegating
        self.gate = Gate(
            pool,
            self.specs,
            audit_log(Path(settings.data_dir) / "audit", audit_name),
            settings.approval,
            state_for=lambda scope: ScopedState(owner, scope),
            untrusted_own=dict(untrusted_own),
        )
        self.runtime = AgentRuntime(self, slots=slots)

    # -- what the agent runtime needs (ToolHost) ----------------------------------------------------------

    async def agent_routes(self, section_ids: list[str]) -> Mapping[str, Route]:
        return await self.pool.agent_routes(section_ids)

    def host_tool_definition(self, name: str) -> dict[str, Any]:
        return definition(self.specs[name], lean=True)

    def agent_host_tools(self, depth: int) -> list[str]:
        """The host tools a sub-agent at `depth` gets: the delegating ones only while it may delegate deeper."""
        return [name for name in self._offered if name not in self._delegating or depth < self.limits.max_depth]

    async def dispatch(
        self,
        name: str,
        arguments: dict[str, Any],
        ctx: ToolContext | None,
        scope: AgentScope,
        failure: Any = None,
    ) -> CallToolResult:
        """Every call the host handles, the client's or a sub-agent's: through the gate."""
        return await self.gate.dispatch(name, arguments, ctx, scope, failure)
