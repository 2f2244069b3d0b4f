"""The orchestration section hosted by the gateway: one agent runtime per gateway.

Launched as a subprocess, orchestration would build a second gateway inside itself: a second copy of every
section process and a second pool of sub-agent slots (3 plan_actions + 3 spawn_agent = 6 sub-agents, although
`max_subagents` bounds them "across all callers"). Hosted here instead, its tools run in the gateway's process
on an `Orchestrator` given the gateway itself: the same section processes, the same slot pool (shared with
plan_actions), the same depth limit. Calls go through the same path as in-process sections (`run_tool` on
the section's declared tools), so results and error codes are those of `mcp-sections serve orchestration`.
A `[gateway.sections.orchestration]` table (e.g. a container) opts out: that server then runs on its own.
"""

from __future__ import annotations

from typing import Any

from mcp_sections.servers.pool.catalog import SectionEntry
from mcp_sections.servers.pool.inprocess import InProcessLauncher
from mcp_sections.servers.pool.settings import GatewaySettings
from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.calls import failure_result
from mcp_sections.shared.serving.pipeline import SectionCalls
from mcp_sections.shared.settings.config import Settings


class HostedOrchestration(InProcessLauncher):
    """The orchestration section on the gateway's own pool, slots and depth (see the module docstring)."""

    def __init__(self, entry: SectionEntry, settings: Settings, gateway: GatewaySettings, host: Any) -> None:
        super().__init__(entry, settings, gateway)
        self._host = host

    def _build_calls(self, section: Section, runtime: SectionRuntime) -> SectionCalls:
        """The section's pipeline on the orchestrator's client scope, over this gateway's pool and slots."""
        from mcp_sections.servers.orchestration.orchestrator import Orchestrator, hosted_limits
        from mcp_sections.servers.orchestration.settings import OrchestrationSettings

        config = runtime.settings_of(OrchestrationSettings)
        host = self._host
        orchestrator = Orchestrator(
            self._settings, config, host.pool, hosted_limits(config, host.config), slots=host.agents.slots
        )
        host.agent_runtimes[self.entry.id] = orchestrator.runtime  # its sub-agents on the status page
        calls = SectionCalls(section, runtime)
        calls.state.provide(orchestrator.client)
        return calls

    async def call_tool(
        self, name: str, arguments: dict[str, Any], progress: Any = None, read_only: bool = False, caller: Any = None
    ) -> Any:
        spec = self._open().specs.get(name)
        if spec is not None and spec.asks_user is not None:  # the gateway does not relay elicitation to its client
            return failure_result(
                ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"{name} must ask the user, but the gateway does not relay MCP elicitation to its client. Ask "
                    "the user yourself, or connect the orchestration section directly to a client with elicitation.",
                )
            )
        return await super().call_tool(name, arguments, progress, read_only, caller)
