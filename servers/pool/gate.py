"""The gate: every tool call an agent host handles passes here, whatever its path — grant, approval, audit.

The paths a call can take into a host (the gateway, or the orchestration section):
- the client calls one of the host's own tools (`list_tool_sections`, `plan_actions`, `spawn_agent`, …);
- the client calls `call_section_tool`, or a section tool exposed directly in the gateway's tools/list;
- a sub-agent (of `plan_actions`, or of orchestration's `spawn_agent`/`delegate_task`/`parallel_tasks`) calls one of
  its section tools, or one of the host tools it was given (`list_tool_sections`, a nested `plan_actions`, …).
Each one is dispatched here, and here only:
1. its intent line goes to the host's audit log before anything else, its outcome line when it ends (`CANCELLED`
   when it is cancelled), refusals included;
2. the name is resolved for this caller: the client's own tools and exposed tools; a sub-agent's routes and host
   tools — the route carries the section id, and the call runs only if the caller's grant holds that section id
   (grant by identity, never by a tool's name) and the tool filters allow this call (`filters.py`: a read-only
   rule decides by the call's own annotations, as approval does);
3. approval: the client was asked before dispatch, by the published tool (`shared.serving.approval`); a sub-agent
   that has read untrusted content since its goal was approved is asked about again, mid-call, before each tool that
   needs approval — elicitation, else the status page, else refused (`approve_mid_call`);
4. the call runs (a host tool, or `SectionPool.forward`), and what the caller reads is marked: results of
   third-party sections and of untrusted host tools get a provenance envelope here (built-in sections wrap their own),
   and a sub-agent's trail records that it read untrusted content.
When traces are exported (`shared.serving.telemetry`), each call is a span here too, naming the section it resolved to.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from mcp_types import CallToolResult

from mcp_sections.shared.agents.scope import AgentScope
from mcp_sections.shared.framework.tools import Annotations, ToolContext, ToolSpec
from mcp_sections.shared.ground.errors import ToolFailure, not_found
from mcp_sections.shared.serving.approval import Approval, approve_mid_call
from mcp_sections.shared.serving.audit import AuditLog
from mcp_sections.shared.serving.calls import failure_result, parse_arguments, run_tool
from mcp_sections.shared.serving.pipeline import accounted
from mcp_sections.shared.serving.provenance import wrap_result
from mcp_sections.shared.serving.telemetry import CallSpan

from .pool import Route, SectionPool

logger = logging.getLogger("mcp_sections.gateway.gate")

FORWARD_TOOL = "call_section_tool"


@dataclass(frozen=True)
class SectionTarget:
    """A call resolved to one section's tool."""

    name: str  # as the caller named it
    section: str
    tool: str
    arguments: dict[str, Any]
    annotations: Mapping[str, Any] | None


class Gate:
    """One host's gate (see the module docstring)."""

    def __init__(
        self,
        pool: SectionPool,
        own: Mapping[str, ToolSpec],
        audit: AuditLog,
        approval: Approval,
        state_for: Callable[[AgentScope], Any],
        untrusted_own: Mapping[str, str] | None = None,
    ) -> None:
        """`own`: the host's own tools; `state_for(scope)`: the state they run on for a caller; `untrusted_own`: own
        tools whose results carry text from elsewhere (a sub-agent's report), with the source named."""
        self.pool = pool
        self.own = own
        self.audit = audit
        self.approval = approval
        self._state_for = state_for
        self._untrusted_own = dict(untrusted_own or {})

    async def dispatch(
        self,
        name: str,
        arguments: dict[str, Any],
        ctx: ToolContext | None,
        scope: AgentScope,
        failure: ToolFailure | None = None,
    ) -> CallToolResult:
        """Run one call for `scope` and return its result; every outcome is a result, and every call is audited
        (`failure`: the call was refused before it reached the gate, by the user's answer: recorded, not run)."""
        return await accounted(
            self.audit,
            name,
            arguments,
            scope.caller,
            failure,
            lambda span, watched: self._dispatch(name, arguments, watched, scope, span),
            ctx,
        )

    async def _dispatch(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None, scope: AgentScope, span: CallSpan | None
    ) -> CallToolResult:
        try:
            spec = self._own_tool(name, scope)
            if spec is not None and name != FORWARD_TOOL:
                await self._approve(name, spec.annotations, arguments, ctx, scope)
                result = await run_tool(spec, arguments, self._state_for(scope), ctx)
                source = self._untrusted_own.get(name)
                if source is not None:
                    self._read(scope, source)
                    return wrap_result(result, source, name, own_errors=True)  # its errors are the gate's own words
                return result
            target = self._section_target(name, arguments, scope)
            if span is not None:
                span.target(target.section, target.tool)
            await self.pool.check_shown(target.section, target.tool, target.arguments)  # by this call's annotations
            preflight = partial(self.pool.preflight, target.section, target.tool, target.arguments)
            await self._approve(target.name, target.annotations, target.arguments, ctx, scope, preflight)
            result = await self.pool.forward(target.section, target.tool, target.arguments, ctx, scope)
        except ToolFailure as failure:
            return failure_result(failure)
        entry = self.pool.entry(target.section)
        if not entry.trusted_output:
            self._read(scope, entry.output_source)
        return result if entry.builtin else wrap_result(result, entry.output_source, target.tool)

    # -- resolution and grant -----------------------------------------------------------------------------------

    def _own_tool(self, name: str, scope: AgentScope) -> ToolSpec | None:
        spec = self.own.get(name)
        if spec is None:
            return None
        if scope.is_client or name in scope.host_tools:
            return spec
        return None

    def _section_target(self, name: str, arguments: dict[str, Any], scope: AgentScope) -> SectionTarget:
        if name == FORWARD_TOOL and scope.is_client and FORWARD_TOOL in self.own:
            # the client's forwarding tool names the section and tool in its arguments (never a sub-agent's: its
            # tools are its routes, each checked against its grant below)
            params: Any = parse_arguments(self.own[FORWARD_TOOL].input_model, arguments)
            return SectionTarget(
                name=params.tool,
                section=params.section,
                tool=params.tool,
                arguments=params.arguments,
                annotations=self.pool.call_annotations(params.section, params.tool, params.arguments),
            )
        routes: Mapping[str, Route] = self.pool.exposed if scope.is_client else (scope.routes or {})
        route = routes.get(name)
        if route is None or not scope.grants(route.section, name):
            if scope.is_client:
                raise not_found(f"unknown tool {name[:80]!r}")
            mine = ", ".join([*scope.host_tools, *(routes or {})])
            raise not_found(f"tool {name[:80]!r} is not available to you; your tools: {mine}.")
        return SectionTarget(
            name=name,
            section=route.section,
            tool=route.tool,
            arguments=arguments,
            annotations=self.pool.call_annotations(route.section, route.tool, arguments)
            or route.definition.get("annotations"),
        )

    # -- approval and trail -------------------------------------------------------------------------------------

    async def _approve(
        self,
        name: str,
        annotations: Mapping[str, Any] | Annotations | None,
        arguments: dict[str, Any],
        ctx: ToolContext | None,
        scope: AgentScope,
        preflight: Callable[[], Awaitable[ToolFailure | None]] | None = None,
    ) -> None:
        """A sub-agent that read untrusted content is asked about again before a tool that needs approval (the
        client was asked by its transport; an untainted sub-agent runs under the approval of its goal): approval
        decides and asks (`shared.serving.approval.approve_mid_call`), after the tool's `preflight`."""
        trail = scope.trail
        if scope.is_client or trail is None or not trail.read_untrusted:
            return
        sources = ", ".join(trail.untrusted_sources)
        situation = (
            f"Sub-agent {scope.agent_id} (depth {scope.depth}) has read untrusted content ({sources}) since its goal "
            f"was approved, and now wants to run {name}."
        )
        reason = f"this sub-agent read untrusted content ({sources})"
        await approve_mid_call(
            name,
            annotations,
            arguments,
            ctx,
            caller=scope.caller,
            situation=situation,
            reason=reason,
            mode=self.approval,
            preflight=preflight,
        )

    @staticmethod
    def _read(scope: AgentScope, source: str) -> None:
        if scope.trail is not None:
            scope.trail.read(source)
