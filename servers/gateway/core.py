"""The gateway: the section pool, its own tools, the agent runtime for plan_actions, and the gate every call passes.

`pool.py` knows and reaches the sections, `gate.py` decides and records every call (the client's or a sub-agent's),
`server.py` publishes the tools; this module holds the gateway's own tools and what the agent runtime asks of its
host (`shared.agents.runtime.ToolHost`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
from mcp_types import CallToolResult

from mcp_sections.servers.pool import misplaced
from mcp_sections.servers.pool.catalog import SectionEntry
from mcp_sections.servers.pool.gate import FORWARD_TOOL
from mcp_sections.servers.pool.host import AgentHost
from mcp_sections.servers.pool.hosted import HostedSection
from mcp_sections.servers.pool.launchers import Launcher
from mcp_sections.servers.pool.pool import Route, SectionPool
from mcp_sections.servers.pool.settings import GatewaySettings
from mcp_sections.shared.agents.runtime import AgentRuntime
from mcp_sections.shared.agents.scope import CLIENT_SCOPE, AgentLimits, AgentScope, ConfigFile
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec, spec_of
from mcp_sections.shared.ground.about import package_version
from mcp_sections.shared.ground.errors import ToolFailure, not_found, permission_denied
from mcp_sections.shared.serving.approval import APPROVAL_SECONDS
from mcp_sections.shared.serving.question_board import QuestionBoard
from mcp_sections.shared.settings.config import Settings

from . import context as context_info
from .models import (
    ApprovalInfo,
    ConfigFileInfo,
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
from .tool_search import ToolSearch

logger = logging.getLogger("mcp_sections.gateway")

GATEWAY_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (spec_of(f) for f in GATEWAY_TOOLS)}
SUBAGENT_GATEWAY_TOOLS = ("list_tool_sections", "plan_actions")
__all__ = ["FORWARD_TOOL", "GATEWAY_SPECS", "Gateway", "Route"]


class Gateway:
    def __init__(self, settings: Settings, gateway: GatewaySettings) -> None:
        settings.own_state().prepare(settings.roots)
        self.settings = settings
        self.config = gateway
        self.limits = AgentLimits.of(gateway, config_file=ConfigFile.of(settings.config_file))
        self.pool = SectionPool(settings, gateway, reserved_names=GATEWAY_SPECS, hosted=self._hosted)
        self.host = AgentHost(
            self,
            settings,
            self.pool,
            GATEWAY_SPECS,
            self.limits,
            audit_name="gateway",
            offered=SUBAGENT_GATEWAY_TOOLS,
            delegating=frozenset({"plan_actions"}),
            untrusted_own={"plan_actions": "sub-agent report", "get_project_info": "project files"},
        )
        self.tool_search = ToolSearch(self.pool.catalog, settings, shows=self.pool.shows, own=self.own_tool_names)
        self.agents = self.host.runtime
        self.agent_runtimes: dict[str, AgentRuntime] = {"plan_actions": self.agents}  # + hosted sections' runtimes
        self.started = time.monotonic()
        self.questions = QuestionBoard(APPROVAL_SECONDS)  # approval questions, once a status page shows them

    def _hosted(self, entry: SectionEntry) -> Launcher:
        return HostedSection(entry, self.settings, self.config, self.host, self.agent_runtimes)

    @property
    def catalog(self) -> dict[str, SectionEntry]:
        return self.pool.catalog

    @property
    def exposed(self) -> dict[str, Route]:
        return self.pool.exposed

    # -- lifetime ----------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Run the pool (every section connection lives in its task group); stop them all on the way out."""
        async with self.pool.running():
            yield self

    def prepare_exposed(self) -> None:
        """Routes of the exposed sections whose tools are known before anything starts (built-ins)."""
        self.pool.prepare_exposed()

    async def start_exposed(self) -> dict[str, Route]:
        """Inside `running()`, before serving: start the exposed third-party sections; the routes added."""
        return await self.pool.start_exposed()

    # -- dispatch ----------------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        ctx: ToolContext | None,
        scope: AgentScope = CLIENT_SCOPE,
        failure: ToolFailure | None = None,
    ) -> CallToolResult:
        """Every call of a gateway-published tool, the client's or a sub-agent's: through the gate (`failure`: refused
        before it could run, by the user's answer; the gate records it)."""
        return await self.host.dispatch(name, arguments, ctx, scope, failure)

    # -- the gateway's own tools ---------------------------------------------------------------------

    def section_info(self, entry: SectionEntry) -> SectionInfo:
        state, last_error = self.pool.state_of(entry.id)
        tools = entry.declared_tools
        if tools is not None and self.pool.filters.active:  # hidden tools are not shown (`pool/filters.py`)
            tools = [tool for tool in tools if self.pool.shows(entry.id, tool)]
        failed = entry.load_error or (last_error if state in ("failed", "stopped") else None)
        return SectionInfo(
            id=entry.id,
            name=entry.name,
            description=entry.description,
            tools=tools or [],
            tool_count=len(tools or []),
            tools_known=tools is not None,
            state="failed" if entry.load_error else state,  # type: ignore[arg-type]
            kind=entry.kind,
            exposed=entry.id in self.config.expose,
            error=failed,
        )

    def own_tool_names(self) -> list[str]:
        """The gateway's own tools in the client's tools/list (plan_actions only when sub-agents may run)."""
        return [name for name in GATEWAY_SPECS if name != "plan_actions" or self.config.max_depth > 0]

    def off_tools(self) -> dict[str, str]:
        """The gateway's own tools switched off by its settings → why, and how to switch them on."""
        if self.config.max_depth > 0:
            return {}
        return {"plan_actions": misplaced.depth_zero("plan_actions", self.settings)}

    def always_available(self, scope: AgentScope) -> list[str]:
        if scope.is_client:
            return self.own_tool_names()
        return [name for name in SUBAGENT_GATEWAY_TOOLS if name in scope.host_tools]

    async def list_sections(self, scope: AgentScope) -> ListSectionsResult:
        await self.pool.load_declarations()
        return ListSectionsResult(
            sections=[self.section_info(entry) for entry in self.catalog.values()],
            always_available=self.always_available(scope),
        )

    async def describe_section(self, section_id: str, tools: list[str] | None = None) -> DescribeSectionResult:
        """Its tools' definitions (those of `tools` only, in full in the text, when given)."""
        entry = self.pool.entry(section_id)
        if not entry.loaded:
            await anyio.to_thread.run_sync(lambda: entry.load_error)
        definitions = self.pool.filters.shown_definitions(entry.id, await self.pool.definitions(entry))
        if tools is None:
            return DescribeSectionResult(section=self.section_info(entry), tools=definitions)
        names = [definition["name"] for definition in definitions]
        for tool in tools:
            if tool not in names:
                having = await self.pool.tool_sections()
                raise not_found(misplaced.in_section(having, entry.id, tool, names, self.own_tool_names()))
        wanted = [definition for definition in definitions if definition["name"] in tools]
        return DescribeSectionResult(section=self.section_info(entry), tools=wanted).in_full()

    async def find_tools(self, params: FindToolsInput) -> FindToolsResult:
        for section_id in params.sections or []:
            self.pool.entry(section_id)  # NOT_FOUND names the known sections
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
        config_file = ConfigFile.of(self.settings.config_file)  # read again: it may have been created since
        return EnvironmentInfoResult(
            os=context_info.os_info(),
            python=context_info.python_info(),
            gateway_version=package_version(),
            sections=[
                SectionStatus(
                    id=entry.id,
                    state="failed" if entry.loaded and entry.load_error else self.pool.state_of(entry.id)[0],  # type: ignore[arg-type]
                    exposed=entry.id in self.config.expose,
                )
                for entry in self.catalog.values()
            ],
            model=self.model_info(ctx),
            max_depth=self.config.max_depth,
            max_subagents=self.config.max_subagents,
            data_dir=str(self.settings.data_dir),
            config_file=ConfigFileInfo(path=str(config_file.path), exists=config_file.exists),
            approval=ApprovalInfo(
                mode=self.settings.approval,
                asked_at=self.questions.url if self.settings.approval != "off" else None,
                timeout_seconds=self.questions.timeout_seconds,
            ),
        )

    def project_info(self, path: str | None) -> ProjectInfoResult:
        from mcp_sections.shared.confinement.guards.paths import PathGuard

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
        info = context_info.project_info(target, guard.allows)  # manifests, `.git` and HEAD: inside the roots only
        git = info.pop("git")
        return ProjectInfoResult(**info, git=GitInfo(**git) if git else None)

    async def plan_actions(
        self, params: PlanActionsInput, scope: AgentScope, ctx: ToolContext | None
    ) -> PlanActionsResult:
        from mcp_sections.shared.agents.runtime import PlanRequest

        self.pool.check_sections_in_scope(params.sections, scope)
        request = PlanRequest(
            goal=params.goal,
            sections=params.sections,
            actions=[(action.description, action.complexity) for action in params.actions or []],
            strategy=params.strategy,
        )
        outcome = await self.agents.plan_actions(request, scope, ctx)
        return PlanActionsResult.model_validate(
            {
                "success": outcome.success,
                "report": outcome.report,
                "metrics": outcome.metrics,
                "actions": outcome.actions,
                "model": outcome.model,
            }
        )


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
