"""The gateway's MCP server: its own tools, then the exposed sections' tools, in a fixed order.

The tool list is computed once per configuration and never changes at run time, so the server serves no
`subscriptions/listen` and advertises `tools.listChanged: false` in both protocol eras. Long calls may run as MCP
tasks, and `resources/read` reaches the section that holds a result's bulky parts (`tasks.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, ToolAnnotations

from mcp_sections.servers.pool import misplaced
from mcp_sections.servers.pool.settings import GatewaySettings
from mcp_sections.shared.framework.resources import ServeResults, serve_as
from mcp_sections.shared.framework.tools import ToolContext
from mcp_sections.shared.ground.about import package_version
from mcp_sections.shared.ground.errors import ToolFailure, not_found
from mcp_sections.shared.serving.approval import (
    Approvals,
    Effect,
    describe_arguments,
    exposed_spec,
    needs_approval_by_hints,
    tool_named,
)
from mcp_sections.shared.serving.audit import audit_log
from mcp_sections.shared.serving.calls import failure_result, parse_arguments
from mcp_sections.shared.serving.client_log import serve_logging
from mcp_sections.shared.serving.completions import serve_completions
from mcp_sections.shared.serving.sdk_tools import ForgetRootsOnChange, add_built_tools, raw_tool, spec_tool
from mcp_sections.shared.serving.server import UnknownToolAsNotFound
from mcp_sections.shared.serving.tasks import TaskCalls, TasksExtension, TaskStore
from mcp_sections.shared.settings.config import Settings

from .core import FORWARD_TOOL, GATEWAY_SPECS, Gateway, Route
from .resources import GatewayResources
from .tasks import GatewayTasks, section_resources

INSTRUCTIONS = (
    "Tools are grouped in sections. Call find_tools with your need in plain words to get the best tools with "
    "their schemas, or list_tool_sections to see every section and describe_section for one section's tool "
    "schemas; then call_section_tool runs one tool, or plan_actions gives a multi-step task to a sub-agent with "
    "the sections it needs. Context tools (get_working_directory, get_environment_info, get_project_info) are "
    "always available."
)


def build_gateway_server(settings: Settings, config: GatewaySettings) -> tuple[MCPServer, Gateway]:
    gateway = Gateway(settings, config)
    gateway.prepare_exposed()
    tasks = TaskStore(settings.task_ttl_seconds, settings.max_tasks_per_client)
    audit = audit_log(settings.data_dir / "audit", "gateway.approvals")
    approvals = Approvals(settings.approval, audit, gateway.questions)  # the status page answers where no elicitation
    serve_as("gateway")

    known_names = {*gateway.own_tool_names(), *gateway.exposed}

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        async with gateway.running(), tasks.running():  # tasks stop before the sections they forward to
            # exposed third-party sections start now, before the first request, and stay up for the calls to come
            added = await gateway.start_exposed()
            add_built_tools(server, [_exposed_tool(gateway, approvals, route) for route in added.values()])
            known_names.update(added)
            yield

    tools = []
    for name in gateway.own_tool_names():
        spec, dispatch = GATEWAY_SPECS[name], _dispatch(gateway, name)
        plain = spec_tool(spec, dispatch, lean=True, publish_output=name != FORWARD_TOOL)
        target = partial(_forwarded, gateway) if name == FORWARD_TOOL else None
        wording = _plan_wording if name == "plan_actions" else None
        preflight = partial(_forward_preflight, gateway) if name == FORWARD_TOOL else None
        tools.append(approvals.tool(spec, plain, dispatch, target=target, wording=wording, preflight=preflight))
    tools += [_exposed_tool(gateway, approvals, route) for route in gateway.exposed.values()]
    server = MCPServer(
        name="mcp-sections-gateway",
        title="MCP Sections gateway",
        description="Lists tool sections, forwards calls to them and runs sub-agents over them.",
        instructions=INSTRUCTIONS,
        version=package_version(),
        tools=tools,
        lifespan=lifespan,
        log_level=settings.log_level,
        subscriptions=False,
        extensions=[TasksExtension(tasks)],
    )
    server.middleware.append(PointToSections(gateway, known_names))
    server.middleware.append(UnknownToolAsNotFound(known_names))
    server.middleware.append(ForgetRootsOnChange())
    resources = GatewayResources(gateway)
    server.middleware.append(resources)  # its templates' URIs, before ServeResults takes every mcp-sections:// URI
    server.middleware.append(ServeResults(section_resources(gateway)))
    serve_completions(server, resources.complete)
    serve_logging(server)  # before TaskCalls: a task's work logs to the client that started it
    approvals.serve(server)  # before TaskCalls too
    server.middleware.append(TaskCalls(tasks, GatewayTasks(gateway), approvals.asks))
    return server, gateway


class PointToSections:
    """A call of a name the gateway does not publish: NOT_FOUND naming the section that has that tool and the call
    that reaches it, the setting that switched it off (plan_actions at max_depth 0), or the closest names to a
    mistyped one (`servers/pool/misplaced.py`); any other unknown name goes on to `UnknownToolAsNotFound`."""

    def __init__(self, gateway: Gateway, known: set[str]) -> None:
        self._gateway = gateway
        self._known = known

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) == "tools/call":
            name = (ctx.params or {}).get("name")
            if isinstance(name, str) and name not in self._known:
                having = await self._gateway.pool.tool_sections()
                own, off = self._gateway.own_tool_names(), self._gateway.off_tools()
                message = misplaced.at_the_gateway(having, name, own, off)
                if message is not None:
                    failure = failure_result(not_found(message))
                    return failure.model_dump(mode="json", by_alias=True, exclude_none=True)
        return await call_next(ctx)


def _forwarded(gateway: Gateway, params: Any) -> Effect:
    """What call_section_tool runs: the target tool, whose annotations for this call decide (unknown ones: it asks)."""
    hints = gateway.pool.call_annotations(params.section, params.tool, params.arguments)
    spec = GATEWAY_SPECS[FORWARD_TOOL]
    wording = f"Section {params.section}, tool {params.tool}. {describe_arguments(params.arguments)}"
    return Effect(hints, tool_named(spec.name, spec.title), wording)


async def _forward_preflight(gateway: Gateway, arguments: dict[str, Any]) -> ToolFailure | None:
    """call_section_tool's preflight: the target section's own, asked of it (`shared.serving.preflight`)."""
    try:
        params: Any = parse_arguments(GATEWAY_SPECS[FORWARD_TOOL].input_model, arguments)
    except ToolFailure:
        return None  # the gate answers it
    return await gateway.pool.preflight(params.section, params.tool, params.arguments)


def _plan_wording(params: Any) -> str:
    sections = ", ".join(params.sections)
    plan = {"goal": params.goal, "strategy": params.strategy}
    if params.actions:
        plan["actions"] = [action.description for action in params.actions]
    return f"A sub-agent with the sections {sections} would start. {describe_arguments(plan, limit=PLAN_CHARS)}"


PLAN_CHARS = 1500  # a goal or action longer than this is shown by its start, its length and "…"


def _dispatch(gateway: Gateway, name: str) -> Any:
    """The call of a published tool: through the gate, with the refusal decided before it (the user's, when asked)."""

    async def call(
        arguments: dict[str, Any], ctx: ToolContext, answer: Any = None, failure: ToolFailure | None = None
    ) -> CallToolResult:
        return await gateway.call(name, arguments, ctx, failure=failure)

    return call


def _exposed_tool(gateway: Gateway, approvals: Approvals, route: Route) -> Any:
    """A section tool listed directly: the same gate as call_section_tool, approval included."""
    definition = route.definition
    annotations = definition.get("annotations")
    dispatch = _dispatch(gateway, route.name)
    plain = raw_tool(
        name=route.name,
        title=definition.get("title") or route.name,
        description=definition.get("description") or "",
        input_schema=definition.get("inputSchema") or {"type": "object"},
        output_schema=definition.get("outputSchema"),
        annotations=ToolAnnotations.model_validate(annotations) if annotations else ToolAnnotations(),
        call=dispatch,
    )

    def target(params: Any) -> Effect:
        arguments = params.model_extra or {}
        hints = gateway.pool.call_annotations(route.section, route.tool, arguments) or annotations
        wording = f"Section {route.section}, tool {route.tool}. {describe_arguments(arguments)}"
        return Effect(hints, tool_named(route.name, definition.get("title")), wording)

    async def preflight(arguments: dict[str, Any]) -> ToolFailure | None:
        return await gateway.pool.preflight(route.section, route.tool, arguments)

    spec = exposed_spec(route.name, definition)
    per_call = target if needs_approval_by_hints(spec.annotations, "destructive") else None  # else: never asks
    return approvals.tool(spec, plain, dispatch, target=per_call, preflight=preflight)
