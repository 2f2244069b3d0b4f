"""The gateway: section catalog + launchers + the dispatch of every tool call (client's or sub-agent's)."""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
from mcp_types import CallToolResult

from mcp_sections.shared.about import package_version
from mcp_sections.shared.agents.scope import CLIENT_SCOPE, AgentLimits, AgentScope, ScopedState
from mcp_sections.shared.audit import AuditLog
from mcp_sections.shared.calls import failure_result, run_tool
from mcp_sections.shared.config import ConfigError, Settings
from mcp_sections.shared.errors import ErrorCode, ToolFailure, not_found, permission_denied
from mcp_sections.shared.sdk_tools import spec_schemas
from mcp_sections.shared.tools import ToolContext, ToolSpec, spec_of

from . import context as context_info
from .catalog import SectionEntry, SectionTool, build_catalog
from .hosted import HostedOrchestration, hosted
from .inprocess import InProcessLauncher, in_process_refusal
from .launchers import STARTUP_TIMEOUT_SECONDS, SectionLauncher
from .models import (
    DescribeSectionResult,
    EnvironmentInfoResult,
    FindToolsInput,
    FindToolsResult,
    GitInfo,
    ListSectionsResult,
    ModelInfo,
    PlanActionsInput,
    PlanActionsResult,
    ProjectInfoResult,
    SectionInfo,
    SectionStatus,
    WorkingDirectoryResult,
)
from .section import GATEWAY_TOOLS
from .settings import GatewaySettings
from .tool_search import ToolSearch

logger = logging.getLogger("mcp_sections.gateway")

GATEWAY_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (spec_of(f) for f in GATEWAY_TOOLS)}
SUBAGENT_GATEWAY_TOOLS = ("list_tool_sections", "plan_actions")
FORWARD_TOOL = "call_section_tool"
AGENT_SECTIONS = frozenset({"orchestration"})  # built-in sections that run sub-agents themselves
SHUTDOWN_GRACE_SECONDS = 10.0


@functools.cache
def _own_tool_definition(name: str) -> dict[str, Any]:
    spec = GATEWAY_SPECS[name]
    return {
        "name": name,
        "description": spec.description,
        "inputSchema": spec_schemas(spec, lean=True)[0],
    }


@dataclass(frozen=True)
class Route:
    """A tool name as published (by the gateway to its client, or to a sub-agent) → the section tool."""

    name: str
    section: str
    tool: str
    definition: dict[str, Any]


class Gateway:
    def __init__(self, settings: Settings, gateway: GatewaySettings) -> None:
        self.settings = settings
        self.config = gateway
        self.audit = AuditLog(settings.data_dir / "audit", "gateway")
        self.limits = AgentLimits.of(gateway)
        self.catalog: dict[str, SectionEntry] = build_catalog(gateway)
        for section_id in gateway.in_process:
            entry = self.catalog.get(section_id)
            if entry is None:
                raise ConfigError(
                    f"cannot run unknown section {section_id!r} in process; known: {', '.join(self.catalog)}"
                )
            refusal = in_process_refusal(entry)
            if refusal is not None:
                raise ConfigError(f"section {section_id!r} cannot run in the gateway's process: {refusal}.")
        self.launchers: dict[str, SectionLauncher | InProcessLauncher] = {
            entry.id: HostedOrchestration(entry, settings, gateway, self)
            if hosted(entry)
            else (InProcessLauncher if entry.id in gateway.in_process else SectionLauncher)(entry, settings, gateway)
            for entry in self.catalog.values()
        }
        for section_id in gateway.expose:
            entry = self.catalog.get(section_id)
            if entry is None:
                raise ConfigError(f"cannot expose unknown section {section_id!r}; known: {', '.join(self.catalog)}")
            if entry.load_error:
                raise ConfigError(f"cannot expose section {section_id!r}: {entry.load_error}")
        self.exposed: dict[str, Route] = {}
        self.tool_search = ToolSearch(self.catalog, settings)
        from mcp_sections.shared.agents.runtime import AgentRuntime

        self.agents = AgentRuntime(self)  # type: ignore[arg-type]

    # -- lifetime ----------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Own the task group every section connection lives in; stop them all on the way out."""
        async with anyio.create_task_group() as task_group:
            for launcher in self.launchers.values():
                launcher.attach(task_group)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for launcher in self.launchers.values():
                        await launcher.stop()
                task_group.cancel_scope.deadline = anyio.current_time() + SHUTDOWN_GRACE_SECONDS

    def prepare_exposed(self) -> None:
        """Routes of the exposed sections' tools, fixed before serving: tools/list never changes afterwards.

        Built-in sections are described from their declarations; an exposed third-party section is asked
        for its tools once, through a short-lived connection, before the gateway starts serving.
        """
        missing = [
            entry for entry in self.catalog.values() if entry.id in self.config.expose and entry.declaration is None
        ]
        if missing:
            anyio.run(self._probe, missing)
        routes: dict[str, Route] = {}
        for entry in self.catalog.values():
            if entry.id not in self.config.expose:
                continue
            for definition in entry.definitions(self.settings) or []:
                name = self.published_name(entry, definition["name"], taken=routes)
                routes[name] = Route(name=name, section=entry.id, tool=definition["name"], definition=definition)
        self.exposed = routes

    async def _probe(self, entries: list[SectionEntry]) -> None:
        for entry in entries:
            try:
                with anyio.fail_after(STARTUP_TIMEOUT_SECONDS):
                    await self.launchers[entry.id].probe_definitions()
            except Exception as exc:
                logger.error("exposed section %s is unavailable, its tools are not listed: %r", entry.id, exc)

    def published_name(self, entry: SectionEntry, tool: str, taken: dict[str, Any]) -> str:
        """A section tool's name where it meets other names: third-party collisions become `<section>__<tool>`."""
        reserved = set(GATEWAY_SPECS) | set(taken)
        if entry.declaration is not None:  # built-in names are unique across the suite
            return f"{entry.id}__{tool}" if tool in reserved else tool
        for other in self.catalog.values():
            if other.declaration is not None:
                reserved.update(other.declared_tools or [])
        return f"{entry.id}__{tool}" if tool in reserved else tool

    # -- dispatch ----------------------------------------------------------------------------------

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None, scope: AgentScope = CLIENT_SCOPE
    ) -> CallToolResult:
        """Every call of a gateway-published tool (client or sub-agent) goes through here, and is audited."""
        started = time.perf_counter()
        result = await self._call(name, arguments, ctx, scope)
        self.audit.record(
            name, arguments, result, (time.perf_counter() - started) * 1000, (scope.depth, scope.agent_id)
        )
        return result

    async def _call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None, scope: AgentScope
    ) -> CallToolResult:
        spec = GATEWAY_SPECS.get(name)
        if spec is not None:
            if name == FORWARD_TOOL:
                return await self._forward_call(arguments, ctx, scope)
            return await run_tool(spec, arguments, ScopedState(self, scope), ctx)
        route = self.exposed.get(name)
        if route is not None:
            return await self.forward(route.section, route.tool, arguments, ctx, scope)
        return failure_result(not_found(f"unknown tool {name[:80]!r}"))

    async def _forward_call(
        self, arguments: dict[str, Any], ctx: ToolContext | None, scope: AgentScope
    ) -> CallToolResult:
        from mcp_sections.shared.calls import parse_arguments

        try:
            params = parse_arguments(GATEWAY_SPECS[FORWARD_TOOL].input_model, arguments)
        except ToolFailure as failure:
            return failure_result(failure)
        return await self.forward(params.section, params.tool, params.arguments, ctx, scope)  # type: ignore[attr-defined]

    async def forward(
        self,
        section_id: str,
        tool: str,
        arguments: dict[str, Any],
        ctx: ToolContext | None,
        caller: AgentScope = CLIENT_SCOPE,
    ) -> CallToolResult:
        """Validate against the section tool's inputSchema, then call it for `caller` (whose depth and agent id
        the section's audit log records); its result comes back unchanged."""
        try:
            entry = self.entry(section_id)
            if entry.cached_tools is None:  # first call: the process starts while its checkers are built
                self.launchers[section_id].boot()
            tools = await self.section_tools(entry)
            section_tool = tools.get(tool)
            if section_tool is None:
                raise not_found(f"section {section_id!r} has no tool {tool[:80]!r}; its tools are: {', '.join(tools)}.")
            checked = section_tool.checker().check(arguments)
            progress = ctx.report_progress if ctx is not None else None
            read_only = bool((section_tool.definition.get("annotations") or {}).get("readOnlyHint"))
            return await self.launchers[section_id].call_tool(tool, checked, progress, read_only, caller)
        except ToolFailure as failure:
            return failure_result(failure)

    def entry(self, section_id: str) -> SectionEntry:
        entry = self.catalog.get(section_id)
        if entry is None:
            raise not_found(
                f"unknown section {section_id[:40]!r}; sections: {', '.join(self.catalog)} (see list_tool_sections)."
            )
        return entry

    async def definitions(self, entry: SectionEntry) -> list[dict[str, Any]]:
        if entry.load_error:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"section {entry.id!r} cannot be loaded: {entry.load_error}")
        definitions = entry.definitions(self.settings)
        if definitions is None:
            definitions = await self.launchers[entry.id].list_tools()
            entry.remember_definitions(definitions)
        return definitions

    async def section_tools(self, entry: SectionEntry) -> dict[str, SectionTool]:
        """The section's tools by name, each with its argument checker (built on its first call)."""
        tools = entry.cached_tools
        if tools is not None:
            return tools
        if entry.builtin:  # import the declaration and compute its definitions off the event loop
            await anyio.to_thread.run_sync(entry.tools, self.settings)
        await self.definitions(entry)  # raises when it cannot be loaded; lists a third-party section's tools
        tools = entry.tools(self.settings)
        if tools is None:  # pragma: no cover - definitions() either fills them or raises
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"section {entry.id!r} did not list its tools.")
        return tools

    # -- the gateway's own tools ---------------------------------------------------------------------

    def section_info(self, entry: SectionEntry) -> SectionInfo:
        launcher = self.launchers[entry.id]
        tools = entry.declared_tools
        failed = entry.load_error or (launcher.last_error if launcher.state in ("failed", "stopped") else None)
        return SectionInfo(
            id=entry.id,
            name=entry.name,
            description=entry.description,
            tools=tools or [],
            tool_count=len(tools or []),
            tools_known=tools is not None,
            state="failed" if entry.load_error else launcher.state,
            kind=entry.kind,
            exposed=entry.id in self.config.expose,
            error=failed,
        )

    def own_tool_names(self) -> list[str]:
        """The gateway's own tools in the client's tools/list (plan_actions only when sub-agents may run)."""
        return [name for name in GATEWAY_SPECS if name != "plan_actions" or self.config.max_depth > 0]

    def always_available(self, scope: AgentScope) -> list[str]:
        if scope.is_client:
            return self.own_tool_names()
        return [name for name in SUBAGENT_GATEWAY_TOOLS if scope.tool_names and name in scope.tool_names]

    async def load_declarations(self) -> None:
        """Import every built-in section's declaration (once; off the event loop): names, descriptions, tools."""
        if any(not entry.loaded for entry in self.catalog.values()):
            await anyio.to_thread.run_sync(lambda: [entry.load_error for entry in self.catalog.values()])

    async def list_sections(self, scope: AgentScope) -> ListSectionsResult:
        await self.load_declarations()
        return ListSectionsResult(
            sections=[self.section_info(entry) for entry in self.catalog.values()],
            always_available=self.always_available(scope),
        )

    async def describe_section(self, section_id: str) -> DescribeSectionResult:
        entry = self.entry(section_id)
        if not entry.loaded:
            await anyio.to_thread.run_sync(lambda: entry.load_error)
        definitions = await self.definitions(entry)
        return DescribeSectionResult(section=self.section_info(entry), tools=definitions)

    async def find_tools(self, params: FindToolsInput) -> FindToolsResult:
        for section_id in params.sections or []:
            self.entry(section_id)  # NOT_FOUND names the known sections
        return await anyio.to_thread.run_sync(self.tool_search.find, params, abandon_on_cancel=True)

    async def working_directory(self, ctx: ToolContext | None) -> WorkingDirectoryResult:
        client_roots = None
        if ctx is not None:
            try:
                client_roots = await ctx.client_roots()
            except Exception:  # roots are optional; a client that fails to answer has none
                logger.debug("client roots unavailable", exc_info=True)
        return WorkingDirectoryResult(
            cwd=str(context_info.cwd()),
            roots=[str(root) for root in self.settings.roots],
            client_roots=client_roots,
        )

    def model_info(self, ctx: ToolContext | None = None) -> ModelInfo:
        import os

        from mcp_sections.shared.agents.sampling import describe_choice

        model = self.config.model
        key_env = model.api_key_env
        return ModelInfo(
            configured=model.configured,
            provider=model.provider,
            model=model.model,
            base_url=_without_userinfo(model.base_url) if model.base_url else None,
            api_key_env=key_env,
            api_key_set=bool(key_env and os.environ.get(key_env)),
            **describe_choice(model, ctx),  # sampling or HTTP on this connection (shared.agents.sampling)
        )

    def environment_info(self, ctx: ToolContext | None = None) -> EnvironmentInfoResult:
        return EnvironmentInfoResult(
            os=context_info.os_info(),
            python=context_info.python_info(),
            gateway_version=package_version(),
            sections=[
                SectionStatus(
                    id=entry.id,
                    state="failed" if entry.loaded and entry.load_error else self.launchers[entry.id].state,
                    exposed=entry.id in self.config.expose,
                )
                for entry in self.catalog.values()
            ],
            model=self.model_info(ctx),
            max_depth=self.config.max_depth,
            max_subagents=self.config.max_subagents,
            data_dir=str(self.settings.data_dir),
        )

    def project_info(self, path: str | None) -> ProjectInfoResult:
        from mcp_sections.shared.guards.paths import PathGuard

        roots = self.settings.roots
        base = roots[0] if roots else context_info.cwd()
        # Without configured roots the working directory is the one project this gateway may describe.
        guard = PathGuard(list(roots) or [base])
        target = (base / Path(path).expanduser()).resolve() if path else base
        if not guard.contains(target):
            raise permission_denied(
                f"{path!r} is outside the allowed roots ({', '.join(str(root) for root in guard.roots)}); "
                "pass a directory inside one of them."
            )
        if not target.is_dir():
            raise not_found(f"{path!r} is not an existing directory; pass a project directory.")

        def allowed(file: Path) -> bool:  # manifests, `.git` and HEAD are read only inside the roots
            real = os.path.realpath(file)
            return guard.contains(real) and not guard.is_denied(real)

        info = context_info.project_info(target, allowed)
        git = info.pop("git")
        return ProjectInfoResult(**info, git=GitInfo(**git) if git else None)

    async def plan_actions(
        self, params: PlanActionsInput, scope: AgentScope, ctx: ToolContext | None
    ) -> PlanActionsResult:
        from mcp_sections.shared.agents.runtime import PlanRequest

        self.check_sections_in_scope(params.sections, scope)
        request = PlanRequest(
            goal=params.goal,
            sections=params.sections,
            actions=[(action.description, action.complexity) for action in params.actions or []],
            strategy=params.strategy,
        )
        outcome = await self.agents.plan_actions(request, scope.depth, ctx, parent=scope.agent_id)
        return PlanActionsResult.model_validate(
            {
                "success": outcome.success,
                "report": outcome.report,
                "metrics": outcome.metrics,
                "actions": outcome.actions,
            }
        )

    def sections_of(self, scope: AgentScope) -> list[str]:
        """The sections whose tools a caller has: every section for the client; for a sub-agent, those it was
        given (sections that run agents themselves are never among them)."""
        if scope.tool_names is None:
            return [section for section in self.catalog if section not in AGENT_SECTIONS]
        names = set(scope.tool_names)
        return [
            entry.id
            for entry in self.catalog.values()
            if entry.id not in AGENT_SECTIONS and names & set(entry.declared_tools or [])
        ]

    def check_sections_in_scope(self, requested: list[str], scope: AgentScope) -> None:
        """The one rule of nesting: a sub-agent may hand its own sub-agents only sections it has itself."""
        if scope.is_client:
            return
        own = self.sections_of(scope)
        outside = [section for section in requested if section not in own]
        if outside:
            raise permission_denied(
                f"a sub-agent cannot give its sub-agents sections it does not have: {', '.join(outside)}; "
                f"yours are: {', '.join(own) or 'none'}."
            )

    # -- what the agent runtime needs ----------------------------------------------------------------

    async def agent_routes(self, section_ids: list[str]) -> dict[str, Route]:
        """The tools of the requested sections, by the name the sub-agent sees (third-party ones started).

        Sections that run agents of their own (orchestration) are never handed to a sub-agent: their
        sub-agents would start again at depth 0, beyond this one's limits.
        """
        for section_id in section_ids:
            if section_id in AGENT_SECTIONS:
                raise permission_denied(
                    f"section {section_id!r} runs sub-agents itself and cannot be given to a sub-agent; "
                    "use plan_actions' own nesting instead."
                )
            await self.definitions(self.entry(section_id))
        return self.route_for_agent(section_ids)

    def gateway_tool_definition(self, name: str) -> dict[str, Any]:
        return dict(_own_tool_definition(name))

    def agent_host_tools(self, depth: int) -> list[str]:
        """The gateway tools a sub-agent at `depth` gets: plan_actions only while it may delegate deeper."""
        return [name for name in SUBAGENT_GATEWAY_TOOLS if name != "plan_actions" or depth < self.config.max_depth]

    def agent_scope(self, depth: int, agent_id: str, tool_names: tuple[str, ...]) -> AgentScope:
        return AgentScope(depth=depth, agent_id=agent_id, tool_names=tool_names)

    # -- published tool definitions --------------------------------------------------------------------

    def route_for_agent(self, section_ids: list[str]) -> dict[str, Route]:
        """The section tools a sub-agent gets, by published name (same collision rule as --expose)."""
        routes: dict[str, Route] = {}
        for entry in self.catalog.values():
            if entry.id not in section_ids:
                continue
            for definition in entry.definitions(self.settings) or []:
                name = self.published_name(entry, definition["name"], taken=routes)
                routes[name] = Route(name=name, section=entry.id, tool=definition["name"], definition=definition)
        return routes


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
