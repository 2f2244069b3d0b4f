"""The section pool: every section a host can reach, started on first use, and the validated forwarding of calls.

Both hosts of agents use it — the gateway, and the orchestration section when it is served on its own — so neither
imports the other: catalog (what sections exist, their definitions without a process), launchers (a subprocess, a
configured command or URL, in process, or hosted by the gateway), published names (a third-party tool whose name
collides becomes `<section>__<tool>`), the routes a grant of section ids gives, and `forward`, which checks the
arguments against the tool's inputSchema before the call goes to the section.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from mcp_types import CallToolResult

from mcp_sections.shared.agents.scope import AgentScope
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec
from mcp_sections.shared.ground.errors import ConfigError, ErrorCode, ToolFailure, not_found, permission_denied
from mcp_sections.shared.serving.calls import parse_arguments
from mcp_sections.shared.settings.config import Settings

from . import misplaced
from .catalog import SectionEntry, SectionTool, build_catalog
from .filters import ReadOnlyCalls, ToolFilter, read_only_calls, read_only_hint, shown_value
from .inprocess import InProcessLauncher, in_process_refusal
from .launchers import STARTUP_TIMEOUT_SECONDS, Launcher, SubprocessLauncher
from .settings import GatewaySettings

logger = logging.getLogger("mcp_sections.gateway.pool")

SHUTDOWN_GRACE_SECONDS = 10.0
HostedFactory = Callable[[SectionEntry], Launcher]


@dataclass(frozen=True)
class Route:
    """A tool name as published (by the gateway to its client, or to a sub-agent) → the section tool."""

    name: str
    section: str
    tool: str
    definition: dict[str, Any]


class SectionPool:
    """The sections of one host (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        config: GatewaySettings,
        reserved_names: Iterable[str] = (),
        hosted: HostedFactory | None = None,
    ) -> None:
        """`reserved_names`: the host's own tool names (a section tool of the same name is published prefixed);
        `hosted`: how to launch a section that runs agents inside this host (None: as any other section)."""
        self.settings = settings
        self.config = config
        self.catalog: dict[str, SectionEntry] = build_catalog(config)
        # the tools hidden everywhere (`filters.py`), knowing which built-in tools have calls that only read
        self.filters: ToolFilter = config.tool_filter().knowing(self.read_only_calls)
        self._read_only_calls: dict[tuple[str, str], ReadOnlyCalls | None] = {}
        self.own_names = tuple(reserved_names)  # the host's own tools, in its order
        self._reserved = frozenset(self.own_names)
        self._hosted = hosted
        self._launchers: dict[str, Launcher] = {}
        self._task_group: TaskGroup | None = None
        for section_id in config.in_process:
            entry = self.catalog.get(section_id)
            if entry is None:
                raise ConfigError(
                    f"cannot run unknown section {section_id!r} in process; known: {', '.join(self.catalog)}"
                )
            refusal = in_process_refusal(entry)
            if refusal is not None:
                raise ConfigError(f"section {section_id!r} cannot run in the gateway's process: {refusal}.")
        for section_id in config.expose:
            entry = self.catalog.get(section_id)
            if entry is None:
                raise ConfigError(f"cannot expose unknown section {section_id!r}; known: {', '.join(self.catalog)}")
            if entry.load_error:
                raise ConfigError(f"cannot expose section {section_id!r}: {entry.load_error}")
        self.exposed: dict[str, Route] = {}

    # -- launchers ---------------------------------------------------------------------------------------

    def launcher(self, section_id: str) -> Launcher:
        """The section's launcher, made on first use (deciding how a built-in runs loads its declaration)."""
        launcher = self._launchers.get(section_id)
        if launcher is None:
            entry = self.entry(section_id)
            if self._hosted is not None and entry.builtin and entry.external is None and entry.runs_agents:
                launcher = self._hosted(entry)
            elif entry.id in self.config.in_process:
                launcher = InProcessLauncher(entry, self.settings, self.config)
            else:
                launcher = SubprocessLauncher(entry, self.settings, self.config)
            if self._task_group is not None:
                launcher.attach(self._task_group)
            self._launchers[section_id] = launcher
        return launcher

    def state_of(self, section_id: str) -> tuple[str, str | None]:
        """(state, last error) of a section's launcher, without making one."""
        launcher = self._launchers.get(section_id)
        if launcher is None:
            return "not_started", None
        return launcher.state, launcher.last_error

    def running_since(self, section_id: str) -> float | None:
        """`time.monotonic()` when the section's running process (or in-process pipeline) started."""
        launcher = self._launchers.get(section_id)
        return launcher.running_since if launcher is not None else None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[SectionPool]:
        """Own the task group every section connection lives in; stop them all on the way out."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            for launcher in self._launchers.values():
                launcher.attach(task_group)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    for launcher in list(self._launchers.values()):
                        await launcher.stop()
                self._task_group = None
                task_group.cancel_scope.deadline = anyio.current_time() + SHUTDOWN_GRACE_SECONDS

    # -- what exists ---------------------------------------------------------------------------------------

    def entry(self, section_id: str) -> SectionEntry:
        entry = self.catalog.get(section_id)
        if entry is None:
            raise not_found(
                f"unknown section {section_id[:40]!r}; sections: {', '.join(self.catalog)} (see list_tool_sections)."
            )
        return entry

    async def load_declarations(self) -> None:
        """Import every built-in section's declaration (once; off the event loop): names, descriptions, tools."""
        if any(not entry.loaded for entry in self.catalog.values()):
            await anyio.to_thread.run_sync(lambda: [entry.load_error for entry in self.catalog.values()])

    async def tool_sections(self) -> dict[str, list[str]]:
        """Every tool name known without starting anything (the filters' hidden ones left out) → its sections."""
        await self.load_declarations()
        return misplaced.sections_having(self.catalog.values(), self.shows)

    async def definitions(self, entry: SectionEntry) -> list[dict[str, Any]]:
        if entry.load_error:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"section {entry.id!r} cannot be loaded: {entry.load_error}")
        definitions = entry.definitions(self.settings)
        if definitions is None:
            definitions = await self.launcher(entry.id).list_tools()
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

    def known_tool(self, section_id: str, tool: str) -> SectionTool | None:
        """A section's tool when its definition is known without starting anything (built-ins, listed sections)."""
        entry = self.catalog.get(section_id)
        if entry is None:
            return None
        known = entry.cached_tools or (entry.tools(self.settings) if entry.builtin else None)
        return known.get(tool) if known else None

    def declared_tool(self, section_id: str, tool: str, *, run_here: bool = True) -> ToolSpec | None:
        """A built-in section's own declaration of `tool` (its per-call annotations, its preflight); with `run_here`,
        only when this host runs the section itself (not a server configured by command or URL, which may be another
        version)."""
        entry = self.catalog.get(section_id)
        if entry is None or not entry.builtin or (run_here and entry.external is not None):
            return None
        declaration = entry.declaration
        return next((spec for spec in declaration.specs if spec.name == tool), None) if declaration else None

    def call_annotations(self, section_id: str, tool: str, arguments: dict[str, Any]) -> Any:
        """The annotations of one call (approval decides by them): a built-in tool's per call
        (`ToolSpec.annotations_for`: fetch_web_page reads unless it ingests), else as listed (None: unknown)."""
        known = self.known_tool(section_id, tool)
        listed = known.definition.get("annotations") if known is not None else None
        spec = self.declared_tool(section_id, tool)
        if spec is None or spec.annotations_of is None:
            return listed
        try:
            return spec.annotations_for(parse_arguments(spec.input_model, arguments, tool))
        except ToolFailure:
            return listed  # the call fails on its arguments, after the question its listed annotations ask

    async def preflight(self, section_id: str, tool: str, arguments: dict[str, Any]) -> ToolFailure | None:
        """What is refused of this call before the caller's person is asked to approve it: the tool filters'
        refusal (`check_shown`), then what a built-in section's preflight refuses (`shared.serving.preflight`), asked
        of the section; None: nothing, or the tool has no preflight. A built-in section reached by command or URL (a
        container) is asked too: one that does not know the request refuses nothing."""
        try:
            await self.check_shown(section_id, tool, arguments)
        except ToolFailure as refused:
            return refused
        spec = self.declared_tool(section_id, tool, run_here=False)
        if spec is None or spec.preflight is None:
            return None
        return await self.launcher(section_id).preflight(tool, arguments)

    # -- published names and routes ---------------------------------------------------------------------------

    def prepare_exposed(self) -> None:
        """Routes of the exposed sections whose tools are known without starting anything (built-ins, from their
        declarations). An exposed third-party section is added by `start_exposed`, once the pool runs."""
        self.exposed = self.routes(self.config.expose)

    async def start_exposed(self) -> dict[str, Route]:
        """Start the exposed third-party sections whose tools are not known yet, all at once (the start waits for
        the slowest, not for their sum), and add their tools to `exposed`; returns the routes added.

        Run inside `running()`, before the host serves: tools/list never changes afterwards. A section started
        here keeps running for the calls that follow; one that cannot start is logged and left out."""
        missing = [
            entry
            for entry in self.catalog.values()
            if entry.id in self.config.expose and entry.definitions(self.settings) is None
        ]
        if not missing:  # none, or started by an earlier connection (each in-memory client enters the lifespan)
            return {}

        async def start(entry: SectionEntry) -> None:
            try:
                with anyio.fail_after(STARTUP_TIMEOUT_SECONDS):
                    await self.definitions(entry)
            except Exception as exc:
                logger.error("exposed section %s is unavailable, its tools are not listed: %r", entry.id, exc)

        async with anyio.create_task_group() as group:
            for entry in missing:
                group.start_soon(start, entry)
        known = self.exposed
        self.exposed = self.routes(self.config.expose)
        return {name: route for name, route in self.exposed.items() if name not in known}

    def published_name(self, entry: SectionEntry, tool: str, taken: dict[str, Any]) -> str:
        """A section tool's name where it meets other names: collisions become `<section>__<tool>`."""
        reserved = set(self._reserved) | set(taken)
        if entry.declaration is not None:  # built-in names are unique across the suite
            return f"{entry.id}__{tool}" if tool in reserved else tool
        for other in self.catalog.values():
            if other.declaration is not None:
                reserved.update(other.declared_tools or [])
        return f"{entry.id}__{tool}" if tool in reserved else tool

    def routes(self, section_ids: Iterable[str]) -> dict[str, Route]:
        """The tools of these sections (whose definitions are known), by published name."""
        wanted = set(section_ids)
        routes: dict[str, Route] = {}
        for entry in self.catalog.values():
            if entry.id not in wanted:
                continue
            for definition in self.filters.shown_definitions(entry.id, entry.definitions(self.settings) or []):
                name = self.published_name(entry, definition["name"], taken=routes)
                routes[name] = Route(name=name, section=entry.id, tool=definition["name"], definition=definition)
        return routes

    async def agent_routes(self, section_ids: list[str]) -> dict[str, Route]:
        """The tools a sub-agent given these sections gets (third-party ones started to list them).

        Sections that run agents of their own (orchestration) are never handed to a sub-agent: their sub-agents
        would start again at depth 0, beyond this one's limits.
        """
        for section_id in section_ids:
            if self.entry(section_id).runs_agents:
                raise permission_denied(
                    f"section {section_id!r} runs sub-agents itself and cannot be given to a sub-agent; "
                    "use plan_actions' own nesting instead."
                )
            await self.definitions(self.entry(section_id))
        return self.routes(section_ids)

    # -- filters ----------------------------------------------------------------------------------------------

    def shows(self, section_id: str, tool: str) -> bool:
        """Whether the filters show this tool, by what is known of it without starting anything."""
        if not self.filters.active:
            return True
        known = self.known_tool(section_id, tool)
        return self.filters.shows(section_id, tool, known.definition.get("annotations") if known else None)

    def read_only_calls(self, section_id: str, tool: str) -> ReadOnlyCalls | None:
        """Whether a tool listed as one that may write has calls that only read, by the per-call annotations of its
        declaration (`filters.read_only_calls`; a built-in this host runs, as `call_annotations` reads them)."""
        key = (section_id, tool)
        if key not in self._read_only_calls:
            spec = self.declared_tool(section_id, tool)
            self._read_only_calls[key] = read_only_calls(spec) if spec is not None else None
        return self._read_only_calls[key]

    async def check_shown(self, section_id: str, tool: str, arguments: dict[str, Any]) -> None:
        """PERMISSION_DENIED naming the setting when the filters refuse this call (before anything runs or asks).
        A read-only rule decides by the call's annotations, as approval does (`call_annotations`): a third-party
        section is listed first."""
        filters = self.filters
        if not filters.active:
            return
        listed = annotations = None
        drop: tuple[str, ...] = ()
        if filters.needs_annotations:
            known = (await self.section_tools(self.entry(section_id))).get(tool)
            if known is None:
                return  # forward() answers NOT_FOUND with the section's tools
            listed = known.definition.get("annotations")
            annotations = self.call_annotations(section_id, tool, arguments)
            if not read_only_hint(annotations) and self.read_only_calls(section_id, tool) is not None:
                drop = self._writing_arguments(section_id, tool, arguments)
        refusal = filters.refusal(section_id, tool, annotations, drop)
        if refusal is None:
            return
        hidden = (
            " Hidden tools cannot be called; use another tool." if not filters.shows(section_id, tool, listed) else ""
        )
        raise permission_denied(f"{refusal}.{hidden}")

    def _writing_arguments(self, section_id: str, tool: str, arguments: dict[str, Any]) -> tuple[str, ...]:
        """The arguments of a call that may write without which (each alone) it would only read, as `name=value`."""
        return tuple(
            f"{name}={shown_value(value)}"
            for name, value in arguments.items()
            if read_only_hint(
                self.call_annotations(section_id, tool, {k: v for k, v in arguments.items() if k != name})
            )
        )

    # -- grants -----------------------------------------------------------------------------------------------

    def sections_of(self, scope: AgentScope) -> list[str]:
        """The sections a caller has, by id: every section but those that run agents for the client; for a
        sub-agent, those it was given."""
        if scope.sections is None:
            return [entry.id for entry in self.catalog.values() if not entry.runs_agents]
        return [section for section in self.catalog if section in scope.sections]

    def check_sections_in_scope(self, requested: list[str], scope: AgentScope) -> None:
        """The one rule of nesting: a sub-agent may hand its own sub-agents only sections it has itself."""
        if scope.sections is None:
            return
        outside = [section for section in requested if section not in scope.sections]
        if outside:
            own = self.sections_of(scope)
            raise permission_denied(
                f"a sub-agent cannot give its sub-agents sections it does not have: {', '.join(outside)}; "
                f"yours are: {', '.join(own) or 'none'}."
            )

    # -- calls ------------------------------------------------------------------------------------------------

    async def forward(
        self, section_id: str, tool: str, arguments: dict[str, Any], ctx: ToolContext | None, caller: AgentScope
    ) -> CallToolResult:
        """Validate against the section tool's inputSchema, then call it for `caller` (whose depth and agent id the
        section's audit log records). Raises ToolFailure; the section's own result comes back unchanged."""
        entry = self.entry(section_id)
        launcher = self.launcher(section_id)
        if entry.cached_tools is None:  # first call: the process starts while its checkers are built
            launcher.boot()
        tools = await self.section_tools(entry)
        section_tool = tools.get(tool)
        if section_tool is None:
            raise not_found(
                misplaced.in_section(await self.tool_sections(), section_id, tool, list(tools), self.own_names)
            )
        checked = section_tool.checker().check(arguments)
        progress = ctx.report_progress if ctx is not None else None
        read_only = read_only_hint(self.call_annotations(section_id, tool, checked))  # sent again if its process dies
        return await launcher.call_tool(tool, checked, progress, read_only, caller)
