"""A section that runs sub-agents, hosted by the gateway: one agent host per gateway.

Launched as a subprocess, such a section (orchestration) would build a second gateway inside itself: a second copy of
every section process and a second pool of sub-agent slots (3 plan_actions + 3 spawn_agent = 6 sub-agents, although
`max_subagents` bounds them "across all callers"). Hosted here instead, its tools run in the gateway's process on the
state its declaration builds on the gateway's agent host (`Section.hosted`, `host.py`): the same section processes,
the same slot pool (shared with plan_actions), the same depth limit. Calls go through the same path as in-process
sections (`run_tool` on the section's declared tools), so results and error codes are those of `mcp-sections serve
<id>`. A `[gateway.sections.<id>]` table (e.g. a container) opts out: that server then runs on its own.
"""

from __future__ import annotations

from typing import Any

from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.calls import failure_result
from mcp_sections.shared.serving.pipeline import SectionCalls
from mcp_sections.shared.settings.config import Settings

from .catalog import SectionEntry
from .host import AgentHost
from .inprocess import InProcessLauncher
from .settings import GatewaySettings


class HostedSection(InProcessLauncher):
    """A section that runs sub-agents, on the gateway's agent host (see the module docstring)."""

    def __init__(
        self,
        entry: SectionEntry,
        settings: Settings,
        gateway: GatewaySettings,
        host: AgentHost,
        runtimes: dict[str, Any],
    ) -> None:
        """`runtimes`: where the gateway lists the agent runtimes it shows (the section's is added when it opens)."""
        super().__init__(entry, settings, gateway)
        self._host = host
        self._runtimes = runtimes

    def _build_calls(self, section: Section, runtime: SectionRuntime) -> SectionCalls:
        """The section's pipeline on the state its declaration builds on this gateway's agent host."""
        if section.hosted is None:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"section {section.id!r} runs sub-agents but declares no `hosted` state; give it a "
                f"[gateway.sections.{section.id}] table to run it on its own.",
            )
        state = section.hosted(runtime, self._host)
        self._runtimes[self.entry.id] = state.host.runtime  # its sub-agents on the status page
        calls = SectionCalls(section, runtime)
        calls.state.provide(state)
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
                    f"the user yourself, or connect the {self.entry.id} section directly to a client with elicitation.",
                )
            )
        return await super().call_tool(name, arguments, progress, read_only, caller)
